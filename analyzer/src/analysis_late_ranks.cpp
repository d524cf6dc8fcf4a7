// analyzer/analysis_late_ranks.cpp — the late-ranks rule (and clock-uncertainty, its check
// against clocks that disagree): ranks waiting inside collectives for one rank that arrives
// last. The culprit is the rank that caused most of the waiting (blame, analysis_blame.cpp),
// not the one last most often: a rank late at one of a step's three calls, or in one step
// only, is named by the waiting it caused.
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis_state.h"
#include "findings_internal.h"
#include "ringside/analyzer/collective_math.h"
#include "ringside/format/units.h"

namespace ringside::analyzer::detail {
namespace {

using format::durationFixed;
using format::fixed;

// The rank named must have caused 1.5x the share of the waiting chance would give it.
constexpr double kOverChance = 1.5;
// The waiting it causes must be at least this share of the other ranks' time.
constexpr double kMinCostShare = 0.05;
// The culprit named must have caused at least this share of all the waiting (blame).
constexpr double kMinBlameShare = 0.5;
// ... and compute at least this much longer than the others in the steps it held up (and, over
// the run, enough to explain the waiting: extraComputeNs): a rank
// last by a few per cent of compute (a 2-rank job where one rank is always a little behind)
// is jitter, the waiting warning's case.
constexpr double kMinExtraCompute = 0.1;

// What the calls say about rank `rank` arriving last.
struct LateEvidence {
  int64_t calls = 0;                     // calls it entered last (2+ ranks, a skew)
  std::vector<int64_t> skews;            // their skews, sorted
  std::vector<int64_t> uncertainties;    // clock uncertainty of each skew (lateUncertainty), sorted
  int64_t caused_ns = 0;                 // the others' waiting in those calls (unions, summed)
  int ranks_waiting = 0;                 // other ranks that waited in them
};

// The clock uncertainty between one rank's host and other ranks' hosts (0 on one clock), each
// host pair computed once (ClockModel::pairUncertaintyNs).
class UncertaintyFrom {
 public:
  UncertaintyFrom(const storage::ClockModel& clock, int rank)
      : clock_(clock), from_(clock.domainOf(rank)), one_clock_(clock.domains.size() < 2) {}
  int64_t to(int rank) {
    if (one_clock_) return 0;
    const int32_t d = clock_.domainOf(rank);
    auto [it, fresh] = known_.try_emplace(d, 0);
    if (fresh) it->second = clock_.pairUncertaintyNs(from_, d);
    return it->second;
  }

