// align/src/side_runs.h — the clock fit's message sides held compactly until they are paired.
//
// The fit pairs the k-th send of each (src, dst, slot) with its k-th receive (pairSides), which
// needs every side between domains at once: 6.55 M at 16,384 ranks, 262 MB as 40-byte Sides
// (docs/bench.md, "16,384 ranks end to end"). A SideRuns keeps them as sorted runs instead, each
// delta- and varint-encoded (about 8 bytes a side), and gives them back merged into the one total
// order pairSides sorts by: the sides, hence the messages and the model, are the same.
//
// Not thread-safe: one thread adds, then one thread (perhaps another, after a join) pairs.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <vector>

namespace ringside::align::detail {

// One side of a message between two domains, as the fit pairs them.
struct Side {
  int32_t src, dst;
  int64_t slot;
  int64_t bytes;
  bool recv;
  int64_t t;  // send: posted; receive: completed
};

// The total order sides are paired in (bytes last): sides read in any order (the merged trace's,
// or its inputs' one after another) pair the same.
bool sideBefore(const Side& x, const Side& y);

class SideRuns {
 public:
  // Sides of one run are gathered here, then sorted and encoded by endRun (at kRun sides, or
  // when the caller ends a run: one per input of a merge, so that an input can be left out).
  static constexpr size_t kRun = size_t{1} << 16;
  void add(const Side& side) {
    pending_.push_back(side);
    if (pending_.size() == kRun) endRun();
  }
  void endRun();
  size_t runs() const { return runs_.size(); }
  // Bytes held by the encoded runs (not counting the pending ones).
  size_t encodedBytes() const { return encoded_; }
  // Moves run `i` of `from` (ended) to the end of this.
  void takeRun(SideRuns& from, size_t i);
  // Calls visit(const Side&) for every side of every run in sideBefore order, freeing each run
  // once read; the runs are empty afterwards.
  template <typename Visit>
  void drain(Visit visit);

 private:
  struct Cursor {
    const uint8_t* at;
    const uint8_t* end;
    Side side;  // the current side
    size_t run;
    bool next();  // decodes the next side into `side`; false at the run's end
  };
  std::vector<Cursor> start();

  std::vector<Side> pending_;
  std::vector<uint8_t> scratch_;  // the run being encoded, copied into an exact-size buffer
  std::vector<std::vector<uint8_t>> runs_;
  size_t encoded_ = 0;
};

// Merges the runs with a binary heap of their cursors (a run's sides are sorted already).
template <typename Visit>
void SideRuns::drain(Visit visit) {
  endRun();
  std::vector<Cursor> heap = start();
  const auto later = [](const Cursor& a, const Cursor& b) { return sideBefore(b.side, a.side); };
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Cursor& c = heap.back();
    visit(static_cast<const Side&>(c.side));
    if (c.next()) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      std::vector<uint8_t>().swap(runs_[c.run]);
      heap.pop_back();
    }
  }
  runs_.clear();
  runs_.shrink_to_fit();
  encoded_ = 0;
}

}  // namespace ringside::align::detail
