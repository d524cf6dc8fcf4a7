// `ringside diff` formats: text, Markdown, CSV and HTML of an analyzer::Diff
// (JSON is in report_json.cpp beside the report's JSON writer). Verdicts come
// first; then the per op/size rows, phase totals and links, A beside B.
#include <algorithm>
#include <cmath>

#include "report/report_format.h"
#include "report/svg.h"
#include "ringside/analyzer/collective_math.h"
#include "ringside/format/text.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

using analyzer::Diff;
using svg::esc;
using svg::n;

// Within this factor of 1 the two sides are on par (the analyzer's verdict threshold).
constexpr double kParFactor = 1.05;

std::string speedupText(double speedup) {
  if (!(speedup > 0) || !std::isfinite(speedup)) return "-";
  return format::printf("%.2fx", speedup);
}

std::string rawDouble(double v) { return format::fixed(std::isfinite(v) ? v : 0.0, 4); }

std::string human(int64_t ns, int64_t count) { return count > 0 ? format::duration(ns) : "-"; }

std::string label(const Diff& d, bool a) {
  const std::string& s = a ? d.label_a : d.label_b;
  return s.empty() ? (a ? "A" : "B") : s;
}

// The three tables of a diff; raw units for CSV, human units otherwise.
ReportTable rowsTable(const Diff& d, Units units) {
  ReportTable t;
  t.id = "diff_rows";
  t.title = "Collectives by op and size: " + label(d, true) + " (A) vs " + label(d, false) + " (B)";
  if (units == Units::kRaw) {
    t.columns = {{"op", "op", false},         {"size_lo", "size_lo"},     {"size_hi", "size_hi"},
                 {"count_a", "count_a"},      {"count_b", "count_b"},     {"median_a_ns", "median_a_ns"},
                 {"p10_a_ns", "p10_a_ns"},    {"p90_a_ns", "p90_a_ns"},   {"median_b_ns", "median_b_ns"},
                 {"p10_b_ns", "p10_b_ns"},    {"p90_b_ns", "p90_b_ns"},   {"speedup", "speedup"},
                 {"at_stake_ns", "at_stake_ns"}, {"verdict", "verdict", false}, {"note", "note", false}};
    for (const auto& r : d.rows) {
      t.rows.push_back({r.op, std::to_string(r.size_lo), std::to_string(r.size_hi),
                        std::to_string(r.count_a), std::to_string(r.count_b),
                        std::to_string(r.median_a_ns), std::to_string(r.p10_a_ns),
                        std::to_string(r.p90_a_ns), std::to_string(r.median_b_ns),
                        std::to_string(r.p10_b_ns), std::to_string(r.p90_b_ns),
                        r.speedup > 0 ? rawDouble(r.speedup) : "", std::to_string(r.at_stake_ns),
                        r.verdict, r.note});
    }
    return t;
  }
  // Counts and spread on both sides: a median of 1 call and one of 20 are not the same evidence.
  t.columns = {{"op", "op", false},       {"size", "size", false},    {"count_a", "n A"},
               {"median_a", "median A"},  {"spread_a", "p10-p90 A", false}, {"count_b", "n B"},
               {"median_b", "median B"},  {"spread_b", "p10-p90 B", false}, {"speedup", "A/B"},
               {"judged", "", false}};
  // "0.38-10.5 ms": both ends in the larger one's unit, so the column stays narrow.
  auto spread = [](int64_t lo, int64_t hi, int64_t count) {
    if (count <= 0) return std::string("-");
    double unit = hi >= 1'000'000'000 ? 1e9 : hi >= 1'000'000 ? 1e6 : hi >= 1000 ? 1e3 : 1;
    const char* name = unit == 1e9 ? "s" : unit == 1e6 ? "ms" : unit == 1e3 ? "us" : "ns";
    auto fixed = [](double v) {
      return format::fixed(v, v < 10 ? 2 : v < 100 ? 1 : 0);
    };
    return fixed(static_cast<double>(lo) / unit) + "-" + fixed(static_cast<double>(hi) / unit) +
           " " + name;
  };
  for (const auto& r : d.rows) {
    std::string judged = !r.verdict.empty() || r.speedup <= 0 ? ""
                         : r.note.starts_with("too few") ? "(few calls)"
                                                          : "(noise)";
    t.rows.push_back({r.op, analyzer::sizeText(r.min_bytes, r.max_bytes), std::to_string(r.count_a),
                      human(r.median_a_ns, r.count_a), spread(r.p10_a_ns, r.p90_a_ns, r.count_a),
                      std::to_string(r.count_b), human(r.median_b_ns, r.count_b),
                      spread(r.p10_b_ns, r.p90_b_ns, r.count_b), speedupText(r.speedup), judged});
  }
  t.note = "no verdict on (few calls): under " + std::to_string(analyzer::kMinDiffSamples) +
           " a side; (noise): each median within the other's p10-p90";
  return t;
}

