// analyzer/analysis_cpu.cpp — why a rank is late (issue 24): each rank's CPU time per training
// step against its wall time, its context switches, and its host's cores against the ranks on
// it (docs/metrics.md, "CPU"); the rules oversubscribed, descheduled and computes-more.
//
// The CPU samples are cumulative counters of the whole process taken about every 10 ms by the
// collector's writer thread; a step's CPU time is the difference of the counters interpolated
// at its start and end.
#include <algorithm>
#include <map>

#include "analysis_state.h"
#include "findings_internal.h"
#include "ringside/format/units.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer::detail {
namespace {

using format::durationFixed;
using format::fixed;

// A rank is busy when its CPU time plus its time waiting for a core is at least this share of its
// time outside collectives (it computes there, or would, rather than sleeping or waiting for
// input); a host is oversubscribed when it has more busy ranks than cores.
constexpr double kMinBusyShare = 0.5;
// computes-more: a rank's CPU per step is this much more than the other ranks' median, by at
// least this much, and this share of its step; on an oversubscribed host (ranks taking turns on
// the cores: one rank's CPU per step swings with who got the cores, and spin-waits burn CPU in
// turns), twice the others'. And its time outside collectives (compute) must be longer than the
// others' by this share of the extra CPU and this share of its step: CPU that a rank spends without
// taking longer makes no rank wait (a small share: with several threads computing, extra CPU shows
// as a fraction of it in time; a 2-rank no_sync job: 3.96 ms more CPU, 1.48 ms longer).
constexpr double kMoreCpuRatio = 1.2;
constexpr double kMoreCpuRatioCrowded = 2.0;
constexpr int64_t kMinMoreCpuNs = 500'000;
constexpr double kMinMoreCpuStepShare = 0.05;
constexpr double kMinLongerOfMoreCpu = 0.1;
constexpr double kMinLongerStepShare = 0.05;
// descheduled: waiting for a core this share of its time outside collectives and this many
// times the others' median (or, without run delays, this many involuntary switches per step and
// that many times the others'), while its CPU time is below this share of that time.
constexpr double kMinDelayOfCompute = 0.3;
constexpr double kMinInvoluntary = 10;
constexpr double kOthersRatio = 2;
constexpr double kMaxCpuOfCompute = 0.5;
// descheduled, the same work done later: a rank whose CPU is not more (computes-more's measure)
// yet whose time outside collectives is longer (by kMinLongerStepShare of its step), by extra
// waiting for a core at least this share of that extra time (the rest: blocking, or CPU below
// computes-more's floor). The others' run delay need not be kOthersRatio smaller: on a host crowded
// by other load every rank waits.
constexpr double kMinDelayOfLonger = 0.5;

struct Sample {
  int64_t t, cpu, vol, invol, delay;  // delay -1: unknown
};

// The counters at time t, interpolated between the samples around it; false outside them.
bool at(const std::vector<Sample>& v, int64_t t, Sample* out) {
  if (v.size() < 2 || t < v.front().t || t > v.back().t) return false;
  auto hi = std::lower_bound(v.begin(), v.end(), t, [](const Sample& s, int64_t x) { return s.t < x; });
  if (hi == v.begin()) hi = v.begin() + 1;
  const Sample& b = *hi;
  const Sample& a = *(hi - 1);
  const double f = b.t > a.t ? static_cast<double>(t - a.t) / static_cast<double>(b.t - a.t) : 1.0;
  auto lerp = [f](int64_t x, int64_t y) {
    return x + static_cast<int64_t>(f * static_cast<double>(y - x));
  };
  *out = {t, lerp(a.cpu, b.cpu), lerp(a.vol, b.vol), lerp(a.invol, b.invol),
          a.delay < 0 || b.delay < 0 ? -1 : lerp(a.delay, b.delay)};
  return true;
}

template <typename T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int coresOf(const std::map<std::string, std::string>& meta, int rank) {
  int best = -1;
  for (const char* key : {"cpu_cores_allowed", "cpu_cores_online"}) {
    auto it = meta.find("rank." + std::to_string(rank) + "." + key);
    if (it == meta.end()) it = meta.find(key);  // a single rank file
    if (it == meta.end()) continue;
    const int n = std::atoi(it->second.c_str());
    if (n > 0) best = best < 0 ? n : std::min(best, n);
  }
  return best;
}

RankCpuStats rankFigures(const Analysis& a, int rank, const std::vector<Sample>& samples) {
  RankCpuStats r;
  r.rank = rank;
  std::vector<int64_t> cpu, step, compute;
  std::vector<double> vol, invol;
  std::vector<int64_t> delay;
  int64_t cpu_sum = 0, step_sum = 0, wants_sum = 0, compute_sum = 0;
  for (const StepRankStats& st : a.steps.per_rank) {
    Sample from, to;
    if (st.rank != rank || st.step_ns() <= 0 || !at(samples, st.start_ns, &from) ||
        !at(samples, st.end_ns, &to)) {
      continue;
    }
    cpu.push_back(to.cpu - from.cpu);
    step.push_back(st.step_ns());
    compute.push_back(st.compute_ns());
    vol.push_back(static_cast<double>(to.vol - from.vol));
    invol.push_back(static_cast<double>(to.invol - from.invol));
    if (from.delay >= 0 && to.delay >= 0) delay.push_back(to.delay - from.delay);
    cpu_sum += to.cpu - from.cpu;
    wants_sum += to.cpu - from.cpu + (from.delay >= 0 && to.delay >= 0 ? to.delay - from.delay : 0);
    compute_sum += st.compute_ns();
    step_sum += st.step_ns();
  }
  r.steps = static_cast<int64_t>(cpu.size());
  r.cpu_ns = median(cpu);
  r.step_ns = median(step);
  r.compute_ns = median(compute);
  r.voluntary = median(vol);
  r.involuntary = median(invol);
  r.run_delay_ns = delay.size() == cpu.size() ? median(delay) : -1;
  r.busy_share = compute_sum > 0 ? static_cast<double>(wants_sum) / static_cast<double>(compute_sum) : 0;
  r.cpu_share = step_sum > 0 ? static_cast<double>(cpu_sum) / static_cast<double>(step_sum) : 0;
  return r;
}

int hostOf(const Analysis& a, int rank) {
  for (size_t h = 0; h < a.hosts.size(); ++h) {
    const std::vector<int>& ranks = a.hosts[h].ranks;
    if (std::binary_search(ranks.begin(), ranks.end(), rank)) return static_cast<int>(h);
  }
  return -1;
}

// Blame's culprit (blameCulprit: the rank that caused most of the waiting), the rank the CPU
// findings say is late; rank -1 when no rank caused most of it.
struct Culprit {
  int rank = -1;
  int64_t caused = 0, total = 0;
  bool busy = false;  // busy() over the run: it could be a victim of crowded cores
};

// Busy over the whole run (kMinBusyShare, on sums: a rank late by one long sleep is not busy
// then, though its median step is).
bool busy(const RankCpuStats& r) { return r.busy_share >= kMinBusyShare; }

Culprit culpritOf(const Analysis& a) {
  Culprit c;
  c.rank = blameCulprit(a, &c.caused, &c.total);
  for (const RankCpuStats& r : a.rank_cpu) c.busy = c.busy || (r.rank == c.rank && busy(r));
  return c;
}

std::string causedShare(const Culprit& c) {
  return fixed(100.0 * static_cast<double>(c.caused) / static_cast<double>(std::max<int64_t>(1, c.total)), 0) +
         "% of the waiting";
}

std::string lateClause(int rank, const Culprit& c) {
  return rank == c.rank ? " (it caused " + causedShare(c) + ")" : "";
}

std::string hostName(const Analysis& a, int host) {
  if (host < 0 || static_cast<size_t>(host) >= a.hosts.size()) return "?";
  const std::string& name = a.hosts[static_cast<size_t>(host)].name;
  return name.empty() ? "#" + std::to_string(host) : name;
}

// Every rank's value of one figure, sorted once: the other ranks' median for any rank without a
// sort per rank (at 16,384 ranks that was 16,384 sorts per figure). Without one `own` value the
// sorted list's element (n-1)/2 is median()'s element of the others.
class OthersMedian {
 public:
  template <typename F>
  OthersMedian(const Analysis& a, F figure) {
    for (const RankCpuStats& r : a.rank_cpu) sorted_.push_back(static_cast<double>(figure(r)));
    std::sort(sorted_.begin(), sorted_.end());
  }
  double of(double own) const {
    if (sorted_.size() < 2) return 0;
    const auto at =
        static_cast<size_t>(std::lower_bound(sorted_.begin(), sorted_.end(), own) - sorted_.begin());
    const size_t k = (sorted_.size() - 1) / 2;
    return k < at ? sorted_[k] : sorted_[k + 1];
  }

