// analyzer/gpu_analysis.cpp — GPU times of collectives, and per GPU: busy
// time and how much of the NCCL kernels' time other kernels ran beside them.
//
// NCCL kernels are the kernels CUPTI linked to a recorded collective through
// the external correlation id (gpu_activity.collective_id); kernel names are
// never used (they changed across NCCL releases).
#include "gpu_analysis.h"

#include <algorithm>
#include <climits>
#include <map>
#include <unordered_map>
#include <utility>

#include "findings_internal.h"
#include "interval_union.h"
#include "ringside/format/units.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer::detail {
namespace {

using Intervals = std::vector<std::pair<int64_t, int64_t>>;

// Appends [s, e] to a union kept as sorted, disjoint intervals (inputs come in start order).
void addMerged(Intervals* v, int64_t s, int64_t e) {
  if (!v->empty() && s <= v->back().second) {
    v->back().second = std::max(v->back().second, e);
  } else {
    v->emplace_back(s, e);
  }
}

int64_t length(const Intervals& v) {
  int64_t n = 0;
  for (const auto& [s, e] : v) n += e - s;
  return n;
}

int64_t intersection(const Intervals& a, const Intervals& b) {
  int64_t n = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) n += hi - lo;
    if (a[i].second < b[j].second) ++i;
    else ++j;
  }
  return n;
}

struct DeviceAcc {
  GpuStats stats;
  TimeSpan span;
  IntervalUnion busy, sync;
  Intervals comm, compute;
};

std::string fmtMs(int64_t ns) { return format::fixed(static_cast<double>(ns) / 1e6) + " ms"; }

// NVTX ranges are counted under this device of a rank, then given to its only GPU.
constexpr int kNoDevice = INT32_MIN;

// Everything read from gpu_activity, per (rank, device).
struct GpuActivity {
  std::map<std::pair<int, int>, DeviceAcc> devices;
  std::map<int, IntervalUnion> unknown_device_sync;   // rank -> syncs without a device
  std::unordered_map<int64_t, TimeSpan> kernel_span;  // collective row id -> its kernels
};

void addCopyOrSet(const storage::GpuActivityRow& g, GpuStats* s) {
  if (g.kind == "memcpy") {
    ++s->memcpys;
    int64_t bytes = std::max<int64_t>(0, g.bytes);
    if (g.copy_kind == "HtoD") s->memcpy_htod_bytes += bytes;
    else if (g.copy_kind == "DtoH") s->memcpy_dtoh_bytes += bytes;
    else s->memcpy_other_bytes += bytes;
  } else if (g.kind == "memset") {
    ++s->memsets;
    s->memset_bytes += std::max<int64_t>(0, g.bytes);
  }
}

void addActivity(int32_t rank, const storage::GpuActivityRow& g, int64_t end, GpuActivity* acc) {
  if (g.kind == "nvtx") {
    ++acc->devices[{rank, kNoDevice}].stats.nvtx_ranges;  // host-side ranges
    return;
  }
  if (g.kind == "sync" && g.device < 0) {
    acc->unknown_device_sync[rank].add(g.start_ns, end);
    return;
  }
  DeviceAcc& d = acc->devices[{rank, g.device}];
  if (g.kind == "sync") {
    d.sync.add(g.start_ns, end);
    return;
  }
  d.span.add(g.start_ns, end);
  d.busy.add(g.start_ns, end);
  if (g.kind == "kernel") {
    ++d.stats.kernels;
    if (g.collective_id != storage::kNone) {
      ++d.stats.comm_kernels;
      addMerged(&d.comm, g.start_ns, end);
      acc->kernel_span[g.collective_id].add(g.start_ns, end);
    } else {
      addMerged(&d.compute, g.start_ns, end);
    }
  } else {
    addCopyOrSet(g, &d.stats);
  }
}

// Per collective row: NCCL's own GPU times win over the kernels' span.
bool applyGpuTimes(storage::TraceReader& reader,
                   const std::function<int32_t(int64_t)>& instance_of_row,
                   std::unordered_map<int64_t, TimeSpan> row_span, Analysis* out,
                   std::string* error) {
  bool ok = reader.forEachCollectiveGpu(
      [&](const storage::CollectiveGpuRow& c) {
        if (c.gpu_start_ns != storage::kNone && c.gpu_end_ns != storage::kNone &&
            c.gpu_end_ns >= c.gpu_start_ns) {
          TimeSpan s;
          s.add(c.gpu_start_ns, c.gpu_end_ns);
          row_span[c.collective_id] = s;
        }
        return true;
      },
      error);
  if (!ok) return false;
  for (const auto& [row, span] : row_span) {
    if (!span.any()) continue;
    int32_t inst = instance_of_row(row);
    if (inst < 0) continue;
    CollectiveInstance& c = out->collectives[static_cast<size_t>(inst)];
    c.gpu_start_ns = std::max(c.gpu_start_ns, span.first());
    c.gpu_end_ns = std::max(c.gpu_end_ns, span.last());
    ++c.gpu_ranks;
  }
  return true;
}

