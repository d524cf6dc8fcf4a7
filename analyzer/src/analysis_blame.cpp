// analyzer/analysis_blame.cpp — blame by caused wait (docs/metrics.md): in each call, the rank
// that entered last made every other rank wait from its own entry to that last entry (cut at
// its own return); that waiting is the last rank's doing. A rank's blame is the waiting it
// caused, per step and over the run. Per (culprit, victim, step) the intervals are united, as a
// rank's own waiting is (RankStats::wait_ns): concurrent calls (DDP's buckets) count once.
#include <algorithm>
#include <map>
#include <tuple>

#include "analysis_state.h"

namespace ringside::analyzer::detail {
namespace {

struct Piece {
  int culprit = -1;
  int64_t step = -1;
  int64_t from = 0, to = 0;
};

bool waited(const CollectiveInstance& c) {
  return c.ranks >= 2 && c.arrival_skew_ns > 0 && c.straggler_rank >= 0;
}

// One victim's waiting per (culprit, step), united, added to *caused; and each call's waiting to
// its instance (CollectiveInstance::caused_wait_ns). Victim by victim from the call table: the
// pieces of one rank at a time (its calls), never one per call row of the run.
void victimWaits(Analysis& a, int victim, const CallTable::Rows& calls, std::vector<Piece>* pieces,
                 std::map<std::pair<int, int64_t>, int64_t>* caused) {
  pieces->clear();
  for (const Arrival& arr : calls) {
    CollectiveInstance& c = a.collectives[static_cast<size_t>(arr.instance)];
    if (!waited(c) || victim == c.straggler_rank) continue;
    const int64_t until = waitedUntil(arr, c.last_start_ns);
    if (until <= arr.start_ns) continue;
    c.caused_wait_ns += until - arr.start_ns;
    pieces->push_back({c.straggler_rank, c.step, arr.start_ns, until});
  }
  std::sort(pieces->begin(), pieces->end(), [](const Piece& x, const Piece& y) {
    return std::tie(x.culprit, x.step, x.from) < std::tie(y.culprit, y.step, y.from);
  });
  for (size_t k = 0; k < pieces->size();) {
    const Piece& g = (*pieces)[k];
    int64_t total = 0, from = g.from, to = g.to;
    size_t j = k;
    for (; j < pieces->size() && (*pieces)[j].culprit == g.culprit && (*pieces)[j].step == g.step;
         ++j) {
      if ((*pieces)[j].from > to) {
        total += to - from;
        from = (*pieces)[j].from;
      }
      to = std::max(to, (*pieces)[j].to);
    }
    total += to - from;
    (*caused)[{g.culprit, g.step}] += total;
    k = j;
  }
}

}  // namespace

void assignBlame(AnalysisState& s) {
  Analysis& a = *s.out;
  for (CollectiveInstance& c : a.collectives) c.caused_wait_ns = 0;
  std::map<std::pair<int, int64_t>, int64_t> caused;  // (culprit, step) -> ns
  std::vector<Piece> pieces;
  s.arrivals.forEachRank([&](int victim, const CallTable::Rows& calls) {
    victimWaits(a, victim, calls, &pieces, &caused);
  });
  std::vector<Piece>().swap(pieces);
  std::map<int, RankStats*> by_rank;
  for (RankStats& r : a.ranks) {
    r.caused_wait_ns = 0;
    by_rank[r.rank] = &r;
  }
  for (const auto& [key, ns] : caused) {
    auto r = by_rank.find(key.first);
    if (r != by_rank.end()) r->second->caused_wait_ns += ns;
    if (key.second < 0) continue;
    auto sr = std::lower_bound(a.steps.per_rank.begin(), a.steps.per_rank.end(),
                               std::make_pair(key.second, key.first),
                               [](const StepRankStats& x, const std::pair<int64_t, int>& k) {
                                 return std::tie(x.step, x.rank) < std::tie(k.first, k.second);
                               });
    if (sr != a.steps.per_rank.end() && sr->step == key.second && sr->rank == key.first) {
      sr->caused_wait_ns = ns;
    }
  }
}

}  // namespace ringside::analyzer::detail