ReportTable phasesTable(const Diff& d) {
  ReportTable t{"diff_phases", "Phases (total over ranks and collectives)",
                {{"phase", "phase", false}, {"total_a", "total A"}, {"total_b", "total B"},
                 {"ratio", "A/B"}}, {}, ""};
  for (const auto& p : d.phases) {
    double ratio = p.total_b_ns > 0 ? static_cast<double>(p.total_a_ns) / static_cast<double>(p.total_b_ns) : 0;
    t.rows.push_back({p.phase, format::duration(p.total_a_ns), format::duration(p.total_b_ns),
                      p.total_a_ns > 0 ? speedupText(ratio) : "-"});
  }
  return t;
}

ReportTable linksTable(const Diff& d) {
  ReportTable t{"diff_links", "Links (bytes and busy time)",
                {{"link", "link", false}, {"bytes_a", "bytes A"}, {"bytes_b", "bytes B"},
                 {"busy_a", "busy A"}, {"busy_b", "busy B"}}, {}, ""};
  for (const auto& l : d.links) {
    t.rows.push_back({std::to_string(l.src) + "->" + std::to_string(l.dst),
                      format::bytes(l.bytes_a), format::bytes(l.bytes_b),
                      format::duration(l.busy_a_ns), format::duration(l.busy_b_ns)});
  }
  return t;
}

std::string alignmentLine(const Diff& d) {
  return std::to_string(d.aligned) + " collectives aligned by op, size and order; " +
         std::to_string(d.unmatched_a) + " only in A, " + std::to_string(d.unmatched_b) +
         " only in B";
}

// Speed-up per size bucket as horizontal bars on a log2 axis centered on 1x:
// green to the right when B is faster, red to the left when B is slower.
std::string speedupChart(const Diff& d) {
  std::vector<const analyzer::DiffRow*> rows;
  for (const auto& r : d.rows)
    if (r.speedup > 0 && std::isfinite(r.speedup)) rows.push_back(&r);
  if (rows.empty()) return "<p class=\"note\">No size bucket was measured on both sides.</p>";
  double extent = 1;  // log2 units each side of the center
  for (const auto* r : rows) extent = std::max(extent, std::ceil(std::fabs(std::log2(r->speedup))));
  extent = std::min(extent, 6.0);
  const double W = 900, left = 230, right = 20, top = 28, bar = 18, gap = 6;
  const double plot = W - left - right, mid = left + plot / 2;
  const double H = top + (bar + gap) * static_cast<double>(rows.size()) + 30;
  std::string out = "<svg width=\"" + n(W) + "\" height=\"" + n(H) +
                    "\" class=\"speedup-chart\"><text x=\"8\" y=\"16\">" +
                    esc("speed-up of " + label(d, false) + " over " + label(d, true) +
                        " (median A / median B, log scale)") +
                    "</text>";
  double y = top;
  for (const auto* r : rows) {
    double lg = std::clamp(std::log2(r->speedup), -extent, extent);
    double w = std::fabs(lg) / extent * (plot / 2);
    // Only judged rows are coloured: a row of few calls or inside the noise stays grey.
    bool judged = !r->verdict.empty();
    bool faster = judged && r->speedup >= kParFactor, slower = judged && r->speedup <= 1 / kParFactor;
    std::string color = faster ? "#2e7d32" : slower ? "#c62828" : "#9e9e9e";
    double x = lg >= 0 ? mid : mid - w;
    out += "<text x=\"8\" y=\"" + n(y + 13) + "\">" + esc(r->op + " " + analyzer::sizeText(r->min_bytes, r->max_bytes)) +
           "</text><rect x=\"" + n(x) + "\" y=\"" + n(y) + "\" width=\"" + n(std::max(1.0, w)) +
           "\" height=\"" + n(bar) + "\" fill=\"" + color + "\"><title>" +
           esc(judged ? r->verdict : r->note) + "</title></rect><text x=\"" +
           n(lg >= 0 ? std::min(x + w + 4, W - right - 40) : std::max(x - 44, left)) + "\" y=\"" +
           n(y + 13) +
           "\">" + esc(speedupText(r->speedup)) + "</text>";
    y += bar + gap;
  }
  out += "<line x1=\"" + n(mid) + "\" y1=\"" + n(top - 4) + "\" x2=\"" + n(mid) + "\" y2=\"" + n(y) +
         "\" stroke=\"#333\"/>";
  std::string lo = format::printf("%gx", std::exp2(-extent));
  std::string hi = format::printf("%gx", std::exp2(extent));
  out += "<text x=\"" + n(left) + "\" y=\"" + n(y + 16) + "\">" + esc(lo + " (B slower)") +
         "</text><text x=\"" + n(mid - 8) + "\" y=\"" + n(y + 16) + "\">1x</text><text x=\"" +
         n(W - right - 110) + "\" y=\"" + n(y + 16) + "\">" + esc(hi + " (B faster)") +
         "</text></svg>";
  return out;
}

