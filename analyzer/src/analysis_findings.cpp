// analyzer/analysis_findings.cpp — the findings stage: the rules of findings.h (the GPU ones
// live in gpu_analysis.cpp), most important first. Each rule emits through makeFinding(), which
// takes the severity from the table.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "analysis_call_rates.h"
#include "analysis_state.h"
#include "ringside/analyzer/summary.h"
#include "findings_internal.h"
#include "gpu_analysis.h"
#include "ringside/format/units.h"

namespace ringside::analyzer::detail {
namespace {

using format::fixed;

void metaFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  if (!a.cut_off_ranks.empty()) {
    std::string ranks = format::join(a.cut_off_ranks, ",");
    findings->push_back(makeFinding(
        "cut-off", "rank(s) " + ranks + " cut off: their trace ends early (killed or crashed)",
        "cut_off_ranks=" + ranks));
  }
  if (!s.meta.live.empty()) {
    const std::string ranks = formatRankList(s.meta.live);
    findings->push_back(makeFinding(
        "still-running",
        "rank(s) " + ranks + " were still running when this trace was merged: their trace ends "
        "where the merge read it (merge again once the job has ended)",
        "live_ranks=" + ranks));
  }
  if (!a.missing_ranks.empty()) {
    // A long list (a large world with few files) as ranges: "1-4095", not 4095 numbers.
    std::string ranks = a.missing_ranks.size() <= 32 ? format::join(a.missing_ranks, ",")
                                                     : formatRankList(a.missing_ranks);
    std::string evidence = "world_size=" + std::to_string(a.world_size) + " missing_ranks=" + ranks;
    // A file that exists but could not be read is not a file that was never written.
    if (s.meta.rank_file) {
      findings->push_back(makeFinding(
          "missing-ranks",
          "rank(s) " + ranks + " are not in this file: it is one rank's file (merge the job's "
          "rank files: ringside merge FOLDER -o trace.sqlite)",
          evidence));
    } else if (s.meta.skipped.empty()) {
      findings->push_back(
          makeFinding("missing-ranks", "rank(s) " + ranks + " have no trace file", evidence));
    } else {
      findings->push_back(makeFinding(
          "missing-ranks",
          "rank(s) " + ranks + " have no usable trace file" + skippedInputsNote(s.meta.skipped),
          evidence + " skipped_inputs=" + std::to_string(s.meta.skipped.size())));
    }
  }
  for (const auto& [reason, ranks] : s.meta.inactive) {
    findings->push_back(makeFinding(
        "interposition-inactive",
        "rank(s) " + format::join(ranks, ",") + ": " + reason + " (nothing recorded there)",
        "interposition=" + reason));
  }
}

// One link's traffic for one phase group.
struct GroupRate {
  double rate;  // bytes / busy ns (GB/s)
  size_t link;  // index into s.links
  int64_t bytes, busy_ns;
};

// Per phase group: the rate of every link that carried bytes for it. Bytes from the send rows,
// busy time from the recv rows where the group has them (see LinkStats::busy_ns: send-side
// durations end when the bytes reach the socket buffer).
std::map<PhaseGroupKey, std::vector<GroupRate>> ratesByPhaseGroup(const AnalysisState& s) {
  std::map<PhaseGroupKey, std::vector<GroupRate>> rates;
  for (size_t li = 0; li < s.links.size(); ++li) {
    const SideAcc& recv_side = s.links[li].recv;
    const SideAcc& side = s.links[li].send.messages == 0 ? recv_side : s.links[li].send;
    for (const auto& [group, traffic] : side.by_group) {
      int64_t busy = traffic.busy.total();
      const GroupTraffic* received = recv_side.findGroup(group);
      if (received != nullptr && received->busy.total() > 0) busy = received->busy.total();
      if (busy > 0 && traffic.bytes > 0) {
        rates[group].push_back(
            {static_cast<double>(traffic.bytes) / static_cast<double>(busy), li, traffic.bytes,
             busy});
      }
    }
  }
  return rates;
}

// Slow link: bytes/busy < 1/3 of the median of links of the same phase group, with enough bytes
// to judge a rate by, and further below the median than the group's links spread around it
// (3 median absolute deviations): a link that is merely the slowest of a noisy group is not one.
// And never on the evidence of one call: judged call by call (analysis_call_rates.h), it was
// slow so in calls holding >= half of its bytes, the largest of them left out >= a quarter
// (CallEvidence). DDP broadcasts its parameters once at start-up; that one call, scheduled late
// on a crowded host, named a link.
void slowLinkFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  constexpr int64_t kMinBytes = int64_t{1} << 20;
  std::set<size_t> named;
  for (const auto& [key, list] : ratesByPhaseGroup(s)) {
    if (list.size() < 3) continue;
    std::vector<double> rates;
    for (const GroupRate& r : list) rates.push_back(r.rate);
    const RateSpread group_rates(std::move(rates));
    const double median = group_rates.median;
    for (const GroupRate& r : list) {
      if (!group_rates.slow(r.rate) || r.bytes < kMinBytes) continue;
      const CallEvidence* calls = findEntry(s.links[r.link].calls, key);
      if (calls == nullptr || !calls->slowInSeveralCalls()) continue;
      if (!named.insert(r.link).second) continue;
      const OpGroup& group = s.groups[static_cast<size_t>(key.group)];
      std::string where = group.op + " " + group.library +
                          (key.phase < 0 ? "" : " " + s.phase_names.name(key.phase));
      Finding f = makeFinding(
          "slow-link",
          "link " + linkName(s.links[r.link].src, s.links[r.link].dst) + " is the bottleneck: " +
              fixed(median / r.rate, 1) + "x slower than its peers (" + where + ")",
          format::bytes(r.bytes) + " at " + format::rate(r.rate * 1e9, 3) +
              " while busy vs median " + format::rate(median * 1e9, 3) + " of " +
              std::to_string(list.size()) + " links (spread " +
              format::rate(group_rates.spread * 1e9, 3) + "); slow in " +
              std::to_string(calls->slow) + " of " + std::to_string(calls->judged) + " calls (" +
              fixed(100.0 * static_cast<double>(calls->slow_bytes) /
                        static_cast<double>(std::max<int64_t>(1, calls->judged_bytes)),
                    0) +
              "% of its bytes)");
      // The time it was busy beyond what a link at the median rate would have needed.
      f.cost_ns = std::max<int64_t>(
          0, r.busy_ns - static_cast<int64_t>(static_cast<double>(r.bytes) / median));
      findings->push_back(std::move(f));
    }
  }
}