GpuStats deviceStats(int rank, int device, const DeviceAcc& d) {
  GpuStats s = d.stats;
  s.rank = rank;
  s.device = device;
  s.span_ns = d.span.length();
  s.busy_ns = d.busy.total();
  s.busy_share =
      s.span_ns > 0 ? static_cast<double>(s.busy_ns) / static_cast<double>(s.span_ns) : 0;
  s.comm_kernel_ns = length(d.comm);
  s.compute_kernel_ns = length(d.compute);
  s.overlap_ns = intersection(d.comm, d.compute);
  s.overlap_share = s.comm_kernel_ns > 0
                        ? static_cast<double>(s.overlap_ns) / static_cast<double>(s.comm_kernel_ns)
                        : -1;
  s.exposed_comm_ns = s.comm_kernel_ns - s.overlap_ns;
  s.sync_ns = d.sync.total();
  return s;
}

// Per device: busy share and comm/compute overlap.
void addDeviceStats(const GpuActivity& acc, Analysis* out) {
  std::map<int, int> devices_of_rank;
  for (const auto& [key, d] : acc.devices)
    if (key.second != kNoDevice) ++devices_of_rank[key.first];
  for (const auto& [key, d] : acc.devices) {
    if (key.second == kNoDevice) continue;
    GpuStats s = deviceStats(key.first, key.second, d);
    // Syncs and NVTX ranges without a device belong to a rank's only GPU.
    if (devices_of_rank[s.rank] == 1) {
      auto u = acc.unknown_device_sync.find(s.rank);
      if (u != acc.unknown_device_sync.end()) s.sync_ns += u->second.total();
      auto n = acc.devices.find({s.rank, kNoDevice});
      if (n != acc.devices.end()) s.nvtx_ranges = n->second.stats.nvtx_ranges;
    }
    out->gpus.push_back(s);
  }
}

// Communication that nothing hid: NCCL kernels with little compute beside them.
void lowOverlapFinding(const Analysis& a, std::vector<Finding>* findings) {
  constexpr double kLowOverlap = 0.25;
  constexpr double kMinCommShare = 0.05;  // NCCL kernels take at least this much of the GPU's span
  std::vector<const GpuStats*> low;
  int64_t exposed = 0, comm = 0;
  for (const GpuStats& g : a.gpus) {
    if (g.overlap_share < 0 || g.span_ns <= 0) continue;
    if (g.overlap_share >= kLowOverlap) continue;
    if (static_cast<double>(g.comm_kernel_ns) < kMinCommShare * static_cast<double>(g.span_ns))
      continue;
    low.push_back(&g);
    exposed += g.exposed_comm_ns;
    comm += g.comm_kernel_ns;
  }
  if (low.empty()) return;
  std::sort(low.begin(), low.end(),
            [](auto* x, auto* y) { return x->overlap_share < y->overlap_share; });
  std::vector<int> ranks;
  std::string evidence;
  for (size_t i = 0; i < low.size(); ++i) {
    ranks.push_back(low[i]->rank);
    if (i < 4) {
      evidence += (i ? "; " : "") + std::string("rank ") + std::to_string(low[i]->rank) + " GPU " +
                  std::to_string(low[i]->device) + ": " +
                  format::fixed(100 * low[i]->overlap_share, 0) + "% of " +
                  fmtMs(low[i]->comm_kernel_ns);
    }
  }
  double share = comm > 0 ? static_cast<double>(comm - exposed) / static_cast<double>(comm) : 0;
  findings->push_back(makeFinding("low-overlap",
                                  "NCCL kernels overlap compute for only " +
                                      format::fixed(100 * share, 0) +
                                      "% of their time on rank(s) " + format::join(ranks, ",") +
                                      ": " + fmtMs(exposed) + " exposed",
                                  evidence));
}

// CUPTI held by another tool: no GPU rows from those ranks.
void cuptiBusyFindings(const GpuMeta& meta, std::vector<Finding>* findings) {
  std::map<std::string, std::vector<int>> busy;
  for (const auto& [rank, value] : meta.cupti)
    if (value.rfind("busy", 0) == 0) busy[value].push_back(rank);
  for (const auto& [value, ranks] : busy) {
    findings->push_back(
        makeFinding("cupti-busy",
                    "rank(s) " + format::join(ranks, ",") +
                        ": no GPU activity, another tool held CUPTI (NCCL calls still recorded)",
                    "cupti=" + value));
  }
}

}  // namespace

bool analyzeGpu(storage::TraceReader& reader,
                const std::function<int32_t(int64_t)>& instance_of_row, int64_t window_start_ns,
                int64_t window_end_ns, Analysis* out, std::string* error) {
  GpuActivity acc;
  bool ok = reader.forEachGpuActivity(
      [&](int32_t rank, const storage::GpuActivityRow& g) {
        int64_t end = g.end_ns == storage::kNone ? g.start_ns : std::max(g.start_ns, g.end_ns);
        if (end < window_start_ns || g.start_ns > window_end_ns) return true;
        ++out->gpu_activities;
        addActivity(rank, g, end, &acc);
        return true;
      },
      error);
  if (!ok) return false;
  if (!applyGpuTimes(reader, instance_of_row, std::move(acc.kernel_span), out, error)) return false;
  addDeviceStats(acc, out);
  return true;
}

void gpuFindings(const Analysis& a, const GpuMeta& meta, std::vector<Finding>* findings) {
  lowOverlapFinding(a, findings);
  cuptiBusyFindings(meta, findings);
  droppedFinding(meta.dropped, "dropped-gpu-records", "GPU activity records dropped (buffers full)",
                 findings);
}

}  // namespace ringside::analyzer::detail
