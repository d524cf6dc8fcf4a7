// analyzer/analysis.cpp — analyze(): collectives matched across ranks, links,
// phases, idle links, the alpha-beta model and findings (docs/analyzer.md).
//
// Two streaming passes: collectives (ordered by rank, start_ns) build one
// accumulator per instance; transfers (ordered by start_ns) feed per-link
// accumulators and, for the instances whose phases we report, a short-lived
// buffer of that instance's sends that is folded into PhaseStats as soon as
// the stream has passed the instance's end. No pass keeps all transfers.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <queue>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analysis_internal.h"
#include "gpu_analysis.h"
#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/topology.h"
#include "interval_union.h"
#include "meta_values.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer {
namespace {

using storage::CollectiveRow;
using storage::TransferRow;

using detail::IntervalUnion;


using detail::parseInt;
using detail::parseRankList;

std::string rankList(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

std::string fmt(double value, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

std::string fmtNs(int64_t ns) {
  if (ns >= 1000000000) return fmt(static_cast<double>(ns) / 1e9) + " s";
  if (ns >= 1000000) return fmt(static_cast<double>(ns) / 1e6) + " ms";
  if (ns >= 1000) return fmt(static_cast<double>(ns) / 1e3) + " us";
  return std::to_string(ns) + " ns";
}

std::string linkName(int src, int dst) {
  return std::to_string(src) + "->" + std::to_string(dst);
}

// Nearest-rank percentile of a sorted vector.
template <typename T>
T percentile(const std::vector<T>& sorted, double p) {
  if (sorted.empty()) return T{};
  size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  if (k == 0) k = 1;
  return sorted[std::min(sorted.size(), k) - 1];
}

// Latency terms of the alpha-beta model: messages on the critical path.
int modelSteps(const std::string& op, const std::string& library, int n) {
  if (n <= 1) return 0;
  bool tree = library.find("tree") != std::string::npos;
  if (op == "allreduce") return tree ? 2 * ceilLog2(n) : 2 * (n - 1);
  if (op == "reducescatter" || op == "allgather" || op == "allgatherv" || op == "alltoall" ||
      op == "alltoallv") {
    return n - 1;
  }
  if (op == "broadcast" || op == "reduce" || op == "barrier") return ceilLog2(n);
  return 1;
}

bool phasedLibrary(const std::string& library) { return library.rfind("ringside-", 0) == 0; }
bool glooRingAllreduce(const CollectiveInstance& c) {
  return c.library == "gloo" && c.op == "allreduce" && (c.algorithm.empty() || c.algorithm == "ring");
}

struct SideAcc {
  int64_t messages = 0, bytes = 0;
  IntervalUnion busy;
  std::vector<double> bins;        // bytes per bin
  std::vector<int32_t> instances;  // collective instances it carried bytes for
  std::vector<std::pair<int, std::pair<int64_t, IntervalUnion>>> by_group;  // phase group -> bytes, busy
  std::pair<int64_t, IntervalUnion>& group(int key) {
    for (auto& [k, acc] : by_group) {
      if (k == key) return acc;
    }
    by_group.emplace_back(key, std::pair<int64_t, IntervalUnion>{});
    return by_group.back().second;
  }
};

struct LinkAcc {
  int src = -1, dst = -1;
  SideAcc send, recv;
};

struct SendRec {
  int rank;
  int phase;  // interned phase name; -1 none
  int step;
  int64_t start, end;
};

struct Meta {
  int world_size = -1;
  std::vector<int> cut_off, missing;
  std::map<int, int64_t> dropped;
  std::map<std::string, std::vector<int>> inactive;
  detail::GpuMeta gpu;
};

Meta readMeta(const std::map<std::string, std::string>& meta,
              const std::vector<storage::RankInfo>& infos) {
  Meta out;
  bool merged = false;
  for (const char* key :
       {"world_size", "cut_off_ranks", "missing_ranks", "merged_at", "merged_at_unix_ns"}) {
    merged = merged || meta.count(key) != 0;
  }
  std::map<int, std::map<std::string, std::string>> by_rank;
  if (!merged) {
    by_rank[infos.empty() ? 0 : infos.front().rank] = meta;
  } else {
    for (const auto& [key, value] : meta) {
      int rank = 0;
      std::string_view name;
      if (detail::splitRankKey(key, &rank, &name)) by_rank[rank][std::string(name)] = value;
    }
  }
  int64_t world = -1;
  if (auto it = meta.find("world_size"); it != meta.end()) parseInt(it->second, &world);
  if (world <= 0) {
    for (const storage::RankInfo& info : infos) world = std::max<int64_t>(world, info.world_size);
  }
  out.world_size = world > 0 ? static_cast<int>(world) : -1;
  if (auto it = meta.find("missing_ranks"); it != meta.end()) out.missing = parseRankList(it->second);
  if (auto it = meta.find("cut_off_ranks"); it != meta.end()) {
    out.cut_off = parseRankList(it->second);
  } else {
    for (const auto& [rank, keys] : by_rank) {
      auto state = keys.find("end_state");
      if (state == keys.end() || state->second != "clean") out.cut_off.push_back(rank);
    }
  }
  for (const auto& [rank, keys] : by_rank) {
    if (auto it = keys.find("events_dropped"); it != keys.end()) {
      int64_t dropped = 0;
      if (parseInt(it->second, &dropped) && dropped > 0) out.dropped[rank] = dropped;
    }
    if (auto it = keys.find("cupti"); it != keys.end()) out.gpu.cupti[rank] = it->second;
    int64_t gpu_dropped = 0;
    for (const char* key : {"cupti_records_dropped", "gpu_activity_dropped"}) {
      int64_t n = 0;
      if (auto it = keys.find(key); it != keys.end() && parseInt(it->second, &n) && n > 0) gpu_dropped += n;
    }
    if (gpu_dropped > 0) out.gpu.dropped[rank] = gpu_dropped;
    if (auto it = keys.find("interposition");
        it != keys.end() && it->second.rfind("inactive", 0) == 0) {
      out.inactive[it->second].push_back(rank);
    }
  }
  return out;
}

int severityRank(const std::string& severity) {
  return severity == "problem" ? 0 : severity == "warning" ? 1 : 2;
}

}  // namespace

bool analyze(storage::TraceReader& reader, const AnalysisOptions& options, Analysis* out,
             std::string* error) {
  *out = Analysis{};
  const int bins = std::max(1, options.bins);
  auto progress = [&](double f) {
    if (options.progress) options.progress(f);
  };
  std::vector<storage::RankInfo> infos = reader.ranks();
  Meta meta = readMeta(reader.meta(), infos);
  out->cut_off_ranks = meta.cut_off;
  out->missing_ranks = meta.missing;
  {
    std::set<int> present;
    for (const auto& info : infos) present.insert(info.rank);
    out->ranks_present.assign(present.begin(), present.end());
  }
  const int64_t ws = options.window_start_ns, we = options.window_end_ns;

  // ---- pass 1: collectives -> instances ----------------------------------
  std::map<std::string, int> comm_ids;
  std::unordered_map<uint64_t, int32_t> instance_of;  // (comm id, seq) -> index
  // Per instance, per rank: when the call was entered and how long it stayed on the host.
  struct Arrival {
    int rank;
    int64_t start_ns;
    int64_t host_ns;  // end - start; -1 if it never returned
  };
  std::vector<std::vector<Arrival>> starts;
  std::vector<std::pair<int64_t, int32_t>> by_row_id;        // collective row id -> instance
  struct RankAcc {
    bool any = false;
    int64_t first = 0, last = 0;
    IntervalUnion comm;
    void span(int64_t s, int64_t e) {
      e = std::max(s, e);
      if (!any) {
        any = true;
        first = s;
        last = e;
      }
      first = std::min(first, s);
      last = std::max(last, e);
    }
  };
  std::map<int, RankAcc> rank_acc;
  for (const auto& info : infos) rank_acc[info.rank];
  int max_rank = -1;
  std::string last_comm;
  int last_comm_id = -1;
  RankAcc* last_acc = nullptr;
  int last_acc_rank = -1;
  bool ok = reader.forEachCollective(
      [&](const CollectiveRow& row) {
        int64_t end = std::max(row.start_ns, row.end_ns);
        if (end < ws || row.start_ns > we) return true;
        // Consecutive rows share their communicator: look it up only when it changes.
        if (last_comm_id < 0 || row.comm != last_comm) {
          auto [cit, cnew] = comm_ids.try_emplace(std::string(row.comm), static_cast<int>(comm_ids.size()));
          last_comm = row.comm;
          last_comm_id = cit->second;
        }
        uint64_t key = (static_cast<uint64_t>(last_comm_id) << 40) ^ static_cast<uint64_t>(row.seq);
        auto [it, fresh] = instance_of.try_emplace(key, static_cast<int32_t>(out->collectives.size()));
        if (fresh) {
          CollectiveInstance c;
          c.comm = row.comm;
          c.seq = row.seq;
          c.op = row.op;
          c.library = row.library;
          c.algorithm = row.algorithm;
          c.dtype = row.dtype;
          c.reduce_op = row.reduce_op;
          c.first_start_ns = row.start_ns;
          c.last_start_ns = row.start_ns;
          c.last_end_ns = end;
          c.straggler_rank = row.rank;
          out->collectives.push_back(std::move(c));
          starts.emplace_back();
        }
        CollectiveInstance& c = out->collectives[static_cast<size_t>(it->second)];
        c.bytes = std::max(c.bytes, row.bytes);
        ++c.ranks;
        c.first_start_ns = std::min(c.first_start_ns, row.start_ns);
        if (row.start_ns > c.last_start_ns || (fresh && c.ranks == 1)) {
          c.last_start_ns = row.start_ns;
          c.straggler_rank = row.rank;
        }
        c.last_end_ns = std::max(c.last_end_ns, end);
        c.failed = c.failed || row.status != 0;
        starts[static_cast<size_t>(it->second)].push_back(
            {row.rank, row.start_ns, row.end_ns >= row.start_ns ? row.end_ns - row.start_ns : -1});
        by_row_id.emplace_back(row.id, it->second);
        if (last_acc == nullptr || last_acc_rank != row.rank) {
          last_acc = &rank_acc[row.rank];  // map nodes stay put
          last_acc_rank = row.rank;
        }
        RankAcc& r = *last_acc;
        r.span(row.start_ns, end);
        r.comm.add(row.start_ns, end);
        max_rank = std::max(max_rank, static_cast<int>(row.rank));
        return true;
      },
      error);
  if (!ok) return false;
  // Merged traces number rows in (rank, start) order: usually sorted already.
  if (!std::is_sorted(by_row_id.begin(), by_row_id.end())) std::sort(by_row_id.begin(), by_row_id.end());
  // Merged traces number collective rows densely: then a flat table replaces the search.
  std::vector<int32_t> dense_row;
  int64_t dense_base = 0;
  if (!by_row_id.empty()) {
    dense_base = by_row_id.front().first;
    int64_t extent = by_row_id.back().first - dense_base + 1;
    if (extent > 0 && extent <= 4 * static_cast<int64_t>(by_row_id.size()) + 1024) {
      dense_row.assign(static_cast<size_t>(extent), -1);
      for (const auto& [id, index] : by_row_id) dense_row[static_cast<size_t>(id - dense_base)] = index;
      by_row_id.clear();
      by_row_id.shrink_to_fit();
    }
  }
  progress(0.2);

  // Trace window: collectives' extent (a pre-pass over transfers only when there are none).
  bool have_range = false;
  int64_t t0 = 0, t1 = 0;
  for (const CollectiveInstance& c : out->collectives) {
    if (!have_range) {
      t0 = c.first_start_ns;
      t1 = c.last_end_ns;
      have_range = true;
    }
    t0 = std::min(t0, c.first_start_ns);
    t1 = std::max(t1, c.last_end_ns);
  }
  if (!have_range) {
    ok = reader.forEachTransfer(
        [&](const TransferRow& row) {
          int64_t end = row.end_ns == storage::kNone ? row.start_ns : std::max(row.start_ns, row.end_ns);
          if (end < ws || row.start_ns > we) return true;
          if (!have_range) {
            t0 = row.start_ns;
            t1 = end;
            have_range = true;
          }
          t0 = std::min(t0, row.start_ns);
          t1 = std::max(t1, end);
          return true;
        },
        error);
    if (!ok) return false;
  }
  t0 = std::max(t0, ws);
  t1 = std::min(t1, we);
  if (t1 < t0) t1 = t0;
  out->start_ns = t0;
  out->end_ns = t1;
  out->bin_ns = std::max<int64_t>(1, (t1 - t0 + bins - 1) / bins);

  // Groups of (op, library): phase groups for the slow-link rule, idle links per group.
  std::map<std::pair<std::string, std::string>, int> group_ids;
  std::vector<std::pair<std::string, std::string>> group_names;
  std::vector<int32_t> group_of(out->collectives.size());
  std::vector<std::set<int>> group_ranks;
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    const CollectiveInstance& c = out->collectives[i];
    auto key = std::make_pair(c.op, c.library);
    auto [it, fresh] = group_ids.try_emplace(key, static_cast<int>(group_names.size()));
    if (fresh) {
      group_names.push_back(key);
      group_ranks.emplace_back();
    }
    group_of[i] = it->second;
    for (const Arrival& a : starts[i]) group_ranks[static_cast<size_t>(it->second)].insert(a.rank);
  }

  // ---- pass 2: transfers -> links, fit, phases ------------------------------
  std::map<std::string, int, std::less<>> phase_ids;
  std::vector<std::string> phase_names;
  int last_phase = -1;
  auto phaseId = [&](std::string_view name) {
    if (last_phase >= 0 && phase_names[static_cast<size_t>(last_phase)] == name) return last_phase;
    auto it = phase_ids.find(name);
    if (it != phase_ids.end()) last_phase = it->second;
    if (it != phase_ids.end()) return it->second;
    int id = static_cast<int>(phase_names.size());
    phase_names.emplace_back(name);
    phase_ids.emplace(std::string(name), id);
    return id;
  };
  std::unordered_map<uint64_t, int> link_of;
  const int dense_ranks = std::clamp(std::max(meta.world_size, max_rank + 1), 0, 1024);
  std::vector<int> dense_link(static_cast<size_t>(dense_ranks) * static_cast<size_t>(dense_ranks), -1);
  std::vector<LinkAcc> links;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int64_t fit_n = 0;
  std::unordered_map<int32_t, std::vector<SendRec>> pending;
  // Folded instances: a straggling send (clock skew across hosts) must not start a second,
  // partial set of phase rows.
  std::vector<bool> folded(out->collectives.size(), false);
  std::vector<SendRec>* last_pending = nullptr;
  int32_t last_pending_inst = -1;
  // (src, dst, channel) -> bytes, messages; send rows and recv rows apart.
  std::map<std::tuple<int, int, int>, std::pair<int64_t, int64_t>> channel_send, channel_recv;
  using Due = std::pair<int64_t, int32_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> due;

  auto flushInstance = [&](int32_t index) {
    auto it = pending.find(index);
    if (it == pending.end()) return;
    std::vector<SendRec> recs = std::move(it->second);
    pending.erase(it);
    folded[static_cast<size_t>(index)] = true;
    if (index == last_pending_inst) {
      last_pending = nullptr;
      last_pending_inst = -1;
    }
    const CollectiveInstance& c = out->collectives[static_cast<size_t>(index)];
    std::stable_sort(recs.begin(), recs.end(), [](const SendRec& a, const SendRec& b) {
      return std::tie(a.rank, a.start) < std::tie(b.rank, b.start);
    });
    bool infer = glooRingAllreduce(c);
    if (infer) {
      // Gloo's ring all-reduce: the first half of a rank's sends is the
      // reduce-scatter, the rest the all-gather; every send is one step.
      int rs = phaseId("reduce-scatter"), ag = phaseId("all-gather");
      for (size_t i = 0; i < recs.size();) {
        size_t j = i;
        while (j < recs.size() && recs[j].rank == recs[i].rank) ++j;
        size_t half = (j - i + 1) / 2;
        for (size_t k = i; k < j; ++k) {
          size_t pos = k - i;
          recs[k].phase = pos < half ? rs : ag;
          recs[k].step = static_cast<int>(pos < half ? pos : pos - half);
        }
        i = j;
      }
    }
    // (rank, phase) -> steps' last end.
    std::map<std::pair<int, int>, std::map<int, int64_t>> steps;
    std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> extent;
    for (const SendRec& r : recs) {
      if (r.phase < 0) continue;
      auto key = std::make_pair(r.rank, r.phase);
      auto [e, fresh] = extent.try_emplace(key, r.start, r.end);
      if (!fresh) {
        e->second.first = std::min(e->second.first, r.start);
        e->second.second = std::max(e->second.second, r.end);
      }
      int64_t& step_end = steps[key][r.step];
      step_end = std::max(step_end, r.end);
    }
    for (const auto& [key, ext] : extent) {
      PhaseStats p;
      p.comm = c.comm;
      p.seq = c.seq;
      p.rank = key.first;
      p.phase = phase_names[static_cast<size_t>(key.second)];
      p.start_ns = ext.first;
      p.end_ns = ext.second;
      const auto& s = steps[key];
      p.steps = static_cast<int>(s.size());
      int64_t prev = ext.first;
      for (const auto& [step, end] : s) {
        int64_t gap = end - prev;
        if (p.slowest_step < 0 || gap > p.slowest_step_ns) {
          p.slowest_step = step;
          p.slowest_step_ns = gap;
        }
        prev = std::max(prev, end);
      }
      p.inferred = infer;
      out->phases.push_back(std::move(p));
    }
  };

  const int64_t total_rows = std::max<int64_t>(1, reader.transferCount());
  int64_t last_cid = storage::kNone;
  int32_t last_inst = -1;
  int64_t rows = 0;
  ok = reader.forEachTransfer(
      [&](const TransferRow& row) {
        ++out->transfers;
        if (++rows % (1 << 20) == 0) {
          progress(0.2 + 0.75 * static_cast<double>(rows) / static_cast<double>(total_rows));
        }
        while (!due.empty() && due.top().first < row.start_ns) {
          flushInstance(due.top().second);
          due.pop();
        }
        bool send = row.side == "send";
        if (!send && row.side != "recv") return true;
        bool done = row.end_ns != storage::kNone && row.end_ns >= row.start_ns;
        int64_t end = done ? row.end_ns : row.start_ns;
        if (end < ws || row.start_ns > we) return true;
        int32_t inst = -1;
        if (row.collective_id != storage::kNone && row.collective_id == last_cid) {
          inst = last_inst;
        } else if (row.collective_id != storage::kNone && !dense_row.empty()) {
          int64_t at = row.collective_id - dense_base;
          if (at >= 0 && at < static_cast<int64_t>(dense_row.size())) {
            inst = dense_row[static_cast<size_t>(at)];
          }
        } else if (row.collective_id != storage::kNone) {
          auto it = std::lower_bound(by_row_id.begin(), by_row_id.end(),
                                     std::make_pair(row.collective_id, INT32_MIN));
          if (it != by_row_id.end() && it->first == row.collective_id) inst = it->second;
          last_cid = row.collective_id;
          last_inst = inst;
        }
        if (options.on_transfer) options.on_transfer(row, inst);
        int* dense = row.src_rank >= 0 && row.dst_rank >= 0 && row.src_rank < dense_ranks &&
                             row.dst_rank < dense_ranks
                         ? &dense_link[static_cast<size_t>(row.src_rank) * static_cast<size_t>(dense_ranks) +
                                       static_cast<size_t>(row.dst_rank)]
                         : nullptr;
        int link_index = dense ? *dense : -1;
        if (link_index < 0) {
          uint64_t lkey = (static_cast<uint64_t>(static_cast<uint32_t>(row.src_rank)) << 32) |
                          static_cast<uint32_t>(row.dst_rank);
          auto [lit, lnew] = link_of.try_emplace(lkey, static_cast<int>(links.size()));
          if (lnew) {
            links.emplace_back();
            links.back().src = row.src_rank;
            links.back().dst = row.dst_rank;
            max_rank = std::max({max_rank, static_cast<int>(row.src_rank), static_cast<int>(row.dst_rank)});
          }
          link_index = lit->second;
          if (dense) *dense = link_index;
        }
        if (row.channel >= 0) {
          auto& ch = (send ? channel_send : channel_recv)[{row.src_rank, row.dst_rank, row.channel}];
          ch.first += row.bytes;
          ++ch.second;
        }
        SideAcc& side = send ? links[static_cast<size_t>(link_index)].send
                             : links[static_cast<size_t>(link_index)].recv;
        ++side.messages;
        side.bytes += row.bytes;
        if (done) side.busy.add(row.start_ns, row.end_ns);
        // Bytes spread evenly over the bins the transfer overlaps (clipped to the window).
        if (side.bins.empty()) side.bins.assign(static_cast<size_t>(bins), 0.0);
        if (row.bytes > 0) {
          int64_t s = std::clamp(row.start_ns, t0, t1), e = std::clamp(end, t0, t1);
          int64_t b0 = std::min<int64_t>(bins - 1, (s - t0) / out->bin_ns);
          int64_t b1 = std::min<int64_t>(bins - 1, (e - t0) / out->bin_ns);
          if (b0 == b1 || e <= s) {
            side.bins[static_cast<size_t>(b0)] += static_cast<double>(row.bytes);
          } else {
            double per_ns = static_cast<double>(row.bytes) / static_cast<double>(e - s);
            for (int64_t b = b0; b <= b1; ++b) {
              int64_t lo = std::max(s, t0 + b * out->bin_ns);
              int64_t hi = std::min(e, t0 + (b + 1) * out->bin_ns);
              if (hi > lo) side.bins[static_cast<size_t>(b)] += per_ns * static_cast<double>(hi - lo);
            }
          }
        }
        int recorder = send ? row.src_rank : row.dst_rank;
        if (recorder >= 0) rank_acc[recorder].span(row.start_ns, end);
        int phase = row.phase.empty() ? -1 : phaseId(row.phase);
        if (inst >= 0) {
          if (side.instances.empty() || side.instances.back() != inst) side.instances.push_back(inst);
          int group = group_of[static_cast<size_t>(inst)] * 64 + (phase < 0 ? 63 : std::min(phase, 62));
          auto& g = side.group(group);
          g.first += row.bytes;
          if (done) g.second.add(row.start_ns, row.end_ns);
        }
        if (send && done) {
          double x = static_cast<double>(row.bytes), y = static_cast<double>(row.end_ns - row.start_ns);
          sx += x;
          sy += y;
          sxx += x * x;
          sxy += x * y;
          ++fit_n;
        }
        if (send && inst >= 0) {
          CollectiveInstance& c = out->collectives[static_cast<size_t>(inst)];
          c.sent_bytes += row.bytes;
          if ((phase >= 0 || glooRingAllreduce(c)) && !folded[static_cast<size_t>(inst)]) {
            if (inst != last_pending_inst || last_pending == nullptr) {
              auto [pit, pnew] = pending.try_emplace(inst);
              if (pnew) due.emplace(c.last_end_ns, inst);
              last_pending = &pit->second;
              last_pending_inst = inst;
            }
            last_pending->push_back({row.src_rank, phase, row.step, row.start_ns, end});
          }
        }
        return true;
      },
      error);
  if (!ok) return false;
  while (!due.empty()) {
    flushInstance(due.top().second);
    due.pop();
  }
  {
    std::set<std::pair<int, int>> sent_links;
    for (const auto& [key, v] : channel_send) sent_links.emplace(std::get<0>(key), std::get<1>(key));
    auto addChannels = [&](const auto& from, bool skip_sent) {
      for (const auto& [key, v] : from) {
        if (skip_sent && sent_links.count({std::get<0>(key), std::get<1>(key)}) != 0) continue;
        out->channel_traffic.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), v.first, v.second});
      }
    };
    addChannels(channel_send, false);
    addChannels(channel_recv, true);
    std::sort(out->channel_traffic.begin(), out->channel_traffic.end(), [](const auto& x, const auto& y) {
      return std::tie(x.src, x.dst, x.channel) < std::tie(y.src, y.dst, y.channel);
    });
  }
  progress(0.95);

  // ---- GPU: kernels' and NCCL's GPU times, per-device busy and overlap -------
  auto instanceOfRow = [&](int64_t id) -> int32_t {
    if (!dense_row.empty()) {
      int64_t at = id - dense_base;
      return at >= 0 && at < static_cast<int64_t>(dense_row.size()) ? dense_row[static_cast<size_t>(at)] : -1;
    }
    auto it = std::lower_bound(by_row_id.begin(), by_row_id.end(), std::make_pair(id, INT32_MIN));
    return it != by_row_id.end() && it->first == id ? it->second : -1;
  };
  if (!detail::analyzeGpu(reader, instanceOfRow, ws, we, out, error)) return false;

  // ---- instances: skew, bandwidth -------------------------------------------
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    CollectiveInstance& c = out->collectives[i];
    c.arrival_skew_ns = c.last_start_ns - c.first_start_ns;
    c.duration_ns = std::max<int64_t>(0, c.last_end_ns - c.last_start_ns);
    // NCCL returns once the work is enqueued: the GPU times are the call's own time.
    if (c.gpu_ranks > 0 && c.gpu_ranks >= c.ranks && c.gpu_end_ns >= c.gpu_start_ns) {
      c.gpu_timed = true;
      c.duration_ns = c.gpu_end_ns - c.gpu_start_ns;
    }
    if (c.duration_ns > 0) {
      c.algbw_gbps = static_cast<double>(c.bytes) / static_cast<double>(c.duration_ns);
      c.busbw_gbps = c.algbw_gbps * busbwFactor(c.op, c.ranks);
    }
  }

  // ---- links --------------------------------------------------------------
  int world = meta.world_size;
  if (world < max_rank + 1) world = max_rank + 1;
  out->world_size = meta.world_size > 0 ? meta.world_size : (world > 0 ? world : -1);
  out->traffic.assign(static_cast<size_t>(std::max(0, world)),
                      std::vector<int64_t>(static_cast<size_t>(std::max(0, world)), 0));
  const Topology* topo = options.topology;
  const double window_ns = static_cast<double>(std::max<int64_t>(1, t1 - t0));
  // Per instance: slowest link used (bandwidth, latency) from the topology.
  std::vector<double> inst_bw(out->collectives.size(), -1), inst_lat(out->collectives.size(), -1);
  std::vector<std::set<int>> link_groups(links.size());
  std::vector<std::pair<int, int>> phase_group_link;  // reused below
  for (size_t li = 0; li < links.size(); ++li) {
    LinkAcc& acc = links[li];
    bool from_recv = acc.send.messages == 0;
    SideAcc& side = from_recv ? acc.recv : acc.send;
    LinkStats l;
    l.src = acc.src;
    l.dst = acc.dst;
    l.bytes = side.bytes;
    l.messages = side.messages;
    // Busy time from the receiving side whenever it was recorded: a send returns once its bytes
    // are in the socket buffer, so send-side durations say nothing about the link's rate.
    int64_t recv_busy = acc.recv.busy.total();
    l.busy_ns = recv_busy > 0 ? recv_busy : side.busy.total();
    l.from_recv = from_recv;
    l.mean_gbps = static_cast<double>(l.bytes) / window_ns;
    l.gbps_per_bin.resize(static_cast<size_t>(bins), 0.0);
    for (size_t b = 0; b < side.bins.size(); ++b) {
      l.gbps_per_bin[b] = side.bins[b] / static_cast<double>(out->bin_ns);
      l.peak_gbps = std::max(l.peak_gbps, l.gbps_per_bin[b]);
    }
    if (l.busy_ns > 0) l.busy_gbps = static_cast<double>(l.bytes) / static_cast<double>(l.busy_ns);
    const TopologyLink* tl = topo ? topo->linkBetween(l.src, l.dst) : nullptr;
    if (tl && tl->bandwidth_gbps > 0) {
      l.capacity_gbps = tl->bandwidth_gbps;
      l.capacity_share = l.busy_gbps / l.capacity_gbps;
    }
    // Time inside the collectives that used it: union of their [first_start, last_end].
    std::vector<int32_t>& used = side.instances;
    std::sort(used.begin(), used.end());
    used.erase(std::unique(used.begin(), used.end()), used.end());
    std::vector<std::pair<int64_t, int64_t>> spans;
    spans.reserve(used.size());
    for (int32_t idx : used) {
      const CollectiveInstance& c = out->collectives[static_cast<size_t>(idx)];
      spans.emplace_back(c.first_start_ns, c.last_end_ns);
      link_groups[li].insert(group_of[static_cast<size_t>(idx)]);
      if (tl && tl->bandwidth_gbps > 0) {
        double& bw = inst_bw[static_cast<size_t>(idx)];
        bw = bw < 0 ? tl->bandwidth_gbps : std::min(bw, tl->bandwidth_gbps);
        inst_lat[static_cast<size_t>(idx)] =
            std::max(inst_lat[static_cast<size_t>(idx)], std::max(0.0, tl->latency_s));
      }
    }
    std::sort(spans.begin(), spans.end());
    IntervalUnion inside;
    for (const auto& [s, e] : spans) inside.add(s, e);
    if (inside.total() > 0) {
      l.busy_share_of_collectives =
          std::min(1.0, static_cast<double>(l.busy_ns) / static_cast<double>(inside.total()));
    }
    if (l.src >= 0 && l.dst >= 0 && l.src < world && l.dst < world) {
      out->traffic[static_cast<size_t>(l.src)][static_cast<size_t>(l.dst)] = l.bytes;
    }
    out->links.push_back(std::move(l));
  }

  // ---- existing and idle links ----------------------------------------------
  std::set<std::pair<int, int>> existing;
  std::vector<int> all_ranks = out->ranks_present;
  for (int r = 0; r < out->world_size; ++r) all_ranks.push_back(r);
  std::sort(all_ranks.begin(), all_ranks.end());
  all_ranks.erase(std::unique(all_ranks.begin(), all_ranks.end()), all_ranks.end());
  if (topo) {
    for (int a : all_ranks) {
      for (int b : all_ranks) {
        if (a != b && topo->linkBetween(a, b)) existing.insert({a, b});
      }
    }
  } else {
    std::map<std::string, std::vector<int>> hosts;
    for (const auto& info : infos) hosts[info.host].push_back(info.rank);
    for (const auto& [host, ranks] : hosts) {
      for (int a : ranks) {
        for (int b : ranks) {
          if (a != b) existing.insert({a, b});
        }
      }
    }
  }
  std::map<std::pair<int, int>, size_t> used_link;
  for (size_t li = 0; li < out->links.size(); ++li) {
    const LinkStats& l = out->links[li];
    if (l.src != l.dst) existing.insert({l.src, l.dst});
    used_link[{l.src, l.dst}] = li;
  }
  auto capacityOf = [&](int a, int b) {
    const TopologyLink* tl = topo ? topo->linkBetween(a, b) : nullptr;
    return tl && tl->bandwidth_gbps > 0 ? tl->bandwidth_gbps : -1.0;
  };
  double cap_bytes = 0, cap_total = 0;
  for (const auto& [a, b] : existing) {
    auto it = used_link.find({a, b});
    int64_t bytes = it == used_link.end() ? 0 : out->links[it->second].bytes;
    double cap = capacityOf(a, b);
    if (cap > 0) {
      cap_bytes += static_cast<double>(bytes);
      cap_total += cap * window_ns;
    }
    // A trace without transfer rows says nothing about links: list none as idle.
    if (bytes == 0 && out->transfers > 0) out->idle_links.push_back({a, b, "whole trace", cap});
  }
  if (cap_total > 0) out->capacity_used_share = cap_bytes / cap_total;
  for (size_t g = 0; g < group_names.size(); ++g) {
    const auto& [op, library] = group_names[g];
    bool phased = phasedLibrary(library) || (library == "gloo" && op == "allreduce");
    if (!phased) continue;
    const std::set<int>& ranks = group_ranks[g];
    if (ranks.size() < 2 || out->transfers == 0) continue;
    for (const auto& [a, b] : existing) {
      if (!ranks.count(a) || !ranks.count(b)) continue;
      auto it = used_link.find({a, b});
      if (it != used_link.end() && link_groups[it->second].count(static_cast<int>(g))) continue;
      bool whole = it == used_link.end() || out->links[it->second].bytes == 0;
      if (whole) continue;  // already listed for the whole trace
      out->idle_links.push_back({a, b, op + " " + library, capacityOf(a, b)});
    }
  }

  // ---- the alpha-beta model -------------------------------------------------
  bool topo_model = false;
  if (topo) {
    double min_bw = -1, max_lat = 0;
    for (const TopologyLink& tl : topo->links) {
      if (tl.bandwidth_gbps > 0) min_bw = min_bw < 0 ? tl.bandwidth_gbps : std::min(min_bw, tl.bandwidth_gbps);
      max_lat = std::max(max_lat, tl.latency_s);
    }
    if (min_bw > 0) {
      topo_model = true;
      out->model_source = "topology";
      out->alpha_s = max_lat;
      out->beta_s_per_byte = 1.0 / (min_bw * 1e9);
    }
  }
  double alpha_ns = -1, beta_ns = -1;
  if (!topo_model && fit_n >= 2) {
    double n = static_cast<double>(fit_n);
    double den = n * sxx - sx * sx;
    if (den > 0) {
      double slope = (n * sxy - sx * sy) / den;
      double intercept = (sy - slope * sx) / n;
      if (slope > 0) {
        beta_ns = slope;
        alpha_ns = std::max(0.0, intercept);
      }
    }
    // One message size (or small messages slower than large ones): no latency term can be
    // separated; the whole time is charged to bandwidth.
    if (beta_ns <= 0 && sx > 0 && sy > 0) {
      beta_ns = sy / sx;
      alpha_ns = 0;
    }
    if (beta_ns > 0) {
      out->model_source = "fitted";
      out->alpha_s = alpha_ns * 1e-9;
      out->beta_s_per_byte = beta_ns * 1e-9;
    }
  }
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    CollectiveInstance& c = out->collectives[i];
    int steps = modelSteps(c.op, c.library, c.ranks);
    double factor = busbwFactor(c.op, c.ranks);
    if (topo_model) {
      if (inst_bw[i] > 0) {
        c.expected_ns = steps * std::max(0.0, inst_lat[i]) * 1e9 +
                        factor * static_cast<double>(c.bytes) / inst_bw[i];
      }
    } else if (beta_ns > 0) {
      c.expected_ns = steps * alpha_ns + factor * static_cast<double>(c.bytes) * beta_ns;
    }
  }

  // ---- ranks ----------------------------------------------------------------
  std::map<int, int64_t> wait;
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    for (const Arrival& a : starts[i]) {
      // A rank waits inside its call for the last one to arrive, but never longer than it
      // stayed in the call: an asynchronous call (NCCL's enqueue) returns before the others
      // arrive, and its waiting happens on the GPU, not on the host.
      int64_t w = out->collectives[i].last_start_ns - a.start_ns;
      if (a.host_ns >= 0) w = std::min(w, a.host_ns);
      wait[a.rank] += std::max<int64_t>(0, w);
    }
  }
  std::set<int> cut(out->cut_off_ranks.begin(), out->cut_off_ranks.end());
  for (auto& [rank, acc] : rank_acc) {
    if (rank < 0) continue;
    RankStats r;
    r.rank = rank;
    r.span_ns = acc.any ? acc.last - acc.first : 0;
    r.comm_ns = acc.comm.total();
    r.wait_ns = wait[rank];
    r.cut_off = cut.count(rank) != 0;
    out->ranks.push_back(r);
  }

  // ---- op buckets -----------------------------------------------------------
  {
    std::map<std::tuple<std::string, std::string, int64_t>, std::vector<size_t>> groups;
    for (size_t i = 0; i < out->collectives.size(); ++i) {
      const CollectiveInstance& c = out->collectives[i];
      groups[{c.op, c.library, sizeBucketLo(c.bytes)}].push_back(i);
    }
    for (const auto& [key, members] : groups) {
      OpBucket b;
      std::tie(b.op, b.library, b.size_lo) = key;
      b.size_hi = b.size_lo == 0 ? 1 : 2 * b.size_lo;
      std::vector<int64_t> d;
      double busbw = 0;
      for (size_t i : members) {
        d.push_back(out->collectives[i].duration_ns);
        busbw += out->collectives[i].busbw_gbps;
      }
      std::sort(d.begin(), d.end());
      b.count = static_cast<int64_t>(d.size());
      for (int64_t x : d) b.total_ns += x;
      b.p50_ns = percentile(d, 0.5);
      b.p90_ns = percentile(d, 0.9);
      b.p99_ns = percentile(d, 0.99);
      b.max_ns = d.back();
      b.mean_busbw_gbps = busbw / static_cast<double>(d.size());
      out->op_buckets.push_back(std::move(b));
    }
  }

  // ---- findings -------------------------------------------------------------
  auto& findings = out->findings;
  if (!out->cut_off_ranks.empty()) {
    findings.push_back({"problem", "cut-off",
                        "rank(s) " + rankList(out->cut_off_ranks) +
                            " cut off: their trace ends early (killed or crashed)",
                        "cut_off_ranks=" + rankList(out->cut_off_ranks)});
  }
  if (!out->missing_ranks.empty()) {
    findings.push_back({"problem", "missing-ranks",
                        "rank(s) " + rankList(out->missing_ranks) + " have no trace file",
                        "world_size=" + std::to_string(out->world_size) +
                            " missing_ranks=" + rankList(out->missing_ranks)});
  }
  for (const auto& [reason, ranks] : meta.inactive) {
    findings.push_back({"problem", "interposition-inactive",
                        "rank(s) " + rankList(ranks) + ": " + reason + " (nothing recorded there)",
                        "interposition=" + reason});
  }
  {  // straggler
    std::map<int, std::vector<double>> late;  // rank -> skew / duration where it arrived last
    int64_t counted = 0;
    for (const CollectiveInstance& c : out->collectives) {
      if (c.ranks < 2 || c.arrival_skew_ns <= 0) continue;
      ++counted;
      double ratio = c.duration_ns > 0 ? static_cast<double>(c.arrival_skew_ns) /
                                             static_cast<double>(c.duration_ns)
                                       : 1e9;
      late[c.straggler_rank].push_back(ratio);
    }
    int64_t instances = static_cast<int64_t>(out->collectives.size());
    for (auto& [rank, ratios] : late) {
      std::sort(ratios.begin(), ratios.end());
      double share = static_cast<double>(ratios.size()) / static_cast<double>(std::max<int64_t>(1, instances));
      double med = percentile(ratios, 0.5);
      if (share >= 0.5 && med >= 0.2 && counted > 0) {
        findings.push_back(
            {"problem", "straggler",
             "rank " + std::to_string(rank) + " is a straggler: last to arrive in " +
                 fmt(100 * share, 0) + "% of collectives",
             "arrived last in " + std::to_string(ratios.size()) + "/" + std::to_string(instances) +
                 " instances; median skew = " + fmt(100 * std::min(med, 1e6), 0) +
                 "% of duration"});
      }
    }
  }
  {  // slow link: bytes/busy < 1/3 of the median of links of the same phase group
    std::map<int, std::vector<std::pair<double, size_t>>> rates;  // group -> (rate, link)
    for (size_t li = 0; li < links.size(); ++li) {
      // Bytes from the send rows, busy time from the recv rows where the group has them (see
      // LinkStats::busy_ns: send-side durations end when the bytes reach the socket buffer).
      const SideAcc& recv_side = links[li].recv;
      const SideAcc& side = links[li].send.messages == 0 ? recv_side : links[li].send;
      for (const auto& [group, acc] : side.by_group) {
        int64_t busy = acc.second.total();
        for (const auto& [rgroup, racc] : recv_side.by_group) {
          if (rgroup == group && racc.second.total() > 0) {
            busy = racc.second.total();
            break;
          }
        }
        if (busy > 0 && acc.first > 0) {
          rates[group].emplace_back(static_cast<double>(acc.first) / static_cast<double>(busy), li);
        }
      }
    }
    std::set<size_t> named;
    for (auto& [group, list] : rates) {
      if (list.size() < 3) continue;
      std::vector<double> r;
      for (const auto& [rate, li] : list) r.push_back(rate);
      std::sort(r.begin(), r.end());
      double med = percentile(r, 0.5);
      for (const auto& [rate, li] : list) {
        if (rate * 3 >= med || !named.insert(li).second) continue;
        const auto& gname = group_names[static_cast<size_t>(group / 64)];
        int ph = group % 64;
        std::string where = gname.first + " " + gname.second +
                            (ph == 63 ? "" : " " + phase_names[static_cast<size_t>(ph)]);
        findings.push_back({"problem", "slow-link",
                            "link " + linkName(links[li].src, links[li].dst) +
                                " is the bottleneck: " + fmt(med / rate, 1) +
                                "x slower than its peers (" + where + ")",
                            fmt(rate) + " GB/s while busy vs median " + fmt(med) + " GB/s"});
      }
    }
  }
  {  // busbw far under expected
    // A model fitted from the trace's own messages has no trustworthy latency
    // term: judge it only where bandwidth, not latency or scheduling, sets the
    // time. A topology's model states both, so it judges every size.
    constexpr int64_t kBandwidthBoundBytes = 64 * 1024;
    const int64_t min_bytes = out->model_source == "topology" ? 0 : kBandwidthBoundBytes;
    std::map<std::pair<std::string, std::string>, std::vector<double>> ratio;
    for (const CollectiveInstance& c : out->collectives) {
      if (c.expected_ns > 0 && c.duration_ns > 0 && c.op != "barrier" && c.bytes >= min_bytes) {
        ratio[{c.op, c.library}].push_back(c.expected_ns / static_cast<double>(c.duration_ns));
      }
    }
    for (auto& [key, r] : ratio) {
      std::sort(r.begin(), r.end());
      double med = percentile(r, 0.5);
      if (med < 0.5) {
        findings.push_back({"warning", "low-busbw",
                            key.first + " " + key.second + ": bus bandwidth at " +
                                fmt(100 * med, 0) + "% of the " + out->model_source +
                                " alpha-beta model",
                            "median measured/expected = " + fmt(med, 3) + " over " +
                                std::to_string(r.size()) + " instances"});
      }
    }
  }
  {  // idle links while others are saturated
    double busiest = 0;
    int sat_src = -1, sat_dst = -1;
    for (const LinkStats& l : out->links) {
      double load = l.capacity_share > 0 ? l.capacity_share : l.busy_share_of_collectives;
      if (load > busiest) {
        busiest = load;
        sat_src = l.src;
        sat_dst = l.dst;
      }
    }
    if (!out->idle_links.empty() && busiest >= 0.5) {
      std::vector<std::string> first;
      for (size_t i = 0; i < out->idle_links.size() && i < 4; ++i) {
        first.push_back(linkName(out->idle_links[i].src, out->idle_links[i].dst));
      }
      std::string list;
      for (const auto& s : first) list += (list.empty() ? "" : ", ") + s;
      findings.push_back({"warning", "idle-links",
                          std::to_string(out->idle_links.size()) +
                              " link(s) idle while others are saturated (e.g. " + list + ")",
                          "busiest " + linkName(sat_src, sat_dst) + " at " + fmt(100 * busiest, 0) +
                              "% busy"});
    }
  }
  detail::droppedFinding(meta.dropped, "dropped-events", "events dropped (event buffers full)", &findings);
  {
    int64_t failed = 0;
    for (const CollectiveInstance& c : out->collectives) failed += c.failed ? 1 : 0;
    if (failed > 0) {
      findings.push_back({"warning", "failed-collectives",
                          std::to_string(failed) + " collective(s) failed on some rank",
                          "status != 0"});
    }
  }
  detail::gpuFindings(*out, meta.gpu, &findings);
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return severityRank(a.severity) < severityRank(b.severity);
  });
  if (out->collectives.empty()) out->warnings.push_back("no collectives in the window");
  if (out->transfers == 0) {
    out->warnings.push_back("no transfers recorded: link statistics and idle links are unknown");
  }
  (void)fmtNs;
  progress(1.0);
  return true;
}

}  // namespace ringside::analyzer
