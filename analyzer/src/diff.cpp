// analyzer/diff.cpp — A/B comparison of two analyses, aligned by order and
// size (never by wall time: the two runs happened at different times).
#include <cstdlib>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "ringside/analyzer/analysis.h"
#include "ringside/format/units.h"

namespace ringside::analyzer {
namespace {

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

// A label that looks like a file name is replaced by the libraries the trace used.
std::string displayLabel(const std::string& label, const std::map<std::string, int64_t>& libs) {
  bool file = label.empty() || label.find('/') != std::string::npos ||
              label.find(".sqlite") != std::string::npos || label.find(".db") != std::string::npos;
  if (!file || libs.empty()) return label;
  std::string best;
  int64_t most = -1;
  for (const auto& [lib, n] : libs) {
    if (n > most) {
      most = n;
      best = lib;
    }
  }
  return best;
}

using Groups = std::map<std::pair<std::string, int64_t>, std::vector<int>>;

// (op, size bucket) -> indices into x.collectives, in order of first start (ties: index order).
Groups groupByOpAndSize(const Analysis& x) {
  std::vector<int> order(x.collectives.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int p, int q) {
    return x.collectives[static_cast<size_t>(p)].first_start_ns <
           x.collectives[static_cast<size_t>(q)].first_start_ns;
  });
  Groups groups;
  for (int i : order) {
    const CollectiveInstance& c = x.collectives[static_cast<size_t>(i)];
    groups[{c.op, sizeBucketLo(c.bytes)}].push_back(i);
  }
  return groups;
}

// "B 1.8x faster than A at 4 KiB-8 KiB (allreduce)", or "... on par ..." within 5%.
std::string verdict(const DiffRow& row, std::string name_a, std::string name_b) {
  if (name_a == name_b) {
    name_a += " (A)";
    name_b += " (B)";
  }
  const std::string range = sizeText(row.min_bytes, row.max_bytes);
  char buf[256];
  if (row.speedup >= 1.05) {
    std::snprintf(buf, sizeof buf, "%s %.1fx faster than %s at %s (%s)", name_b.c_str(),
                  row.speedup, name_a.c_str(), range.c_str(), row.op.c_str());
  } else if (row.speedup <= 1 / 1.05 && row.median_a_ns > 0) {
    std::snprintf(buf, sizeof buf, "%s %.1fx faster than %s at %s (%s)", name_a.c_str(),
                  1 / row.speedup, name_b.c_str(), range.c_str(), row.op.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "%s and %s on par at %s (%s)", name_a.c_str(), name_b.c_str(),
                  range.c_str(), row.op.c_str());
  }
  return buf;
}

// One side of a row: its durations' median, spread and libraries.
struct Side {
  int64_t count = 0, median_ns = 0, p10_ns = 0, p90_ns = 0;
  int64_t min_bytes = INT64_MAX, max_bytes = INT64_MIN;  // the calls' actual sizes
  std::map<std::string, int64_t> libraries;
};

Side side(const Analysis& x, const std::vector<int>& members) {
  Side out;
  std::vector<int64_t> durations;
  for (int i : members) {
    durations.push_back(x.collectives[static_cast<size_t>(i)].duration_ns);
    out.min_bytes = std::min(out.min_bytes, x.collectives[static_cast<size_t>(i)].bytes);
    out.max_bytes = std::max(out.max_bytes, x.collectives[static_cast<size_t>(i)].bytes);
    ++out.libraries[x.collectives[static_cast<size_t>(i)].library];
  }
  out.count = static_cast<int64_t>(members.size());
  std::sort(durations.begin(), durations.end());
  auto at = [&durations](double p) {  // nearest rank, as the reports' percentiles
    if (durations.empty()) return int64_t{0};
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(durations.size())));
    return durations[std::min(durations.size() - 1, k == 0 ? 0 : k - 1)];
  };
  out.p10_ns = at(0.1);
  out.p90_ns = at(0.9);
  out.median_ns = median(std::move(durations));
  return out;
}

