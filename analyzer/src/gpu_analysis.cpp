// analyzer/gpu_analysis.cpp — GPU times of collectives, and per GPU: busy
// time and how much of the NCCL kernels' time other kernels ran beside them.
//
// NCCL kernels are the kernels CUPTI linked to a recorded collective through
// the external correlation id (gpu_activity.collective_id); kernel names are
// never used (they changed across NCCL releases).
#include "gpu_analysis.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <utility>

#include "interval_union.h"
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
    if (a[i].second < b[j].second) ++i; else ++j;
  }
  return n;
}

struct DeviceAcc {
  GpuStats stats;
  bool any = false;
  int64_t first = 0, last = 0;
  IntervalUnion busy, sync;
  Intervals comm, compute;
};

struct Span {
  int64_t start = INT64_MAX, end = INT64_MIN;
  void add(int64_t s, int64_t e) {
    start = std::min(start, s);
    end = std::max(end, e);
  }
  bool known() const { return start != INT64_MAX && end >= start; }
};

std::string fmt(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string fmtMs(int64_t ns) { return fmt(static_cast<double>(ns) / 1e6, 2) + " ms"; }

}  // namespace

bool analyzeGpu(storage::TraceReader& reader, const std::function<int32_t(int64_t)>& instance_of_row,
                int64_t ws, int64_t we, Analysis* out, std::string* error) {
  std::map<std::pair<int, int>, DeviceAcc> devices;  // (rank, device)
  std::map<std::pair<int, int>, IntervalUnion> unknown_device_sync;
  std::unordered_map<int64_t, Span> kernel_span;     // collective row id -> its kernels
  bool ok = reader.forEachGpuActivity(
      [&](int32_t rank, const storage::GpuActivityRow& g) {
        int64_t end = g.end_ns == storage::kNone ? g.start_ns : std::max(g.start_ns, g.end_ns);
        if (end < ws || g.start_ns > we) return true;
        ++out->gpu_activities;
        if (g.kind == "nvtx") {
          // Host-side ranges: counted on the rank's first device below.
          ++devices[{rank, INT32_MIN}].stats.nvtx_ranges;
          return true;
        }
        if (g.kind == "sync" && g.device < 0) {
          unknown_device_sync[{rank, 0}].add(g.start_ns, end);
          return true;
        }
        DeviceAcc& d = devices[{rank, g.device}];
        if (g.kind == "sync") {
          d.sync.add(g.start_ns, end);
          return true;
        }
        if (!d.any) {
          d.any = true;
          d.first = g.start_ns;
          d.last = end;
        }
        d.first = std::min(d.first, g.start_ns);
        d.last = std::max(d.last, end);
        d.busy.add(g.start_ns, end);
        if (g.kind == "kernel") {
          ++d.stats.kernels;
          if (g.collective_id != storage::kNone) {
            ++d.stats.comm_kernels;
            addMerged(&d.comm, g.start_ns, end);
            kernel_span[g.collective_id].add(g.start_ns, end);
          } else {
            addMerged(&d.compute, g.start_ns, end);
          }
        } else if (g.kind == "memcpy") {
          ++d.stats.memcpys;
          int64_t bytes = std::max<int64_t>(0, g.bytes);
          if (g.copy_kind == "HtoD") d.stats.memcpy_htod_bytes += bytes;
          else if (g.copy_kind == "DtoH") d.stats.memcpy_dtoh_bytes += bytes;
          else d.stats.memcpy_other_bytes += bytes;
        } else if (g.kind == "memset") {
          ++d.stats.memsets;
          d.stats.memset_bytes += std::max<int64_t>(0, g.bytes);
        }
        return true;
      },
      error);
  if (!ok) return false;

  // Per collective row: NCCL's own GPU times win over the kernels' span.
  std::unordered_map<int64_t, Span> row_span = std::move(kernel_span);
  ok = reader.forEachCollectiveGpu(
      [&](const storage::CollectiveGpuRow& c) {
        if (c.gpu_start_ns != storage::kNone && c.gpu_end_ns != storage::kNone && c.gpu_end_ns >= c.gpu_start_ns) {
          Span s;
          s.add(c.gpu_start_ns, c.gpu_end_ns);
          row_span[c.collective_id] = s;
        }
        return true;
      },
      error);
  if (!ok) return false;
  for (const auto& [row, span] : row_span) {
    if (!span.known()) continue;
    int32_t inst = instance_of_row(row);
    if (inst < 0) continue;
    CollectiveInstance& c = out->collectives[static_cast<size_t>(inst)];
    c.gpu_start_ns = std::max(c.gpu_start_ns, span.start);
    c.gpu_end_ns = std::max(c.gpu_end_ns, span.end);
    ++c.gpu_ranks;
  }

  // Per device: busy share and comm/compute overlap.
  std::map<int, int> devices_of_rank;
  for (const auto& [key, d] : devices)
    if (key.second != INT32_MIN) ++devices_of_rank[key.first];
  for (auto& [key, d] : devices) {
    if (key.second == INT32_MIN) continue;
    GpuStats s = d.stats;
    s.rank = key.first;
    s.device = key.second;
    s.span_ns = d.any ? d.last - d.first : 0;
    s.busy_ns = d.busy.total();
    s.busy_share = s.span_ns > 0 ? static_cast<double>(s.busy_ns) / static_cast<double>(s.span_ns) : 0;
    s.comm_kernel_ns = length(d.comm);
    s.compute_kernel_ns = length(d.compute);
    s.overlap_ns = intersection(d.comm, d.compute);
    s.overlap_share = s.comm_kernel_ns > 0
                          ? static_cast<double>(s.overlap_ns) / static_cast<double>(s.comm_kernel_ns)
                          : -1;
    s.exposed_comm_ns = s.comm_kernel_ns - s.overlap_ns;
    s.sync_ns = d.sync.total();
    // Syncs and NVTX ranges without a device belong to a rank's only GPU.
    if (devices_of_rank[s.rank] == 1) {
      auto u = unknown_device_sync.find({s.rank, 0});
      if (u != unknown_device_sync.end()) s.sync_ns += u->second.total();
      auto n = devices.find({s.rank, INT32_MIN});
      if (n != devices.end()) s.nvtx_ranges = n->second.stats.nvtx_ranges;
    }
    out->gpus.push_back(s);
  }
  return true;
}