 private:
  const storage::ClockModel& clock_;
  int32_t from_;
  bool one_clock_;
  std::unordered_map<int32_t, int64_t> known_;
};

// How much of `late`'s skew in one call (its entry at `late_start` minus the first's at
// `first_start`) the clocks could explain. It entered certainly after rank b when it did so later
// by more than the uncertainty between their hosts; counted from the first entry that is b's lag
// behind the first plus that uncertainty, and the least over every b that entered before it
// (the first itself gives the uncertainty between the late rank's and the first's host). A rank
// on the late rank's own host, or one whose host exchanged messages with it, bounds it far more
// tightly than the first to enter on a host many hops away in the clock fit.
int64_t lateUncertainty(const CallTable::Rows& arrivals, int late, int64_t late_start,
                        int64_t first_start, UncertaintyFrom* from) {
  int64_t least = INT64_MAX;
  for (const Arrival& arr : arrivals) {
    if (arr.rank == late || arr.start_ns >= late_start) continue;
    least = std::min(least, addSaturated(arr.start_ns - first_start, from->to(arr.rank)));
    if (least == 0) break;
  }
  return least == INT64_MAX ? 0 : least;
}

LateEvidence lateEvidence(const AnalysisState& s, int rank) {
  const Analysis& a = *s.out;
  LateEvidence e;
  UncertaintyFrom clocks(a.clock, rank);
  std::vector<char> held_up(a.collectives.size(), 0);  // the calls it entered last
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const CollectiveInstance& c = a.collectives[i];
    if (c.ranks < 2 || c.arrival_skew_ns <= 0 || c.straggler_rank != rank) continue;
    held_up[i] = 1;
    ++e.calls;
    e.skews.push_back(c.arrival_skew_ns);
    int64_t first_start = c.last_start_ns;
    for (const Arrival& arr : s.arrivals[i]) first_start = std::min(first_start, arr.start_ns);
    e.uncertainties.push_back(
        lateUncertainty(s.arrivals[i], rank, c.last_start_ns, first_start, &clocks));
  }
  std::sort(e.skews.begin(), e.skews.end());
  std::sort(e.uncertainties.begin(), e.uncertainties.end());
  // The others' waiting in those calls: per waiting rank the union of its intervals, a rank at
  // a time (not every waiting call row of the run at once).
  std::vector<std::pair<int64_t, int64_t>> scratch;
  s.arrivals.forEachRank([&](int victim, const CallTable::Rows& calls) {
    if (victim == rank) return;
    const int64_t ns = waitedInCalls(a, calls, &held_up, &scratch);
    if (ns < 0) return;
    e.caused_ns += ns;
    ++e.ranks_waiting;
  });
  return e;
}

// How often `rank` arrived last: by step (Analysis::steps) or by call. *share: of the steps or
// calls; *late_by: median skew when it was last; *units: "steps" or "collectives".
void lastStats(const Analysis& a, int rank, double* share, int64_t* late_by, std::string* units,
               int64_t* times, int64_t* of) {
  std::vector<int64_t> skews;
  int64_t total = 0;
  if (a.steps.steps.size() >= 2) {
    *units = "steps";
    for (const StepStats& st : a.steps.steps) {
      ++total;
      if (st.late_rank == rank) skews.push_back(st.late_by_ns);
    }
  } else {
    *units = "collectives";
    for (const CollectiveInstance& c : a.collectives) {
      if (c.ranks < 2) continue;
      ++total;
      if (c.arrival_skew_ns > 0 && c.straggler_rank == rank) skews.push_back(c.arrival_skew_ns);
    }
  }
  std::sort(skews.begin(), skews.end());
  *times = static_cast<int64_t>(skews.size());
  *of = total;
  *share = total > 0 ? static_cast<double>(skews.size()) / static_cast<double>(total) : 0.0;
  *late_by = skews.empty() ? 0 : percentile(skews, 0.5);
}

// The rank that caused the most waiting (RankStats::caused_wait_ns), *caused its share and
// *total all ranks' caused waiting; -1 when nobody waited.
int topCulprit(const Analysis& a, int64_t* caused, int64_t* total) {
  int rank = -1;
  *caused = 0;
  *total = 0;
  for (const RankStats& r : a.ranks) {
    *total += r.caused_wait_ns;
    if (r.caused_wait_ns > *caused) *caused = r.caused_wait_ns, rank = r.rank;
  }
  return rank;
}

// "caused 83% of the waiting (1.20 s of 1.45 s)".
std::string blameClause(int64_t caused, int64_t total) {
  return "caused " + fixed(100.0 * static_cast<double>(caused) / static_cast<double>(total), 0) +
         "% of the waiting (" + durationFixed(caused) + " of " + durationFixed(total) + ")";
}

// Median compute per step of `rank` and of the other ranks, in the steps where `rank` caused
// the most waiting and that hold half of the waiting it caused there (the worst first): a rank
// late in one step only computes longer in that step. -1: no steps.
std::pair<int64_t, int64_t> computePerStep(const Analysis& a, int rank) {
  if (a.steps.steps.size() < 2) return {-1, -1};
  std::map<int64_t, std::pair<int, int64_t>> top;  // step -> (rank, caused) with the most
  for (const StepRankStats& r : a.steps.per_rank) {
    auto [it, fresh] = top.try_emplace(r.step, r.rank, r.caused_wait_ns);
    if (!fresh && r.caused_wait_ns > it->second.second) it->second = {r.rank, r.caused_wait_ns};
  }
  std::vector<std::pair<int64_t, int64_t>> held;  // (-caused, step) where `rank` is on top
  int64_t sum = 0;
  for (const auto& [step, who] : top) {
    if (who.first != rank || who.second <= 0) continue;
    held.emplace_back(-who.second, step);
    sum += who.second;
  }
  std::sort(held.begin(), held.end());
  std::set<int64_t> judged;
  for (int64_t got = 0; const auto& [minus, step] : held) {
    if (2 * got >= sum) break;
    judged.insert(step);
    got -= minus;
  }
  std::vector<int64_t> mine, others;
  for (const StepRankStats& r : a.steps.per_rank) {
    if (judged.count(r.step) == 0) continue;
    (r.rank == rank ? mine : others).push_back(r.compute_ns());
  }
  if (mine.empty() || others.empty()) return {-1, -1};
  std::sort(mine.begin(), mine.end());
  std::sort(others.begin(), others.end());
  return {percentile(mine, 0.5), percentile(others, 0.5)};
}

// Over every step but the first: the rank's compute minus the median of the others' in that
// step, summed (-1: no steps); *caused: the waiting the rank caused in those steps. Jitter sums
// to about nothing; a rank that computes more sums to its surplus. Unlike computePerStep() it
// does not pick the steps the rank held up, so it cannot be biased by them. The first step
// carries each rank's one-time warm-up (autograd, allocator: a rank 12 ms slower there on a
// busy host), no sign of a late rank.
int64_t extraComputeNs(const Analysis& a, int rank, int64_t* caused) {
  *caused = 0;
  if (a.steps.steps.size() < 2) return -1;
  const int64_t first_step = a.steps.steps.front().step;
  int64_t total = 0;
  std::vector<int64_t> others;
  int64_t mine = INT64_MIN;
  auto flush = [&] {
    if (mine != INT64_MIN && !others.empty()) {
      std::sort(others.begin(), others.end());
      total += mine - percentile(others, 0.5);
    }
    others.clear();
    mine = INT64_MIN;
  };
  for (size_t i = 0; i < a.steps.per_rank.size(); ++i) {  // by step, then rank
    const StepRankStats& r = a.steps.per_rank[i];
    if (i > 0 && a.steps.per_rank[i - 1].step != r.step) flush();
    if (r.step == first_step) continue;
    if (r.rank == rank) {
      mine = r.compute_ns();
      *caused += r.caused_wait_ns;
    } else {
      others.push_back(r.compute_ns());
    }
  }
  flush();
  return total;
}

// Last in no more steps than chance gives a rank (up to kOverChance times 1 in N) and late by
// less than a step's median time in every step it was last: the jitter of a busy host, which
// makes some rank last in every step and can give one rank most of the blame through one slow
// step (a 2-rank job on a crowded machine: last in 3 of 6 steps by 0.2-1.2 ms in 3-12 ms steps).
// A rank late rarely but by more than a step (a stalled data loader, a checkpoint) stands out of
// that jitter and is named.
bool lateByChance(const Analysis& a, int rank, double share) {
  const size_t nranks = a.ranks.size();
  if (a.steps.steps.size() < 2 || share * static_cast<double>(nranks) > kOverChance) return false;
  std::vector<int64_t> times;
  int64_t most_late = 0;  // its largest lateness: the one stall among jitter, if any
  for (const StepStats& st : a.steps.steps) {
    if (st.complete && st.end_ns > st.start_ns) times.push_back(st.end_ns - st.start_ns);
    if (st.late_rank == rank) most_late = std::max(most_late, st.late_by_ns);
  }
  if (times.empty()) return false;
  std::sort(times.begin(), times.end());
  return most_late < percentile(times, 0.5);
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
  // Who caused the waiting (blame), largest first.
  const bool by_step = a.steps.steps.size() >= 2;
  int64_t caused = 0, total = 0;
  const int top = topCulprit(a, &caused, &total);
  std::vector<std::pair<int64_t, int>> order;
  for (const RankStats& r : a.ranks) {
    if (r.caused_wait_ns > 0) order.emplace_back(-r.caused_wait_ns, r.rank);
  }
  std::sort(order.begin(), order.end());
  std::string who;
  for (size_t i = 0; i < order.size() && i < 4; ++i) {
    who += (i ? ", rank " : "rank ") + std::to_string(order[i].second) + " " +
           fixed(100.0 * static_cast<double>(-order[i].first) /
                     static_cast<double>(std::max<int64_t>(1, total)), 0) + "%";
  }
  // One rank caused most of it yet is no late rank (it computes no longer: it left the call
  // before last): say so rather than "varies".
  const std::string whose =
      top >= 0 && static_cast<double>(caused) >= kMinBlameShare * static_cast<double>(total)
          ? "; rank " + std::to_string(top) + " " + blameClause(caused, total) +
                " but does not compute longer than the others over the run"
          : "; the last to arrive varies";
  const std::string per_step =
      by_step ? " (" + durationFixed(wait / std::max<int64_t>(1, static_cast<int64_t>(
                                                                    a.ranks.size() *
                                                                    a.steps.steps.size()))) +
                    " per rank and step)"
              : "";
  Finding f = makeFinding(
      "waiting",
      "ranks wait " + fixed(100 * of_comm, 0) + "% of their collective time for late ranks" +
          per_step + whose,
      "waiting caused (blame): " + (who.empty() ? std::string("none") : who) +
          "; waiting " + durationFixed(wait) + " of " + durationFixed(comm) +
          " in collectives, summed over the ranks");
  f.cost_ns = wait;
  findings->push_back(std::move(f));
}

}  // namespace

