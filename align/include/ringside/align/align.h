// align/align.h — one time line for a trace whose ranks ran on several hosts.
//
// Each host (more exactly each clock domain: the ranks that read one kernel clock) records on
// its own CLOCK_MONOTONIC, hours or days apart from the others'. fitClockModel() finds, per
// domain, the offset and drift that place its times on the reference domain's clock:
//   1. a coarse estimate from the wall-clock anchors (NTP keeps wall clocks within ~0.1-10 ms);
//   2. refined by the trace's own evidence: no rank leaves an all-reduce (all-gather,
//      reduce-scatter, all-to-all, barrier) before the last rank entered it; no rank leaves a
//      broadcast before its root entered; a reduce's root leaves after every rank entered; a
//      message is received after it was sent. Each bound limits the offset between two domains;
//      the mapping of each domain is the line (piecewise where the evidence shows a change) that
//      meets every bound with the most slack.
// The result says per domain how it was placed, the residual uncertainty (+/- ns) and how many
// bounds it could not meet. docs/clock-alignment.md has the method and its accuracy.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "ringside/storage/clock_model.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::align {

struct AlignOptions {
  bool use_calls = true;     // bounds from matched collective calls
  bool use_messages = true;  // bounds from matched sends and receives
  // Assumed error of a wall clock (NTP), for domains placed by their anchors alone.
  int64_t wall_clock_error_ns = 10'000'000;
};

struct AlignStats {
  int64_t instances = 0;  // matched calls that spanned 2+ domains
  int64_t messages = 0;   // matched messages between domains
  double seconds = 0;     // time the fit took, in all
  double read_calls_seconds = 0;     // of which reading the calls
  double read_messages_seconds = 0;  // and reading and pairing the messages
  // Whether the message sides came from the merge's inputs (InputSides), and if not, why.
  bool sides_from_inputs = false;
  std::string sides_not_from_inputs;
};

class InputSides;

// Fits the clock model of the trace `raw` (opened with TraceOpenOptions::raw_times). With
// `input_sides` (the merge that wrote the trace read its inputs' message sides beside the copy:
// input_sides.h), those sides are taken when they are provably the trace's, instead of reading
// every transfer row again; the model is the same either way.
bool fitClockModel(storage::TraceReader& raw, const AlignOptions& options,
                   storage::ClockModel* model, AlignStats* stats, std::string* error,
                   InputSides* input_sides = nullptr);

// Opens the merged trace at `path`, fits its clock model and stores it there
// (storage::storeClockModel). One-line *error on failure; the trace is unchanged then.
bool realignTrace(const std::string& path, const AlignOptions& options,
                  storage::ClockModel* model, AlignStats* stats, std::string* error,
                  InputSides* input_sides = nullptr);

// One line for people: "3 clock domains (hosts h0, h1, h2) aligned by 1,234 bounds; worst
// uncertainty +/-12 us; 0 bounds unmet". Empty for a single domain.
std::string describeModel(const storage::ClockModel& model);

}  // namespace ringside::align
