// analyzer/analysis_ranks.cpp — the ranks stage: per rank its span, time inside collectives
// and time waiting for the last rank; and the op buckets (per op, library and size bucket).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analysis_state.h"
#include "ringside/analyzer/collective_math.h"

namespace ringside::analyzer::detail {

int64_t waitedInCalls(const Analysis& a, const CallTable::Rows& calls,
                      const std::vector<char>* only,
                      std::vector<std::pair<int64_t, int64_t>>* scratch) {
  scratch->clear();
  for (const Arrival& call : calls) {
    const auto i = static_cast<size_t>(call.instance);
    if (only != nullptr && (*only)[i] == 0) continue;
    const int64_t until = waitedUntil(call, a.collectives[i].last_start_ns);
    if (until > call.start_ns) scratch->emplace_back(call.start_ns, until);
  }
  if (scratch->empty()) return -1;
  std::sort(scratch->begin(), scratch->end());
  IntervalUnion u;
  for (const auto& [from, to] : *scratch) u.add(from, to);
  return u.total();
}

void buildRanks(AnalysisState& s) {
  Analysis* out = s.out;
  // Per rank its waiting: a union, not a sum: concurrent calls (DDP's bucket all-reduces) wait
  // at the same time, and a sum would exceed the time in collectives. A rank at a time.
  std::map<int, int64_t> wait;
  std::vector<std::pair<int64_t, int64_t>> scratch;
  s.arrivals.forEachRank([&](int rank, const CallTable::Rows& calls) {
    const int64_t ns = waitedInCalls(*out, calls, nullptr, &scratch);
    if (ns >= 0) wait[rank] = ns;
  });
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
  std::vector<std::pair<int64_t, int64_t>> intervals;
  double busbw = 0;
  int64_t with_busbw = 0;
  b.min_bytes = INT64_MAX;
  for (size_t i : members) {
    const CollectiveInstance& c = a.collectives[i];
    durations.push_back(c.duration_ns);
    if (c.gpu_timed) intervals.emplace_back(c.gpu_start_ns, c.gpu_end_ns);
    else intervals.emplace_back(c.last_start_ns, std::max(c.last_start_ns, c.last_end_ns));
    // Bus bandwidth needs two ranks: an instance one rank recorded (a rank file read alone)
    // has none, and would drag the mean to "0 B/s".
    if (c.ranks >= 2) {
      busbw += c.busbw_gbps;
      ++with_busbw;
    }
    b.min_bytes = std::min(b.min_bytes, c.bytes);
    b.max_bytes = std::max(b.max_bytes, c.bytes);
  }
  std::sort(durations.begin(), durations.end());
  std::sort(intervals.begin(), intervals.end());
  IntervalUnion wall;
  for (const auto& [from, to] : intervals) wall.add(from, to);
  b.wall_ns = wall.total();
  b.count = static_cast<int64_t>(durations.size());
  for (int64_t d : durations) b.total_ns = addSaturated(b.total_ns, d);
  b.p50_ns = percentile(durations, 0.5);
  b.p90_ns = percentile(durations, 0.9);
  b.p99_ns = percentile(durations, 0.99);
  b.max_ns = durations.back();
  b.mean_busbw_gbps = with_busbw > 0 ? busbw / static_cast<double>(with_busbw) : -1;
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
  // Per op over all sizes.
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_op;
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    by_op[{out->collectives[i].op, out->collectives[i].library}].push_back(i);
  }
  for (const auto& [key, members] : by_op) {
    OpBucket b = opBucket(*out, members);
    OpStats o;
    std::tie(o.op, o.library) = key;
    o.count = b.count;
    o.wall_ns = b.wall_ns;
    o.total_ns = b.total_ns;
    for (size_t i : members) o.bytes = addSaturated(o.bytes, out->collectives[i].bytes);
    out->ops.push_back(std::move(o));
  }
  std::stable_sort(out->ops.begin(), out->ops.end(),
                   [](const OpStats& x, const OpStats& y) { return x.wall_ns > y.wall_ns; });
}

}  // namespace ringside::analyzer::detail
