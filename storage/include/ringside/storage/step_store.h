// storage/step_store.h — stores the training steps found in a merged trace (table step, schema
// v4; docs/steps.md). `ringside merge` finds them with the analyzer's detection and stores them
// here, as it stores the clock model: analyze() then reads them instead of detecting again.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ringside/storage/records.h"

namespace ringside::storage {

// Replaces the step rows of the merged trace at `path` with `steps` (possibly none) and sets the
// meta keys steps_detected (how many) and steps_comm, and each of `meta` (the detection's
// steps_confidence, steps_left_out_calls, steps_left_out; an empty value stores NULL). Upgrades
// an older trace to the current version on the way. Returns false with a one-line *error.
bool storeSteps(const std::string& path, const std::vector<StepRow>& steps, std::string* error,
                const std::vector<std::pair<std::string, std::string>>& meta = {});

}  // namespace ringside::storage
