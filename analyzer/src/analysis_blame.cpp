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
  int culprit = -1, victim = -1;
  int64_t step = -1;
  int64_t from = 0, to = 0;
};

// The waiting of each call, per culprit and victim; sets CollectiveInstance::caused_wait_ns.
std::vector<Piece> waitPieces(AnalysisState& s) {
  Analysis& a = *s.out;
  // Reserved for every arrival (one piece each at most): grown a piece at a time, 5 M pieces
  // (4,096 ranks x 1,220 calls) took 400 MB at the last growth, the viewer's peak.
  auto waited = [](const CollectiveInstance& c) {
    return c.ranks >= 2 && c.arrival_skew_ns > 0 && c.straggler_rank >= 0;
  };
  size_t arrivals = 0;
  for (size_t i = 0; i < a.collectives.size() && i < s.arrivals.size(); ++i)
    arrivals += waited(a.collectives[i]) ? s.arrivals[i].size() : 0;
  std::vector<Piece> pieces;
  pieces.reserve(arrivals);
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    CollectiveInstance& c = a.collectives[i];
    c.caused_wait_ns = 0;
    if (!waited(c)) continue;
    for (const Arrival& arr : s.arrivals[i]) {
      if (arr.rank == c.straggler_rank) continue;
      int64_t until = c.last_start_ns;
      if (arr.host_ns >= 0) until = std::min(until, arr.start_ns + arr.host_ns);
      if (until <= arr.start_ns) continue;
      c.caused_wait_ns += until - arr.start_ns;
      pieces.push_back({c.straggler_rank, arr.rank, c.step, arr.start_ns, until});
    }
  }
  return pieces;
}

}  // namespace

void assignBlame(AnalysisState& s) {
  Analysis& a = *s.out;
  std::vector<Piece> pieces = waitPieces(s);
  std::sort(pieces.begin(), pieces.end(), [](const Piece& x, const Piece& y) {
    return std::tie(x.culprit, x.victim, x.step, x.from) <
           std::tie(y.culprit, y.victim, y.step, y.from);
  });
  std::map<std::pair<int, int64_t>, int64_t> caused;  // (culprit, step) -> ns
  for (size_t k = 0; k < pieces.size();) {
    const Piece& g = pieces[k];
    int64_t total = 0, from = g.from, to = g.to;
    size_t j = k;
    for (; j < pieces.size() && pieces[j].culprit == g.culprit && pieces[j].victim == g.victim &&
           pieces[j].step == g.step;
         ++j) {
      if (pieces[j].from > to) {
        total += to - from;
        from = pieces[j].from;
      }
      to = std::max(to, pieces[j].to);
    }
    total += to - from;
    caused[{g.culprit, g.step}] += total;
    k = j;
  }
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