std::string htmlTable(const ReportTable& t, const Diff* speedup_rows) {
  std::string out = "<h2>" + esc(t.title) + "</h2>";
  if (t.rows.empty()) return out + "<p class=\"note\">(none)</p>";
  out += "<table><tr>";
  for (const auto& c : t.columns)
    out += "<th" + std::string(c.right ? " class=\"r\"" : "") + ">" + esc(c.title) + "</th>";
  out += "</tr>";
  for (size_t ri = 0; ri < t.rows.size(); ++ri) {
    std::string cls;
    if (speedup_rows != nullptr && ri < speedup_rows->rows.size()) {
      const analyzer::DiffRow& r = speedup_rows->rows[ri];
      double s = r.speedup;
      if (r.verdict.empty()) cls = "";  // few calls or noise: not coloured as a result
      else if (s >= kParFactor) cls = " class=\"faster\"";
      else if (s > 0 && s <= 1 / kParFactor) cls = " class=\"slower\"";
    }
    out += "<tr" + cls + ">";
    const auto& row = t.rows[ri];
    for (size_t i = 0; i < t.columns.size(); ++i)
      out += "<td" + std::string(t.columns[i].right ? " class=\"r\"" : "") + ">" +
             esc(i < row.size() ? row[i] : "") + "</td>";
    out += "</tr>";
  }
  return out + "</table>";
}

}  // namespace

std::string formatDiffText(const Diff& d) {
  const size_t W = kReportWidth;
  std::string out = wrapText("ringside diff: " + label(d, true) + " (A) vs " + label(d, false) + " (B)",
                             W, "", "  ");
  out += wrapText(alignmentLine(d), W, "", "  ");
  out += "\nVerdicts\n";
  if (d.verdicts.empty()) out += wrapText("none: " + d.no_verdict, W, "  ", "    ");
  for (const std::string& v : d.verdicts) out += wrapText(v, W, "  ", "    ");
  if (!d.what_if_checks.empty()) out += "\nWhat-if, predicted vs measured\n";
  for (const std::string& v : d.what_if_checks) out += wrapText(v, W, "  ", "    ");
  out += "\n" + renderTableText(rowsTable(d, Units::kHuman), W);
  out += "\n" + renderTableText(phasesTable(d), W);
  out += "\n" + renderTableText(linksTable(d), W);
  return format::printableText(out);  // labels and verdicts quote the traces
}

std::string formatDiffMarkdown(const Diff& d) {
  std::string out = "# ringside diff: " + mdCell(label(d, true)) + " (A) vs " +
                    mdCell(label(d, false)) + " (B)\n\n" + mdCell(alignmentLine(d)) +
                    "\n\n## Verdicts\n\n";
  if (d.verdicts.empty()) out += "None: " + mdCell(d.no_verdict) + ".\n";
  for (const std::string& v : d.verdicts) out += "- " + mdCell(v) + "\n";
  for (const std::string& v : d.what_if_checks) out += "- what-if: " + mdCell(v) + "\n";
  out += "\n" + renderTableMarkdown(rowsTable(d, Units::kHuman));
  out += renderTableMarkdown(phasesTable(d));
  out += renderTableMarkdown(linksTable(d));
  return format::printableText(out);  // every value went through mdCell(); this is a backstop
}

std::string formatDiffCsv(const Diff& d) { return renderTableCsv(rowsTable(d, Units::kRaw)); }

std::string formatDiffHtml(const Diff& d) {
  std::string title = "ringside diff: " + label(d, true) + " (A) vs " + label(d, false) + " (B)";
  std::string out =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>" + esc(title) +
      "</title><style>body{font:14px/1.4 sans-serif;margin:24px;color:#222;max-width:1150px}"
      "h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}"
      "table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;border-bottom:1px solid #eee}"
      "td.r,th.r{text-align:right}th{background:#f4f4f4}tr.faster td{color:#1b5e20;background:#e8f5e9}"
      "tr.slower td{color:#b71c1c;background:#ffebee}.note{color:#666;font-size:12px}"
      "svg{background:#fff;border:1px solid #ddd;margin:6px 0}svg text{font:11px sans-serif;fill:#333}"
      "</style></head><body><h1>" +
      esc(title) + "</h1><p>" + esc(alignmentLine(d)) + "</p><h2>Verdicts</h2>";
  if (d.verdicts.empty()) out += "<p class=\"note\">None: " + esc(d.no_verdict) + ".</p>";
  else {
    out += "<ul class=\"verdicts\">";
    for (const std::string& v : d.verdicts) out += "<li>" + esc(v) + "</li>";
    out += "</ul>";
  }
  out += "<h2>Speed-up per size bucket</h2>" + speedupChart(d);
  out += htmlTable(rowsTable(d, Units::kHuman), &d);
  out += htmlTable(phasesTable(d), nullptr);
  out += htmlTable(linksTable(d), nullptr);
  return out + "</body></html>\n";
}

}  // namespace ringside::cli