// Why a row gets no verdict: "" when it is judged.
std::string judgeNote(const DiffRow& row) {
  if (row.count_a < kMinDiffSamples || row.count_b < kMinDiffSamples) {
    return "too few calls to judge (" + std::to_string(row.count_a) + " and " +
           std::to_string(row.count_b) + "; " + std::to_string(kMinDiffSamples) +
           " per side needed)";
  }
  // Each median inside the other side's p10-p90: the runs overlap too much to tell.
  bool a_in_b = row.median_a_ns >= row.p10_b_ns && row.median_a_ns <= row.p90_b_ns;
  bool b_in_a = row.median_b_ns >= row.p10_a_ns && row.median_b_ns <= row.p90_a_ns;
  if (a_in_b && b_in_a) return "inside the run-to-run noise (each median within the other's p10-p90)";
  return "";
}

// Why no row got a verdict: said as it is (`diff a.sqlite a.sqlite` measures every op and size on
// both sides; none differs beyond the noise).
std::string noVerdictReason(const std::vector<DiffRow>& rows) {
  int64_t both = 0, few = 0;
  for (const DiffRow& r : rows) {
    if (r.count_a == 0 || r.count_b == 0) continue;
    ++both;
    if (r.count_a < kMinDiffSamples || r.count_b < kMinDiffSamples) ++few;
  }
  if (both == 0) return "no op and size was measured on both sides";
  const std::string measured = std::to_string(both) + " op and size " +
                               (both == 1 ? "row was" : "rows were") + " measured on both sides; ";
  const std::string too_few = "too few calls to judge (fewer than " +
                              std::to_string(kMinDiffSamples) + " per side)";
  if (few == both) return measured + too_few;
  return measured + "none differs beyond the run-to-run noise" +
         (few > 0 ? " (" + std::to_string(few) + " with " + too_few + ")" : std::string());
}

std::map<std::string, int64_t> librariesOf(const Analysis& x) {
  std::map<std::string, int64_t> libraries;
  for (const CollectiveInstance& c : x.collectives) ++libraries[c.library];
  return libraries;
}

void addPhaseAndLinkRows(const Analysis& a, const Analysis& b, Diff* out) {
  std::map<std::string, std::pair<int64_t, int64_t>> phases;
  for (const PhaseStats& p : a.phases) phases[p.phase].first += p.end_ns - p.start_ns;
  for (const PhaseStats& p : b.phases) phases[p.phase].second += p.end_ns - p.start_ns;
  // The rows the analyses did not keep (AnalysisOptions::phase_rows), folded by name.
  for (const PhaseTotal& t : a.phases_left_out) phases[t.phase].first += t.total_ns;
  for (const PhaseTotal& t : b.phases_left_out) phases[t.phase].second += t.total_ns;
  for (const auto& [name, t] : phases) out->phases.push_back({name, t.first, t.second});
  std::map<std::pair<int, int>, DiffLinkRow> links;
  auto row = [&](const LinkStats& l) -> DiffLinkRow& {
    DiffLinkRow& r = links[{l.src, l.dst}];
    r.src = l.src;
    r.dst = l.dst;
    return r;
  };
  for (const LinkStats& l : a.links) {
    DiffLinkRow& r = row(l);
    r.bytes_a = l.bytes;
    r.busy_a_ns = l.busy_ns;
  }
  for (const LinkStats& l : b.links) {
    DiffLinkRow& r = row(l);
    r.bytes_b = l.bytes;
    r.busy_b_ns = l.busy_ns;
  }
  for (const auto& [k, r] : links) out->links.push_back(r);
}

}  // namespace

