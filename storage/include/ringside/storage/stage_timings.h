// storage/include/ringside/storage/stage_timings.h — where a merge's time goes, on request.
//
// With RINGSIDE_TIMINGS set (non-empty, not "0"), each stage of `ringside merge` / `record`'s merge
// (probe, copy, meta + indexes, clock alignment, steps, the summary, ...) prints one line to
// stderr when it ends: `ringside: timing <stage> <wall> s wall, <cpu> s cpu, peak RSS <n> MiB`
// (the process's peak so far); so do a reader's
// open and transfer lanes and the analysis's passes (`report`, `diff`, ...). CPU is the process's,
// all threads. Without it, nothing
// is measured or printed. Only for finding where time goes (docs/bench.md); not a stable format.
#pragma once

#include <string_view>

namespace ringside::storage {

// True when RINGSIDE_TIMINGS asks for stage timings (read once).
bool stageTimingsOn();

// Times one stage from its construction to stop() (or its destruction), if timings are on.
class StageTimer {
 public:
  explicit StageTimer(std::string_view stage);
  ~StageTimer() { stop(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  // Prints the stage's line (once); later calls do nothing.
  void stop();

 private:
  char stage_[64] = {};
  bool on_ = false;
  double wall0_ = 0, cpu0_ = 0;
};

}  // namespace ringside::storage
