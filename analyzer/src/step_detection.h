// analyzer/step_detection.h — finding training steps in the calls of one communicator
// (docs/steps.md): the period of the sequence of (op, bytes) keys anchored on the gradient
// all-reduce, the setup calls before it, earlier steps that moved the same bytes differently
// (DDP's first, unbucketed iteration), and the calls left out (evaluation passes, a tail).
// Pure functions on plain values: the analyze() stage (analysis_steps.cpp) and detectSteps()
// (for merge) both use them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::analyzer::detail {

// One call (instance) of a communicator, in seq order.
struct SeqCall {
  int64_t seq = 0;
  int32_t op = 0;           // interned (op, library, algorithm)
  bool allreduce = false;
  int64_t bytes = 0;
  // On one rank (the lowest that recorded it): entry and return. A training loop computes on
  // every rank between steps; across ranks a late rank's compute hides the others'.
  int32_t rank = -1;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// Steps as ranges of indexes into the calls: [first, last], in order.
struct DetectedSteps {
  struct Range {
    size_t first = 0, last = 0;
    bool complete = true;
  };
  std::vector<Range> steps;  // empty: none found (see note)
  int64_t calls_per_step = 0;
  int64_t setup_calls = 0;   // calls before the first step
  int64_t covered = 0;       // calls inside steps
  // How sure: the share of the calls after the setup that fall inside steps, 0..1 (1: every
  // call after the setup is in a step that repeats the step's calls exactly).
  double confidence = 0;
  std::vector<size_t> left_out;  // indexes of calls after the first step in no step
  std::string note;          // why none were found
};

// The steps of one communicator's calls (sorted by seq). Linear in calls, times the number of
// anchor calls per step tried (at most kMaxAnchorsPerStep, fewer on long traces).
DetectedSteps detectPeriodicSteps(const std::vector<SeqCall>& calls);

}  // namespace ringside::analyzer::detail
