// analyzer/analysis_findings.cpp — the findings stage: the rules of findings.h (the GPU ones
// live in gpu_analysis.cpp), most important first. Each rule emits through makeFinding(), which
// takes the severity from the table.
#include <algorithm>
#include <map>
#include <set>

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
  if (!a.missing_ranks.empty()) {
    // A long list (a large world with few files) as ranges: "1-4095", not 4095 numbers.
    std::string ranks = a.missing_ranks.size() <= 32 ? format::join(a.missing_ranks, ",")
                                                     : formatRankList(a.missing_ranks);
    std::string evidence = "world_size=" + std::to_string(a.world_size) + " missing_ranks=" + ranks;
    // A file that exists but could not be read is not a file that was never written.
    if (s.meta.skipped.empty()) {
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

// Per phase group: (bytes / busy, link index) of every link that carried bytes for it. Bytes
// from the send rows, busy time from the recv rows where the group has them (see
// LinkStats::busy_ns: send-side durations end when the bytes reach the socket buffer).
std::map<PhaseGroupKey, std::vector<std::pair<double, size_t>>> ratesByPhaseGroup(
    const AnalysisState& s) {
  std::map<PhaseGroupKey, std::vector<std::pair<double, size_t>>> rates;
  for (size_t li = 0; li < s.links.size(); ++li) {
    const SideAcc& recv_side = s.links[li].recv;
    const SideAcc& side = s.links[li].send.messages == 0 ? recv_side : s.links[li].send;
    for (const auto& [group, traffic] : side.by_group) {
      int64_t busy = traffic.busy.total();
      const GroupTraffic* received = recv_side.findGroup(group);
      if (received != nullptr && received->busy.total() > 0) busy = received->busy.total();
      if (busy > 0 && traffic.bytes > 0) {
        rates[group].emplace_back(static_cast<double>(traffic.bytes) / static_cast<double>(busy),
                                  li);
      }
    }
  }
  return rates;
}

// Slow link: bytes/busy < 1/3 of the median of links of the same phase group.
void slowLinkFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  std::set<size_t> named;
  for (const auto& [key, list] : ratesByPhaseGroup(s)) {
    if (list.size() < 3) continue;
    std::vector<double> sorted;
    for (const auto& [rate, li] : list) sorted.push_back(rate);
    std::sort(sorted.begin(), sorted.end());
    double median = percentile(sorted, 0.5);
    for (const auto& [rate, li] : list) {
      if (rate * 3 >= median || !named.insert(li).second) continue;
      const OpGroup& group = s.groups[static_cast<size_t>(key.group)];
      std::string where = group.op + " " + group.library +
                          (key.phase < 0 ? "" : " " + s.phase_names.name(key.phase));
      findings->push_back(makeFinding(
          "slow-link",
          "link " + linkName(s.links[li].src, s.links[li].dst) + " is the bottleneck: " +
              fixed(median / rate, 1) + "x slower than its peers (" + where + ")",
          fixed(rate) + " GB/s while busy vs median " + fixed(median) + " GB/s"));
    }
  }
}

// Bus bandwidth far under the model's.
void lowBusbwFindings(const Analysis& a, std::vector<Finding>* findings) {
  // A model fitted from the trace's own messages has no trustworthy latency
  // term: judge it only where bandwidth, not latency or scheduling, sets the
  // time. A topology's model states both, so it judges every size.
  constexpr int64_t kBandwidthBoundBytes = 64 * 1024;
  const int64_t min_bytes = a.model_source == "topology" ? 0 : kBandwidthBoundBytes;
  std::map<std::pair<std::string, std::string>, std::vector<double>> ratio;
  for (const CollectiveInstance& c : a.collectives) {
    if (c.expected_ns > 0 && c.duration_ns > 0 && c.op != "barrier" && c.bytes >= min_bytes) {
      ratio[{c.op, c.library}].push_back(c.expected_ns / static_cast<double>(c.duration_ns));
    }
  }
  for (auto& [key, r] : ratio) {
    std::sort(r.begin(), r.end());
    double median = percentile(r, 0.5);
    if (median >= 0.5) continue;
    findings->push_back(makeFinding("low-busbw",
                                    key.first + " " + key.second + ": bus bandwidth at " +
                                        fixed(100 * median, 0) + "% of the " + a.model_source +
                                        " alpha-beta model",
                                    "median measured/expected = " + fixed(median, 3) + " over " +
                                        std::to_string(r.size()) + " instances"));
  }
}

// Idle links while others are saturated.
void idleLinksFinding(const Analysis& a, std::vector<Finding>* findings) {
  double busiest = 0;
  int busiest_src = -1, busiest_dst = -1;
  for (const LinkStats& l : a.links) {
    double load = l.capacity_share > 0 ? l.capacity_share : l.busy_share_of_collectives;
    if (load > busiest) {
      busiest = load;
      busiest_src = l.src;
      busiest_dst = l.dst;
    }
  }
  if (a.idle_links.empty() || busiest < 0.5) return;
  std::string examples;
  for (size_t i = 0; i < a.idle_links.size() && i < 4; ++i) {
    examples += (i ? ", " : "") + idleLinkName(a, a.idle_links[i]);
  }
  findings->push_back(makeFinding("idle-links",
                                  std::to_string(a.idle_links.size()) +
                                      " link(s) idle while others are saturated (e.g. " + examples +
                                      ")",
                                  "busiest " + linkName(busiest_src, busiest_dst) + " at " +
                                      fixed(100 * busiest, 0) + "% busy"));
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
  metaFindings(s, &findings);
  lateRankFindings(s, &findings);
  slowLinkFindings(s, &findings);
  lowBusbwFindings(*s.out, &findings);
  idleLinksFinding(*s.out, &findings);
  droppedFinding(s.meta.dropped, "dropped-events", kDroppedEventsText, &findings);
  // Not a rule of its own (nothing in this trace is wrong): a note that calls were missed.
  if (!s.meta.forked.empty()) s.out->warnings.push_back(forkedChildrenText(s.meta.forked));
  failedFinding(*s.out, &findings);
  gpuFindings(*s.out, s.meta.gpu, &findings);
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    return severityRank(a.severity) < severityRank(b.severity);
  });
}

}  // namespace ringside::analyzer::detail
