// analyzer/analysis_late_ranks.cpp — the late-ranks rule (and clock-uncertainty, its check
// against clocks that disagree): ranks waiting inside collectives for one rank that arrives
// last, by training step when the job has steps (analysis_steps.cpp), else by call.
#include <algorithm>
#include <map>
#include <set>

#include "analysis_state.h"
#include "findings_internal.h"
#include "ringside/format/units.h"

namespace ringside::analyzer::detail {
namespace {

using format::durationFixed;
using format::fixed;

// The rank named must be last in at least this share of the steps (or calls), and in 1.5x the
// share chance would give it among the ranks.
constexpr double kMinLastShare = 0.6;
constexpr double kOverChance = 1.5;
// The waiting it causes must be at least this share of the other ranks' time.
constexpr double kMinCostShare = 0.05;

// What the calls say about rank `rank` arriving last.
struct LateEvidence {
  int64_t calls = 0;                     // calls it entered last (2+ ranks, a skew)
  std::vector<int64_t> skews;            // their skews, sorted
  std::vector<int64_t> uncertainties;    // clock uncertainty vs the first to enter, sorted
  int64_t caused_ns = 0;                 // the others' waiting in those calls (unions, summed)
  int ranks_waiting = 0;                 // other ranks that waited in them
};

LateEvidence lateEvidence(const AnalysisState& s, int rank) {
  const Analysis& a = *s.out;
  LateEvidence e;
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> waits;
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const CollectiveInstance& c = a.collectives[i];
    if (c.ranks < 2 || c.arrival_skew_ns <= 0 || c.straggler_rank != rank) continue;
    ++e.calls;
    e.skews.push_back(c.arrival_skew_ns);
    int first = rank;
    int64_t first_start = c.last_start_ns;
    for (const Arrival& arr : s.arrivals[i]) {
      if (arr.start_ns < first_start) first = arr.rank, first_start = arr.start_ns;
      if (arr.rank == rank) continue;
      int64_t until = c.last_start_ns;
      if (arr.host_ns >= 0) until = std::min(until, arr.start_ns + arr.host_ns);
      if (until > arr.start_ns) waits[arr.rank].emplace_back(arr.start_ns, until);
    }
    e.uncertainties.push_back(clockUncertaintyNs(a.clock, first, rank));
  }
  std::sort(e.skews.begin(), e.skews.end());
  std::sort(e.uncertainties.begin(), e.uncertainties.end());
  for (auto& [r, intervals] : waits) {
    std::sort(intervals.begin(), intervals.end());
    IntervalUnion u;
    for (const auto& [from, to] : intervals) u.add(from, to);
    e.caused_ns += u.total();
    ++e.ranks_waiting;
  }
  return e;
}

// The rank most often last: by step (Analysis::steps) or by call. *share: of the steps or calls;
// *late_by: median skew when it was last; *units: "steps" or "collectives".
int mostOftenLast(const Analysis& a, double* share, int64_t* late_by, std::string* units,
                  int64_t* times, int64_t* of) {
  std::map<int, std::vector<int64_t>> last;
  int64_t total = 0;
  if (a.steps.steps.size() >= 2) {
    *units = "steps";
    for (const StepStats& st : a.steps.steps) {
      ++total;
      if (st.late_rank >= 0) last[st.late_rank].push_back(st.late_by_ns);
    }
  } else {
    *units = "collectives";
    for (const CollectiveInstance& c : a.collectives) {
      if (c.ranks < 2) continue;
      ++total;
      if (c.arrival_skew_ns > 0) last[c.straggler_rank].push_back(c.arrival_skew_ns);
    }
  }
  int best = -1;
  for (const auto& [rank, skews] : last) {
    if (best < 0 || skews.size() > last[best].size()) best = rank;
  }
  if (best < 0 || total == 0) return -1;
  std::vector<int64_t>& skews = last[best];
  std::sort(skews.begin(), skews.end());
  *times = static_cast<int64_t>(skews.size());
  *of = total;
  *share = static_cast<double>(skews.size()) / static_cast<double>(total);
  *late_by = percentile(skews, 0.5);
  return best;
}

// Median compute per step of `rank` and of the other ranks (-1: no steps).
std::pair<int64_t, int64_t> computePerStep(const Analysis& a, int rank) {
  std::vector<int64_t> mine, others;
  for (const StepRankStats& r : a.steps.per_rank) {
    (r.rank == rank ? mine : others).push_back(r.compute_ns());
  }
  if (mine.empty() || others.empty() || a.steps.steps.size() < 2) return {-1, -1};
  std::sort(mine.begin(), mine.end());
  std::sort(others.begin(), others.end());
  return {percentile(mine, 0.5), percentile(others, 0.5)};
}

// "its compute per step is 35% (20.1 ms) longer than the others'".
std::string computeClause(int64_t mine, int64_t others) {
  if (mine < 0) return "";
  if (mine <= others) return "; its compute per step is no longer than the others'";
  const std::string extra = durationFixed(mine - others);
  if (others <= 0) return "; its compute per step is " + extra + " longer than the others'";
  const double pct = 100.0 * static_cast<double>(mine - others) / static_cast<double>(others);
  return "; its compute per step is " + fixed(pct, 0) + "% (" + extra + ") longer than the others'";
}

// Waiting with no one rank to blame: at least this share of the ranks' collective time, and of
// their span.
constexpr double kMinWaitShareOfComm = 0.2;
constexpr double kMinWaitShareOfSpan = 0.02;

// "ranks wait 25% of their collective time for late ranks; the last to arrive varies": the
// waiting finding when no single rank is late often enough for late-ranks.
void waitingFinding(const Analysis& a, std::vector<Finding>* findings) {
  int64_t wait = 0, comm = 0, span = 0;
  for (const RankStats& r : a.ranks) {
    wait += r.wait_ns;
    comm += r.comm_ns;
    span += r.span_ns;
  }
  if (comm <= 0 || span <= 0) return;
  const double of_comm = static_cast<double>(wait) / static_cast<double>(comm);
  if (of_comm < kMinWaitShareOfComm ||
      static_cast<double>(wait) < kMinWaitShareOfSpan * static_cast<double>(span)) {
    return;
  }
  // Who arrived last, by step when there are steps, else by call.
  std::map<int, int64_t> last;
  int64_t judged = 0;
  const bool by_step = a.steps.steps.size() >= 2;
  if (by_step) {
    for (const StepStats& st : a.steps.steps) {
      if (st.late_rank < 0) continue;
      ++last[st.late_rank];
      ++judged;
    }
  } else {
    for (const CollectiveInstance& c : a.collectives) {
      if (c.ranks < 2 || c.arrival_skew_ns <= 0) continue;
      ++last[c.straggler_rank];
      ++judged;
    }
  }
  std::vector<std::pair<int64_t, int>> order;
  for (const auto& [rank, n] : last) order.emplace_back(-n, rank);
  std::sort(order.begin(), order.end());
  std::string who;
  for (size_t i = 0; i < order.size() && i < 4; ++i) {
    who += (i ? ", rank " : "rank ") + std::to_string(order[i].second) + " " +
           fixed(100.0 * static_cast<double>(-order[i].first) / static_cast<double>(std::max<int64_t>(1, judged)), 0) + "%";
  }
  const std::string per_step =
      by_step ? " (" + durationFixed(wait / std::max<int64_t>(1, static_cast<int64_t>(
                                                                    a.ranks.size() *
                                                                    a.steps.steps.size()))) +
                    " per rank and step)"
              : "";
  Finding f = makeFinding(
      "waiting",
      "ranks wait " + fixed(100 * of_comm, 0) + "% of their collective time for late ranks" +
          per_step + "; the last to arrive varies",
      "last to arrive in the " + std::string(by_step ? "steps" : "collectives") + ": " + who +
          "; waiting " + durationFixed(wait) + " of " + durationFixed(comm) +
          " in collectives, summed over the ranks");
  f.cost_ns = wait;
  findings->push_back(std::move(f));
}

}  // namespace

void lateRankFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  const size_t before = findings->size();
  lateRankFinding(s, findings);
  if (findings->size() == before) waitingFinding(*s.out, findings);
}

void lateRankFinding(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  double share = 0;
  int64_t late_by = 0, times = 0, of = 0;
  std::string units;
  const int rank = mostOftenLast(a, &share, &late_by, &units, &times, &of);
  const int nranks = static_cast<int>(a.ranks.size());
  if (rank < 0 || nranks < 2) return;
  if (share < std::max(kMinLastShare, kOverChance / nranks)) return;
  const LateEvidence e = lateEvidence(s, rank);
  const int64_t uncertainty = percentile(e.uncertainties, 0.5);
  const std::string last_in = "arrived last in " + std::to_string(times) + "/" +
                              std::to_string(of) + " " + units;
  // With 2+ clock domains a skew within the uncertainty between the two ranks is no evidence.
  if (uncertainty > 0 && late_by <= uncertainty) {
    findings->push_back(makeFinding(
        "clock-uncertainty",
        "rank " + std::to_string(rank) + " arrived last in " + fixed(100 * share, 0) + "% of " +
            units + ", within the clock uncertainty: not a late rank",
        "median skew " + format::duration(late_by) + " vs clock uncertainty ±" +
            format::duration(uncertainty) + " between its host and the first to arrive; " +
            last_in));
    return;
  }
  int64_t others_time = 0, wait = 0, comm = 0;
  for (const RankStats& r : a.ranks) {
    if (r.rank != rank) others_time += r.span_ns;
    wait += r.wait_ns;
    comm += r.comm_ns;
  }
  if (static_cast<double>(e.caused_ns) < kMinCostShare * static_cast<double>(others_time)) return;
  const auto [mine, others] = computePerStep(a, rank);
  // Last to arrive, yet no longer between its calls than the others: it left the previous call
  // last (the collective itself finishes last there, e.g. a ring's last receiver, or its
  // process got the CPU back last on a busy host). That is waiting without a rank to blame
  // (the waiting finding), not a late rank: nothing in what the rank does makes it late.
  if (mine >= 0 && mine <= others) return;
  const double wait_pct = comm > 0 ? 100.0 * static_cast<double>(wait) / static_cast<double>(comm)
                                   : 0.0;
  const std::string r = std::to_string(rank);
  Finding f = makeFinding(
      "late-ranks",
      "ranks wait " + fixed(wait_pct, 0) + "% of their collective time; rank " + r +
          " arrives last in " + fixed(100 * share, 0) + "% of " + units + " by a median " +
          durationFixed(late_by) + computeClause(mine, others),
      "rank " + r + " " + last_in + (uncertainty > 0 ? " (beyond the clock uncertainty ±" +
                                                           format::duration(uncertainty) + ")"
                                                     : "") +
          "; the others waited " + durationFixed(e.caused_ns) + " for it (" +
          std::to_string(e.ranks_waiting) + " ranks)" +
          (mine >= 0 ? "; median compute per step " + durationFixed(mine) + " on rank " + r +
                           " vs " + durationFixed(others) + " on the others"
                     : ""));
  f.action = "look at what rank " + r +
             " does between collectives: data loading, an uneven batch or sequence length, a "
             "slower or busier host";
  f.cost_ns = e.caused_ns;
  findings->push_back(std::move(f));
}

}  // namespace ringside::analyzer::detail