// Bus bandwidth far under the model's.
void lowBusbwFindings(const Analysis& a, std::vector<Finding>* findings) {
  // A model fitted from the trace's own messages has no trustworthy latency
  // term: judge it only where bandwidth, not latency or scheduling, sets the
  // time. A topology's model states both, so it judges every size.
  constexpr int64_t kBandwidthBoundBytes = 64 * 1024;
  constexpr size_t kMinInstances = 5;
  const int64_t min_bytes = a.model_source == "topology" ? 0 : kBandwidthBoundBytes;
  struct Judged {
    std::vector<double> ratios;
  };
  std::map<std::pair<std::string, std::string>, Judged> judged;
  for (const CollectiveInstance& c : a.collectives) {
    if (c.expected_ns > 0 && c.duration_ns > 0 && !collective::is(c.op, collective::Op::kBarrier) && c.bytes >= min_bytes) {
      Judged& j = judged[{c.op, c.library}];
      j.ratios.push_back(c.expected_ns / static_cast<double>(c.duration_ns));
    }
  }
  for (auto& [key, j] : judged) {
    std::vector<double>& r = j.ratios;
    std::sort(r.begin(), r.end());
    double median = percentile(r, 0.5);
    // A single call (the setup broadcast) says nothing about an op's bandwidth.
    if (median >= 0.5 || r.size() < kMinInstances) continue;
    Finding f = makeFinding("low-busbw",
                            key.first + " " + key.second + ": bus bandwidth at " +
                                fixed(100 * median, 0) + "% of the " + a.model_source +
                                " alpha-beta model",
                            "median expected/measured = " + fixed(median, 3) + " over " +
                                std::to_string(r.size()) + " instances");
    // No time at stake: the gap to the model is a symptom whose causes (waiting, the algorithm,
    // small messages) the other findings name and cost.
    findings->push_back(std::move(f));
  }
}

