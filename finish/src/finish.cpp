#include "ringside/finish/finish.h"

#include <cstdio>
#include <memory>
#include <utility>
#include <vector>

#include "ringside/align/input_sides.h"
#include "ringside/analyzer/steps.h"
#include "ringside/format/units.h"
#include "ringside/storage/records.h"
#include "ringside/storage/stage_timings.h"
#include "ringside/storage/step_store.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::finish {

bool alignTrace(const std::string& path, const align::AlignOptions& options,
                std::string* clock_line, std::string* error, align::InputSides* input_sides) {
  storage::StageTimer timer("align");
  storage::ClockModel model;
  align::AlignStats stats;
  if (!align::realignTrace(path, options, &model, &stats, error, input_sides)) {
    *error = "clock alignment failed: " + *error;
    return false;
  }
  if (storage::stageTimingsOn() && input_sides != nullptr) {
    std::fprintf(stderr, "ringside: timing align: message sides %s\n",
                 stats.sides_from_inputs
                     ? "read beside the copy"
                     : ("read from the trace: " + stats.sides_not_from_inputs).c_str());
  }
  *clock_line = align::describeModel(model);
  return true;
}

bool storeSteps(const std::string& path, std::string* error) {
  storage::StageTimer timer("steps");
  std::string note;
  std::vector<storage::StepRow> steps;
  // The merge that wrote `path` moments ago (or the caller) checked it: a quick_check here read
  // the whole merged trace (859 MB at 1,024 ranks, ~2.5 CPU-s) to look at its few thousand calls.
  storage::TraceOpenOptions open;
  open.quick_check = false;
  std::unique_ptr<storage::TraceReader> reader = storage::TraceReader::open(path, open, error);
  analyzer::StepDetectionSummary sum;
  const bool ok =
      reader != nullptr && analyzer::detectSteps(*reader, &steps, &note, error, &sum);
  reader.reset();  // the reader's handle is closed before the steps are written
  // How sure the detection was and what it left out (docs/steps.md), beside the steps.
  const std::vector<std::pair<std::string, std::string>> meta = {
      {"steps_confidence", sum.confidence < 0 ? "" : format::fixed(sum.confidence, 3)},
      {"steps_left_out_calls", steps.empty() ? "" : std::to_string(sum.left_out_calls)},
      {"steps_left_out", sum.left_out},
  };
  if (!ok || !storage::storeSteps(path, steps, error, meta)) {
    *error = "training steps not stored: " + *error;
    return false;
  }
  return true;
}

bool finishTrace(const std::string& path, const align::AlignOptions& options,
                 std::string* clock_line, std::string* error, align::InputSides* input_sides) {
  return alignTrace(path, options, clock_line, error, input_sides) && storeSteps(path, error);
}

storage::MergeResult mergeAndFinish(storage::MergeOptions options,
                                    const align::AlignOptions& align_options,
                                    std::string* clock_line) {
  clock_line->clear();
  // The clock fit's message sides are read from the inputs while they are copied (on the
  // InputSides' thread: the second core), not from the merged trace after the copy.
  std::unique_ptr<align::InputSides> sides;
  if (align_options.use_messages) {
    sides = std::make_unique<align::InputSides>();
    sides->attachTo(&options);
  }
  auto caller_step = std::move(options.before_publish);
  options.before_publish = [&](const std::string& temp, std::string* error) {
    if (caller_step && !caller_step(temp, error)) return false;
    return finishTrace(temp, align_options, clock_line, error, sides.get());
  };
  return storage::mergeRankFiles(options);
}

}  // namespace ringside::finish