std::vector<std::pair<int, int>> pairCollectives(const Analysis& a, const Analysis& b) {
  Groups ga = groupByOpAndSize(a), gb = groupByOpAndSize(b);
  std::vector<std::pair<int, int>> pairs;
  for (const auto& [key, in_a] : ga) {
    auto it = gb.find(key);
    if (it == gb.end()) continue;
    const std::vector<int>& in_b = it->second;
    for (size_t k = 0; k < in_a.size() && k < in_b.size(); ++k)
      pairs.emplace_back(in_a[k], in_b[k]);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

namespace {

// "A's what-if predicted multipath at 1.23 ms a call (ring measured 3.10 ms); B measured 1.40 ms
// a call: the prediction was 12% low".
std::vector<std::string> whatIfChecks(const Analysis& a, const Analysis& b) {
  std::vector<std::string> out;
  for (const WhatIf& wb : b.what_if) {
    if (wb.calls == 0 || wb.ran == "unknown") continue;
    for (const WhatIf& wa : a.what_if) {
      if (wa.ranks != wb.ranks || wa.calls == 0 || wa.ran == wb.ran) continue;
      for (const WhatIfAlgorithm& x : wa.algorithms) {
        if (x.algorithm != wb.ran || x.predicted_ns < 0) continue;
        const double predicted = x.predicted_ns / static_cast<double>(wa.calls);
        const double measured = wb.measured_ns / static_cast<double>(wb.calls);
        const double off = measured > 0 ? (predicted - measured) / measured : 0;
        out.push_back("A's what-if predicted " + wb.ran + " at " + format::duration(static_cast<int64_t>(predicted)) +
                      " a call (A's " + wa.ran + " measured " +
                      format::duration(static_cast<int64_t>(wa.measured_ns / static_cast<double>(wa.calls))) +
                      "); B measured " + format::duration(static_cast<int64_t>(measured)) + " a call (" +
                      wb.library + ", " + std::to_string(wb.calls) + " calls): the prediction was " +
                      format::fixed(100 * std::abs(off), 0) + "% " + (off < 0 ? "low" : "high"));
      }
    }
  }
  return out;
}

}  // namespace

void diff(const Analysis& a, const Analysis& b, const std::string& label_a,
          const std::string& label_b, Diff* out) {
  *out = Diff{};
  out->aligned = static_cast<int64_t>(pairCollectives(a, b).size());
  out->unmatched_a = static_cast<int64_t>(a.collectives.size()) - out->aligned;
  out->unmatched_b = static_cast<int64_t>(b.collectives.size()) - out->aligned;
  out->label_a = displayLabel(label_a, librariesOf(a));
  out->label_b = displayLabel(label_b, librariesOf(b));
  out->what_if_checks = whatIfChecks(a, b);
  Groups ga = groupByOpAndSize(a), gb = groupByOpAndSize(b);
  std::set<std::pair<std::string, int64_t>> keys;
  for (const auto& [key, members] : ga) keys.insert(key);
  for (const auto& [key, members] : gb) keys.insert(key);
  for (const auto& key : keys) {
    DiffRow row;
    row.op = key.first;
    row.size_lo = key.second;
    row.size_hi = sizeBucketHi(key.second);
    Side in_a = side(a, ga[key]), in_b = side(b, gb[key]);
    row.min_bytes = std::min(in_a.min_bytes, in_b.min_bytes);
    row.max_bytes = std::max(in_a.max_bytes, in_b.max_bytes);
    row.count_a = in_a.count;
    row.count_b = in_b.count;
    row.median_a_ns = in_a.median_ns;
    row.median_b_ns = in_b.median_ns;
    row.p10_a_ns = in_a.p10_ns;
    row.p90_a_ns = in_a.p90_ns;
    row.p10_b_ns = in_b.p10_ns;
    row.p90_b_ns = in_b.p90_ns;
    if (in_a.count > 0 && in_b.count > 0 && row.median_b_ns > 0) {
      row.speedup = static_cast<double>(row.median_a_ns) / static_cast<double>(row.median_b_ns);
      double stake = (static_cast<double>(row.median_a_ns) - static_cast<double>(row.median_b_ns)) *
                     static_cast<double>(row.count_a);
      row.at_stake_ns = static_cast<int64_t>(std::clamp(stake, -9e18, 9e18));
      row.note = judgeNote(row);
      if (row.note.empty()) {
        row.verdict = verdict(row, displayLabel(label_a, in_a.libraries),
                              displayLabel(label_b, in_b.libraries));
      }
    }
    out->rows.push_back(std::move(row));
  }
  // Verdicts by the time they change, largest first (not by op name).
  std::vector<const DiffRow*> judged;
  for (const DiffRow& r : out->rows) {
    if (!r.verdict.empty()) judged.push_back(&r);
  }
  std::stable_sort(judged.begin(), judged.end(), [](const DiffRow* x, const DiffRow* y) {
    return std::llabs(x->at_stake_ns) > std::llabs(y->at_stake_ns);
  });
  for (const DiffRow* r : judged) out->verdicts.push_back(r->verdict);
  if (out->verdicts.empty()) out->no_verdict = noVerdictReason(out->rows);
  addPhaseAndLinkRows(a, b, out);
}

}  // namespace ringside::analyzer