// Idle links, only where they are evidence of lost time: links that a topology file says exist
// (without one, only pairs of hosts: a host's ranks talk through memory, and a ring uses n of
// its n(n-1) rank links by design), while the busiest link is loaded and the collectives are
// bandwidth-bound (more links would help only then). The busiest is the Links table's: most
// bytes, the first in the analysis' order on a tie.
void idleLinksFinding(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  const LinkStats* busiest = nullptr;
  for (const LinkStats& l : a.links) {
    if (busiest == nullptr || l.bytes > busiest->bytes) busiest = &l;
  }
  if (busiest == nullptr) return;
  const double load =
      busiest->capacity_share > 0 ? busiest->capacity_share : busiest->busy_share_of_collectives;
  const bool topology = s.options.topology != nullptr;
  std::vector<const IdleLink*> idle;
  for (const IdleLink& l : a.idle_links) {
    if (topology || l.src_host >= 0) idle.push_back(&l);
  }
  const double bandwidth_bound = bandwidthBoundShare(s);
  if (idle.empty() || load < 0.5 || bandwidth_bound < 0.5) return;
  std::string examples;
  for (size_t i = 0; i < idle.size() && i < 4; ++i) {
    examples += (i ? ", " : "") + idleLinkName(a, *idle[i]);
  }
  Finding f = makeFinding(
      "idle-links",
      std::to_string(idle.size()) + " link(s) idle while others are saturated (e.g. " + examples +
          ")",
      "busiest " + linkName(busiest->src, busiest->dst) + " (" + format::bytes(busiest->bytes) +
          ") at " + fixed(100 * load, 0) + "% busy" +
          (busiest->capacity_share > 0 ? " of its capacity" : " during its collectives") + "; " +
          fixed(100 * bandwidth_bound, 0) + "% of the collectives' time bandwidth-bound");
  // What using them would buy: the what-if's multipath prediction (docs/whatif.md), where made.
  for (const WhatIf& w : a.what_if) {
    for (const WhatIfAlgorithm& x : w.algorithms) {
      if (!collective::is(x.algorithm, collective::Algorithm::kMultipath) || x.ran || x.predicted_ns <= 0 || !(x.predicted_ns < 0.95 * w.measured_ns)) continue;
      f.action = "multipath, which spreads each all-reduce over every link, is predicted " +
                 fixed(w.measured_ns / x.predicted_ns, 1) + "x faster for " + w.library + "'s all-reduces (" +
                 format::duration(static_cast<int64_t>(x.predicted_ns)) + " instead of " +
                 format::duration(static_cast<int64_t>(w.measured_ns)) + "); " + abCommand(s, collective::name(collective::Algorithm::kMultipath), w.ranks);
      f.cost_ns = static_cast<int64_t>(w.measured_ns - x.predicted_ns);
      break;
    }
    if (!f.action.empty()) break;
  }
  findings->push_back(std::move(f));
}

void failedFinding(const Analysis& a, std::vector<Finding>* findings) {
  int64_t failed = 0;
  for (const CollectiveInstance& c : a.collectives) failed += c.failed ? 1 : 0;
  if (failed == 0) return;
  findings->push_back(makeFinding("failed-collectives",
                                  std::to_string(failed) + " collective(s) failed on some rank",
                                  "status != 0"));
}

int severityRank(const std::string& severity) {
  return severity == "problem" ? 0 : severity == "warning" ? 1 : 2;
}

}  // namespace

void addFindings(AnalysisState& s) {
  std::vector<Finding>& findings = s.out->findings;
  buildWhatIf(s);
  autopsyFindings(s, &findings);
  metaFindings(s, &findings);
  lateRankFindings(s, &findings);
  cpuFindings(s, &findings);
  slowLinkFindings(s, &findings);
  algorithmFindings(s, &findings);
  bucketingFindings(s, &findings);
  lowBusbwFindings(*s.out, &findings);
  idleLinksFinding(s, &findings);
  droppedFinding(s.meta.dropped, "dropped-events", kDroppedEventsText, &findings);
  // Not a rule of its own (nothing in this trace is wrong): a note that calls were missed.
  if (!s.meta.forked.empty()) s.out->warnings.push_back(forkedChildrenText(s.meta.forked));
  failedFinding(*s.out, &findings);
  gpuFindings(*s.out, s.meta.gpu, &findings);
  // The autopsy's verdicts first (in their order: root causes first), then problems, then by
  // the time at stake (unknown last), largest first.
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return std::make_tuple(!hang::isVerdictRule(a.rule), severityRank(a.severity),
                           hang::isVerdictRule(a.rule) ? 0 : -a.cost_ns) <
           std::make_tuple(!hang::isVerdictRule(b.rule), severityRank(b.severity),
                           hang::isVerdictRule(b.rule) ? 0 : -b.cost_ns);
  });
}

}  // namespace ringside::analyzer::detail
