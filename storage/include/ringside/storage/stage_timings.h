// storage/include/ringside/storage/stage_timings.h — where a merge's time goes, on request.
//
// With RINGSIDE_TIMINGS set (non-empty, not "0"), each stage of `ringside merge` / `record`'s merge
// (probe, copy, meta + indexes, clock alignment, steps, the summary, ...) prints one line to
// stderr when it ends: `ringside: timing <stage> <wall> s wall, <cpu> s cpu, peak RSS <n> MiB`
// (the process's peak so far); so do a reader's
// open and transfer lanes and the analysis's passes (`report`, `diff`, ...). CPU is the process's,
// all threads (a stage on a thread of its own may give its thread's). Without it, nothing
// is measured or printed. Only for finding where time goes (docs/bench.md); not a stable format.
// A stage repeated per input (a reader's open, once per rank file for `merge`'s run-id pass) is
// folded into one line while a StageTally of its name is alive: `<stage> xN`, the sums.
#pragma once

#include <string_view>

namespace ringside::storage {

// True when RINGSIDE_TIMINGS asks for stage timings (read once).
bool stageTimingsOn();

// Times one stage from its construction to stop() (or its destruction), if timings are on.
class StageTimer {
 public:
  // Whose CPU time the line gives: the process's (all threads), or only the calling thread's
  // (a stage that runs on a thread of its own beside others).
  enum Cpu { kProcessCpu, kThreadCpu };
  explicit StageTimer(std::string_view stage, Cpu cpu = kProcessCpu);
  ~StageTimer() { stop(); }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  // Prints the stage's line (once); later calls do nothing.
  void stop();

 private:
  char stage_[64] = {};
  bool on_ = false;
  Cpu cpu_ = kProcessCpu;
  double wall0_ = 0, cpu0_ = 0;
};

// What a StageTally summed: for work spread over threads, whose tallies end up in one line.
struct StageSums {
  long count = 0;
  double wall = 0, cpu = 0;
};

// While alive, the StageTimers of `stage` on this thread add to it instead of printing a line
// each; it prints one line for them all when destroyed (none when no timer ran, or timings are
// off), named `label` (default: the stage) and its count. One tally per thread at a time (an
// inner one is ignored). With `into`, it prints nothing but leaves its sums there, for the
// thread that started this one to add() to its own line once it has joined it.
class StageTally {
 public:
  explicit StageTally(std::string_view stage, std::string_view label = {},
                      StageSums* into = nullptr);
  ~StageTally();
  StageTally(const StageTally&) = delete;
  StageTally& operator=(const StageTally&) = delete;
  // Adds `sums` (another thread's, of `stage`) to this thread's tally of `stage`, or prints them
  // as a line of their own when this thread has none.
  static void add(std::string_view stage, const StageSums& sums);

 private:
  friend class StageTimer;
  char stage_[64] = {};
  char label_[64] = {};
  bool active_ = false;
  StageSums* into_ = nullptr;
  long count_ = 0;
  double wall_ = 0, cpu_ = 0;
};

}  // namespace ringside::storage