 private:
  std::vector<double> sorted_;
};

// The other ranks' medians the CPU rules compare a rank with.
struct OthersFigures {
  explicit OthersFigures(const Analysis& a)
      : cpu(a, [](const RankCpuStats& x) { return x.cpu_ns; }),
        compute(a, [](const RankCpuStats& x) { return x.compute_ns; }),
        involuntary(a, [](const RankCpuStats& x) { return x.involuntary; }),
        run_delay(a, [](const RankCpuStats& x) { return x.run_delay_ns; }) {}
  OthersMedian cpu, compute, involuntary, run_delay;
};

std::vector<int> oversubscribedHosts(const Analysis& a, const Culprit& late,
                                     std::vector<Finding>* findings) {
  std::vector<int> out;
  for (const HostCpuStats& h : a.host_cpu) {
    if (h.cores <= 0 || h.busy_ranks <= h.cores) continue;
    out.push_back(h.host);
    std::vector<int> ranks;
    std::vector<double> invol;
    bool has_late = false;
    for (const RankCpuStats& r : a.rank_cpu) {
      if (r.host != h.host) continue;
      ranks.push_back(r.rank);
      invol.push_back(r.involuntary);
      has_late = has_late || (r.rank == late.rank && late.busy);
    }
    int64_t wait = 0;
    for (const RankStats& r : a.ranks) {
      if (std::find(ranks.begin(), ranks.end(), r.rank) != ranks.end()) wait += r.wait_ns;
    }
    // A culprit that is not busy (it slept, blocked) caused its waiting itself, not the cores.
    const int64_t cost = late.rank >= 0 && !late.busy ? std::max<int64_t>(0, wait - late.caused) : wait;
    const std::string name = hostName(a, h.host), cores = std::to_string(h.cores);
    Finding f = makeFinding(
        "oversubscribed",
        "host " + name + " runs " + std::to_string(h.ranks) + " ranks on " + cores +
            " cores: they take turns on the cores" +
            (has_late ? ", so rank " + std::to_string(late.rank) + " is late (it caused " + causedShare(late) + ")"
                      : std::string()),
        std::to_string(h.busy_ranks) + " of ranks " + format::join(ranks, ",") +
            " compute or wait for a core >= half their time outside collectives; they keep " +
            fixed(h.cpu_share, 2) + " of its " + cores + " cores busy; median " +
            fixed(median(invol), 0) +
            " involuntary context switches per rank and step; the ranks waited " +
            durationFixed(wait) + " in collectives");
    f.cost_ns = cost;
    findings->push_back(std::move(f));
  }
  return out;
}

// computes-more's test of the CPU alone: a rank's CPU per step against the others' median
// `others` (descheduled's "the same work, done later" is its negation).
bool moreCpu(const RankCpuStats& r, double others, bool crowded) {
  const double more = static_cast<double>(r.cpu_ns) - others;
  return static_cast<double>(r.cpu_ns) >=
             (crowded ? kMoreCpuRatioCrowded : kMoreCpuRatio) * others &&
         more >= kMinMoreCpuNs && more >= kMinMoreCpuStepShare * static_cast<double>(r.step_ns);
}

void computesMore(const Analysis& a, const RankCpuStats& r, const Culprit& late, bool crowded,
                  const OthersFigures& o, std::vector<Finding>* findings) {
  const double others = o.cpu.of(static_cast<double>(r.cpu_ns));
  const double others_compute = o.compute.of(static_cast<double>(r.compute_ns));
  const double more = static_cast<double>(r.cpu_ns) - others;
  const double longer = static_cast<double>(r.compute_ns) - others_compute;
  if (a.rank_cpu.size() < 2 || !moreCpu(r, others, crowded) ||
      longer < kMinLongerOfMoreCpu * more ||
      longer < kMinLongerStepShare * static_cast<double>(r.step_ns)) {
    return;
  }
  const std::string rank = std::to_string(r.rank);
  Finding f = makeFinding(
      "computes-more",
      "rank " + rank + lateClause(r.rank, late) + " computes more: " +
          durationFixed(r.cpu_ns) + " of CPU per step vs " +
          durationFixed(static_cast<int64_t>(others)) + " on the other ranks (+" +
          fixed(others > 0 ? 100 * more / others : 0, 0) + "%)",
      "median per step on rank " + rank + ": CPU " + durationFixed(r.cpu_ns) +
          ", outside collectives " + durationFixed(r.compute_ns) + ", step " +
          durationFixed(r.step_ns) + " (" + std::to_string(r.steps) + " steps)");
  f.action = "look at the extra work rank " + rank +
             " does per step: an uneven batch or sequence length, or logging, checkpointing or "
             "evaluation on that rank only";
  f.cost_ns = static_cast<int64_t>(more) * r.steps;
  findings->push_back(std::move(f));
}

bool descheduled(const Analysis& a, const RankCpuStats& r, const Culprit& late,
                 const OthersFigures& o, std::vector<Finding>* findings) {
  const double compute = static_cast<double>(r.compute_ns);
  const double others_invol = o.involuntary.of(r.involuntary);
  const double others_delay = o.run_delay.of(static_cast<double>(r.run_delay_ns));
  // Little CPU for its time outside collectives; or the same work done later: not more CPU than
  // the others by computes-more's measure, and extra waiting for a core that makes up most of its
  // extra time outside collectives (kMinDelayOfLonger). Seen: a 2-rank job beside other load,
  // 3.37 ms of run delay per step against 1.27 ms; e2e.corpus-metric, 1.36 ms of CPU against
  // 1.05 ms (+30% but 0.32 ms) and 1.42 ms of run delay against 0.35 ms for 0.77 ms more outside
  // collectives (the ratio alone judged the CPU more: no rule fired); e2e.corpus-bn-cnn under a
  // load of 6 on 2 cores, the same CPU (1.88 / 1.85 ms), 2.09 ms of run delay against 1.48 ms for
  // 0.70 ms more (both ranks waited: not 2x the others'; the delay covered 87%, not all of it).
  const double others_cpu = o.cpu.of(static_cast<double>(r.cpu_ns));
  const double longer = compute - o.compute.of(compute);
  const bool same_work_later =
      !moreCpu(r, others_cpu, false) && r.run_delay_ns >= 0 && longer > 0 &&
      longer >= kMinLongerStepShare * static_cast<double>(r.step_ns) &&
      static_cast<double>(r.run_delay_ns) - others_delay >= kMinDelayOfLonger * longer;
  if (static_cast<double>(r.cpu_ns) >= kMaxCpuOfCompute * compute && !same_work_later) return false;
  const bool by_delay =
      r.run_delay_ns >= 0 && static_cast<double>(r.run_delay_ns) >= kMinDelayOfCompute * compute &&
      (same_work_later || static_cast<double>(r.run_delay_ns) >= kOthersRatio * others_delay);
  const bool by_switches = r.run_delay_ns < 0 && r.involuntary >= kMinInvoluntary &&
                           r.involuntary >= kOthersRatio * others_invol;
  if (!by_delay && !by_switches) return false;
  const std::string rank = std::to_string(r.rank);
  Finding f = makeFinding(
      "descheduled",
      "rank " + rank + lateClause(r.rank, late) + " waits for a core: " +
          (by_delay ? durationFixed(r.run_delay_ns) + " per step runnable but not running (others " +
                          durationFixed(static_cast<int64_t>(others_delay)) + ")"
                    : fixed(r.involuntary, 0) + " involuntary context switches per step (others " +
                          fixed(others_invol, 0) + ")"),
      "median per step on rank " + rank + ": CPU " + durationFixed(r.cpu_ns) + " of " +
          durationFixed(r.compute_ns) + " outside collectives; " + fixed(r.involuntary, 0) +
          " involuntary context switches; host " + hostName(a, r.host));
  f.action = "see what else runs on host " + hostName(a, r.host) +
             " (top, pidstat -w); give the ranks cores of their own (taskset, numactl, the "
             "scheduler's --cpus-per-task) or move the other load";
  f.cost_ns = std::max<int64_t>(0, r.compute_ns - r.cpu_ns) * r.steps;
  findings->push_back(std::move(f));
  return true;
}


// A late-ranks finding whose culprit the CPU findings explain by a core it waited for (its host
// oversubscribed and the culprit busy there, or the culprit descheduled) defers to that cause:
// the late-ranks finding goes, the cause takes its place as a problem (it says the culprit's
// share of the waiting). A rank that computes more stays late-ranks' (its sentence says so).
void deferLateRanks(const RankCpuStats& culprit, const std::vector<int>& crowded, bool descheduled,
                    size_t first_cpu, std::vector<Finding>* findings) {
  const bool crowded_host =
      busy(culprit) && std::find(crowded.begin(), crowded.end(), culprit.host) != crowded.end();
  if (!crowded_host && !descheduled) return;
  const std::string cause = descheduled ? "descheduled" : "oversubscribed";
  const std::string clause = "rank " + std::to_string(culprit.rank);
  auto late = std::find_if(findings->begin(), findings->begin() + static_cast<std::ptrdiff_t>(first_cpu),
                           [](const Finding& f) { return f.rule == "late-ranks"; });
  if (late == findings->begin() + static_cast<std::ptrdiff_t>(first_cpu)) return;
  for (size_t i = first_cpu; i < findings->size(); ++i) {
    Finding& f = (*findings)[i];
    if (f.rule != cause || f.message.find(clause) == std::string::npos) continue;
    f.severity = "problem";
    f.cost_ns = std::max(f.cost_ns, late->cost_ns);
    findings->erase(late);
    return;
  }
}

}  // namespace