void gpuFindings(const Analysis& a, const GpuMeta& meta, std::vector<Finding>* findings) {
  {  // communication that nothing hid
    constexpr double kLowOverlap = 0.25;
    constexpr double kMinCommShare = 0.05;  // NCCL kernels take at least this much of the GPU's span
    std::vector<const GpuStats*> low;
    int64_t exposed = 0, comm = 0;
    for (const GpuStats& g : a.gpus) {
      if (g.overlap_share < 0 || g.span_ns <= 0) continue;
      if (g.overlap_share >= kLowOverlap) continue;
      if (static_cast<double>(g.comm_kernel_ns) < kMinCommShare * static_cast<double>(g.span_ns)) continue;
      low.push_back(&g);
      exposed += g.exposed_comm_ns;
      comm += g.comm_kernel_ns;
    }
    if (!low.empty()) {
      std::sort(low.begin(), low.end(), [](auto* x, auto* y) { return x->overlap_share < y->overlap_share; });
      std::string ranks, evidence;
      for (size_t i = 0; i < low.size(); ++i) {
        ranks += (i ? "," : "") + std::to_string(low[i]->rank);
        if (i < 4) {
          evidence += (i ? "; " : "") + std::string("rank ") + std::to_string(low[i]->rank) + " GPU " +
                      std::to_string(low[i]->device) + ": " + fmt(100 * low[i]->overlap_share, 0) + "% of " +
                      fmtMs(low[i]->comm_kernel_ns);
        }
      }
      double share = comm > 0 ? static_cast<double>(comm - exposed) / static_cast<double>(comm) : 0;
      findings->push_back({"warning", "low-overlap",
                           "NCCL kernels overlap compute for only " + fmt(100 * share, 0) +
                               "% of their time on rank(s) " + ranks + ": " + fmtMs(exposed) + " exposed",
                           evidence});
    }
  }
  {  // CUPTI held by another tool
    std::map<std::string, std::vector<int>> busy;
    for (const auto& [rank, value] : meta.cupti)
      if (value.rfind("busy", 0) == 0) busy[value].push_back(rank);
    for (const auto& [value, ranks] : busy) {
      std::string list;
      for (int r : ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
      findings->push_back({"warning", "cupti-busy",
                           "rank(s) " + list + ": no GPU activity, another tool held CUPTI (NCCL calls still recorded)",
                           "cupti=" + value});
    }
  }
  droppedFinding(meta.dropped, "dropped-gpu-records", "GPU activity records dropped (buffers full)", findings);
}

void droppedFinding(const std::map<int, int64_t>& dropped, const char* rule, const std::string& what,
                    std::vector<Finding>* findings) {
  if (dropped.empty()) return;
  int64_t total = 0;
  std::string per;
  for (const auto& [rank, n] : dropped) {
    total += n;
    per += (per.empty() ? "" : ", ") + std::to_string(n) + " on rank " + std::to_string(rank);
  }
  findings->push_back({"warning", rule, std::to_string(total) + " " + what, per});
}

}  // namespace ringside::analyzer::detail
