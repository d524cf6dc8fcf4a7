// analyzer/gpu_analysis.h — the GPU part of analyze() (docs/analyzer.md, "GPU").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"

namespace ringside::storage {
class TraceReader;
}

namespace ringside::analyzer::detail {

// Reads gpu_activity and collective_gpu: fills out->gpus, out->gpu_activities
// and the gpu_* fields of out->collectives. `instance_of_row` maps a
// collective row id to its index in out->collectives (-1: not in the window).
bool analyzeGpu(storage::TraceReader& reader, const std::function<int32_t(int64_t)>& instance_of_row,
                int64_t window_start_ns, int64_t window_end_ns, Analysis* out, std::string* error);

// What each rank's meta said about GPU recording.
struct GpuMeta {
  std::map<int, std::string> cupti;      // rank -> meta "cupti" ("recording (...)", "busy: ...", ...)
  std::map<int, int64_t> dropped;        // rank -> cupti_records_dropped + gpu_activity_dropped
};

// Findings: low comm/compute overlap, CUPTI busy, dropped GPU records.
void gpuFindings(const Analysis& a, const GpuMeta& meta, std::vector<Finding>* findings);

// A warning `rule` for what the ranks dropped: "<total> <what>", with
// "<n> on rank <r>, ..." as evidence; none when nothing was dropped.
// (analysis.cpp: dropped events; gpu_analysis.cpp: dropped GPU records.)
void droppedFinding(const std::map<int, int64_t>& dropped, const char* rule, const std::string& what,
                    std::vector<Finding>* findings);

}  // namespace ringside::analyzer::detail