int blameCulprit(const Analysis& a, int64_t* caused, int64_t* total) {
  const int rank = topCulprit(a, caused, total);
  const int nranks = static_cast<int>(a.ranks.size());
  if (rank < 0 || nranks < 2 || *total <= 0) return -1;
  const double blame = static_cast<double>(*caused) / static_cast<double>(*total);
  return blame < std::max(kMinBlameShare, kOverChance / nranks) ? -1 : rank;
}

void lateRankFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  const size_t before = findings->size();
  lateRankFinding(s, findings);
  if (findings->size() == before) waitingFinding(*s.out, findings);
}

void lateRankFinding(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  const int nranks = static_cast<int>(a.ranks.size());
  int64_t caused = 0, total = 0;
  const int rank = blameCulprit(a, &caused, &total);
  if (rank < 0 || nranks < 2) return;
  double share = 0;
  int64_t late_by = 0, times = 0, of = 0;
  std::string units;
  lastStats(a, rank, &share, &late_by, &units, &times, &of);
  const LateEvidence e = lateEvidence(s, rank);
  if (late_by == 0) late_by = percentile(e.skews, 0.5);
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
            format::duration(uncertainty) +
            " against the ranks that arrived before it (between the two hosts, plus their lag "
            "behind the first); " + last_in));
    return;
  }
  int64_t others_time = 0, wait = 0, comm = 0;
  for (const RankStats& r : a.ranks) {
    if (r.rank != rank) others_time += r.span_ns;
    wait += r.wait_ns;
    comm += r.comm_ns;
  }
  if (static_cast<double>(caused) < kMinCostShare * static_cast<double>(others_time)) return;
  if (lateByChance(a, rank, share)) return;
  const auto [mine, others] = computePerStep(a, rank);
  // Last to arrive, yet hardly longer between its calls than the others: it left the previous call
  // last (the collective itself finishes last there, e.g. a ring's last receiver, or its
  // process got the CPU back last on a busy host). That is waiting without a rank to blame
  // (the waiting finding), not a late rank: nothing in what the rank does makes it late.
  const double enough = (1 + kMinExtraCompute) * static_cast<double>(others);
  if (mine >= 0 && static_cast<double>(mine) <= enough) return;
  // ... and over the whole run its extra compute explains at least half the waiting it caused
  // each other rank (jitter on a busy host makes any rank late in some steps, not in sum).
  int64_t caused_later = 0;
  const int64_t extra = extraComputeNs(a, rank, &caused_later);
  const int64_t victims = std::max(1, nranks - 1);
  if (a.steps.steps.size() >= 2 && 2 * extra < caused_later / victims) return;
  const double wait_pct = comm > 0 ? 100.0 * static_cast<double>(wait) / static_cast<double>(comm)
                                   : 0.0;
  const std::string r = std::to_string(rank);
  Finding f = makeFinding(
      "late-ranks",
      "rank " + r + " " + blameClause(caused, total) + ": ranks wait " + fixed(wait_pct, 0) +
          "% of their collective time; rank " + r + " arrives last in " +
          fixed(100 * share, 0) + "% of " + units + " by a median " + durationFixed(late_by) +
          computeClause(mine, others),
      "rank " + r + " " + last_in + (uncertainty > 0 ? " (beyond the clock uncertainty ±" +
                                                           format::duration(uncertainty) + ")"
                                                     : "") +
          "; the others waited " + durationFixed(e.caused_ns) + " for it (" +
          std::to_string(e.ranks_waiting) + " ranks)" +
          (mine >= 0 ? "; median compute in the steps it held up " + durationFixed(mine) +
                           " on rank " + r + " vs " + durationFixed(others) + " on the others"
                     : ""));
  f.action = "look at what rank " + r +
             " does between collectives: data loading, an uneven batch or sequence length, a "
             "slower or busier host";
  f.cost_ns = caused;
  findings->push_back(std::move(f));
}

}  // namespace ringside::analyzer::detail