bool readCpu(AnalysisState& s) {
  Analysis& a = *s.out;
  if (a.steps.per_rank.empty()) return true;
  std::map<int, std::vector<Sample>> samples;
  bool ok = s.reader.forEachCpuSample(
      [&](int32_t rank, const storage::CpuSampleRow& row) {
        if (s.rankOk(rank)) {
          samples[rank].push_back(
              {row.t_ns, row.cpu_ns, row.voluntary, row.involuntary, row.run_delay_ns});
        }
        return true;
      },
      s.error);
  if (!ok) return false;
  const std::map<std::string, std::string> meta = s.reader.meta();
  std::map<int, HostCpuStats> hosts;
  for (auto& [rank, v] : samples) {
    std::sort(v.begin(), v.end(), [](const Sample& x, const Sample& y) { return x.t < y.t; });
    RankCpuStats r = rankFigures(a, rank, v);
    if (r.steps == 0) continue;
    r.host = hostOf(a, rank);
    HostCpuStats& h = hosts[r.host];
    h.host = r.host;
    const int cores = coresOf(meta, rank);
    if (cores > 0) h.cores = h.cores < 0 ? cores : std::min(h.cores, cores);
    ++h.ranks;
    h.cpu_share += r.cpu_share;
    const int64_t wants = r.cpu_ns + std::max<int64_t>(0, r.run_delay_ns);
    if (static_cast<double>(wants) >= kMinBusyShare * static_cast<double>(r.compute_ns)) ++h.busy_ranks;
    a.rank_cpu.push_back(r);
  }
  for (const auto& [index, h] : hosts) a.host_cpu.push_back(h);
  return true;
}

void cpuFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  if (a.rank_cpu.empty()) return;
  const Culprit late = culpritOf(a);
  const size_t first_cpu = findings->size();
  const std::vector<int> crowded = oversubscribedHosts(a, late, findings);
  const RankCpuStats* culprit = nullptr;
  bool culprit_descheduled = false;
  const OthersFigures others(a);
  for (const RankCpuStats& r : a.rank_cpu) {
    const bool on_crowded = std::find(crowded.begin(), crowded.end(), r.host) != crowded.end();
    computesMore(a, r, late, on_crowded, others, findings);
    const bool off = !on_crowded && descheduled(a, r, late, others, findings);
    if (r.rank == late.rank) culprit = &r, culprit_descheduled = off;
  }
  if (culprit != nullptr) deferLateRanks(*culprit, crowded, culprit_descheduled, first_cpu, findings);
}

}  // namespace ringside::analyzer::detail
