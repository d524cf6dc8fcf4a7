// analyzer/analysis_ranks.cpp — the ranks stage: per rank its span, time inside collectives
// and time waiting for the last rank; and the op buckets (per op, library and size bucket).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analysis_state.h"

namespace ringside::analyzer::detail {

void buildRanks(AnalysisState& s) {
  Analysis* out = s.out;
  std::map<int, int64_t> wait;
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    for (const Arrival& a : s.arrivals[i]) {
      // A rank waits inside its call for the last one to arrive, but never longer than it
      // stayed in the call: an asynchronous call (NCCL's enqueue) returns before the others
      // arrive, and its waiting happens on the GPU, not on the host.
      int64_t w = out->collectives[i].last_start_ns - a.start_ns;
      if (a.host_ns >= 0) w = std::min(w, a.host_ns);
      wait[a.rank] += std::max<int64_t>(0, w);
    }
  }
  std::set<int> cut(out->cut_off_ranks.begin(), out->cut_off_ranks.end());
  for (const auto& [rank, acc] : s.rank_acc) {
    if (rank < 0) continue;
    RankStats r;
    r.rank = rank;
    r.span_ns = acc.events.length();
    r.comm_ns = acc.comm.total();
    r.wait_ns = wait[rank];
    r.cut_off = cut.count(rank) != 0;
    out->ranks.push_back(r);
  }
}

namespace {

OpBucket opBucket(const Analysis& a, const std::vector<size_t>& members) {
  OpBucket b;
  std::vector<int64_t> durations;
  double busbw = 0;
  for (size_t i : members) {
    durations.push_back(a.collectives[i].duration_ns);
    busbw += a.collectives[i].busbw_gbps;
  }
  std::sort(durations.begin(), durations.end());
  b.count = static_cast<int64_t>(durations.size());
  for (int64_t d : durations) b.total_ns += d;
  b.p50_ns = percentile(durations, 0.5);
  b.p90_ns = percentile(durations, 0.9);
  b.p99_ns = percentile(durations, 0.99);
  b.max_ns = durations.back();
  b.mean_busbw_gbps = busbw / static_cast<double>(durations.size());
  return b;
}

}  // namespace

void buildOpBuckets(AnalysisState& s) {
  Analysis* out = s.out;
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<size_t>> buckets;
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    const CollectiveInstance& c = out->collectives[i];
    buckets[{c.op, c.library, sizeBucketLo(c.bytes)}].push_back(i);
  }
  for (const auto& [key, members] : buckets) {
    OpBucket b = opBucket(*out, members);
    std::tie(b.op, b.library, b.size_lo) = key;
    b.size_hi = sizeBucketHi(b.size_lo);
    out->op_buckets.push_back(std::move(b));
  }
}

}  // namespace ringside::analyzer::detail
