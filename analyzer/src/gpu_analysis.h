// analyzer/gpu_analysis.h — the GPU part of analyze() (docs/analyzer.md, "GPU").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"
#include "trace_meta.h"

namespace ringside::storage {
class TraceReader;
}

namespace ringside::analyzer::detail {

// Reads gpu_activity and collective_gpu: fills out->gpus, out->gpu_activities
// and the gpu_* fields of out->collectives. `instance_of_row` maps a
// collective row id to its index in out->collectives (-1: not in the window);
// rows outside [window_start_ns, window_end_ns] are skipped.
bool analyzeGpu(storage::TraceReader& reader,
                const std::function<int32_t(int64_t)>& instance_of_row, int64_t window_start_ns,
                int64_t window_end_ns, Analysis* out, std::string* error);

// Findings: low comm/compute overlap, CUPTI busy, dropped GPU records.
void gpuFindings(const Analysis& a, const GpuMeta& meta, std::vector<Finding>* findings);

}  // namespace ringside::analyzer::detail
