// ringside/analyzer/steps.h — training steps found from a trace's calls alone (docs/steps.md),
// for `ringside merge` to store in the trace (storage/step_store.h). analyze() fills
// Analysis::steps itself: from the markers, the stored steps, or this same detection.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/storage/records.h"

namespace ringside::storage {
class TraceReader;
}

namespace ringside::analyzer {

// How sure a detection is and what it left out (StepInfo's fields of the same names).
struct StepDetectionSummary {
  double confidence = -1;      // 0..1; -1: no steps
  int64_t left_out_calls = 0;  // calls after the first step in no step
  std::string left_out;        // "3 x broadcast 1.0 KiB, ..."
};

// The steps detected from the period of the calls on one communicator (markers are not
// consulted). Empty with *note saying why when there are none ("no repeating sequence of
// calls", ...). One pass over the collectives; false with *error on a read error.
bool detectSteps(storage::TraceReader& reader, std::vector<storage::StepRow>* steps,
                 std::string* note, std::string* error,
                 StepDetectionSummary* summary = nullptr);

}  // namespace ringside::analyzer
