// align/input_sides.h — the clock fit's message sides, read from a merge's inputs beside the copy.
//
// fitClockModel reads every transfer row of a merged trace for the sides of messages between clock
// domains (8.4 M rows of a 1,024-rank trace: ~2.5 CPU-s), after the copy that wrote them, on the
// merging thread. An InputSides reads the same rows from the merge's inputs instead, on a thread
// of its own and one input open at a time, while the merge copies them (hooked in through
// storage::MergeOptions::on_copy_plan and on_input_copied: attachTo). The fit takes those sides
// only when they are provably the merged trace's: no input was still being written, every input
// copied was read whole with as many transfer rows as the copy wrote (inputs skipped by the copy
// are left out), and the clock domains found from the inputs' rank rows are the merged trace's.
// Otherwise (or when the thread could not read an input) the fit reads the merged trace as
// before. Either way the sides, hence the model, are the same: pairing does not depend on the
// order the sides come in. They are held as one compact sorted run per input (about 8 bytes a
// side), so that an input the copy skipped can be left out.
//
// Threads: every public function is called from one thread (the merging one); the reading runs
// on the object's own thread, which the fit (detail::takeInputSides) or the destructor joins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringside/storage/merge.h"

namespace ringside::align {

class InputSides;
namespace detail {
struct Domains;
class SideRuns;
bool takeInputSides(InputSides& from, const Domains& domains, SideRuns* sides, std::string* why);
}  // namespace detail

class InputSides {
 public:
  InputSides();
  // Stops the reading (between rows) and joins the thread.
  ~InputSides();
  InputSides(const InputSides&) = delete;
  InputSides& operator=(const InputSides&) = delete;

  // Sets options->on_copy_plan and on_input_copied to call start() and noteCopied() (after the
  // hooks the caller had set there). `this` must outlive the merge.
  void attachTo(storage::MergeOptions* options);
  // Starts reading `plan` (the inputs in copy order) on the thread; nothing is read when an input
  // is live (its writer may append rows the copy did not see).
  void start(const std::vector<storage::MergePlanInput>& plan);
  // Input `index` of the plan was copied (its `transfers` rows are in the trace) or skipped.
  void noteCopied(size_t index, bool copied, int64_t transfers);

 private:
  friend bool detail::takeInputSides(InputSides& from, const detail::Domains& domains,
                                     detail::SideRuns* sides, std::string* why);
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace ringside::align
