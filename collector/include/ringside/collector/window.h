// collector/window.h — what a bounded recording keeps (docs/recording.md).
//
// A recording window is the conjunction of up to three conditions, each of them "always" unless
// configured: a range of the job's steps (RINGSIDE_STEPS), a span of time from the collector's
// start (RINGSIDE_DELAY_S, RINGSIDE_DURATION_S) and a trigger file the user touches
// (RINGSIDE_TRIGGER_FILE). The detail level (RINGSIDE_DETAIL) says how messages are kept.
// Pure functions here (no state, no I/O): the collector applies them; the CLI validates its
// options with the same parsers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringside::collector {

enum class Detail : uint8_t {
  kAuto,      // every call; every message up to the message row budget, then per-link totals
  kCalls,     // calls only
  kLinks,     // calls plus one row per (call, peer, side): bytes and message count
  kMessages,  // every call and every message
};

// Default row budget of kAuto: every message for the first this many message rows of a rank.
inline constexpr uint64_t kDefaultMessageRows = 100000;
inline constexpr int64_t kNoEnd = INT64_MAX;

struct WindowConfig {
  bool steps = false;            // a step range was given
  int64_t step_begin = 0;        // first step kept (0-based count of step markers)
  int64_t step_end = kNoEnd;     // first step no longer kept
  bool time = false;             // a delay or a duration was given
  int64_t delay_ns = 0;          // from the collector's start
  int64_t duration_ns = kNoEnd;  // kNoEnd: to the end
  std::string trigger_file;      // "": no trigger
  Detail detail = Detail::kAuto;
  uint64_t message_rows = kDefaultMessageRows;  // kAuto's budget

  bool bounded() const { return steps || time || !trigger_file.empty(); }
};

// What is known while the job runs.
struct WindowInputs {
  int64_t markers = 0;     // ringside_step() calls so far (the Nth call begins step N-1)
  int64_t elapsed_ns = 0;  // since the collector's start
  int64_t touches = 0;     // times the trigger file was touched (odd: recording)
};

// Whether calls starting now are recorded. Before the first step marker a step window keeps
// the setup calls (the job's communicator creation, DDP's parameter broadcast) when it begins
// after step 0: they are few, and the analyzer needs the communicators.
bool windowWanted(const WindowConfig& config, const WindowInputs& in);

// "A:B" (steps A..B-1), "A:" (from step A on) or ":B"; 0 <= A < B. False on anything else.
bool parseStepRange(std::string_view text, int64_t* begin, int64_t* end);
// "calls", "links", "messages" or "auto".
bool parseDetail(std::string_view text, Detail* out);
const char* detailName(Detail d);
// A duration >= 0 in format/'s grammar (units.h), seconds when bare: "1.5", "500ms", "2m";
// as nanoseconds. False on anything else.
bool parseSecondsNs(std::string_view text, int64_t* ns);

// A line for the trace's meta: "steps 10:20, 5 s to 65 s after start, trigger file /tmp/go".
std::string describeWindow(const WindowConfig& config);

}  // namespace ringside::collector
