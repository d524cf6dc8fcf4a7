#include "report/report_format.h"

#include <algorithm>
#include <string_view>

#include "ringside/format/csv.h"
#include "ringside/format/text.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

std::string pad(const std::string& s, size_t width, bool right) {
  size_t n = columns(s);
  if (n >= width) return s;
  return right ? std::string(width - n, ' ') + s : s + std::string(width - n, ' ');
}

std::string severityTag(const std::string& severity) {
  if (severity == "problem") return "PROBLEM";
  if (severity == "warning") return "warning";
  return "info";
}

}  // namespace

std::string mdCell(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out.push_back(c);
  }
  // Strings from the trace (hosts, communicators, the trace's path): no control characters and
  // no raw HTML in what a Markdown viewer renders.
  return format::markdownText(out);
}

std::string renderTableText(const ReportTable& t, size_t width) {
  std::string out = t.title + "\n";
  // An empty table says why where it can (e.g. left out for this many ranks).
  if (t.rows.empty()) return out + "  (" + (t.note.empty() ? "none" : t.note) + ")\n";
  size_t n = t.columns.size();
  std::vector<size_t> w(n, 0), cell_w(n, 0);
  for (const auto& row : t.rows)
    for (size_t i = 0; i < n && i < row.size(); ++i)
      cell_w[i] = std::max(cell_w[i], columns(format::printable(row[i])));
  for (size_t i = 0; i < n; ++i) w[i] = std::max(cell_w[i], columns(t.columns[i].title));
  // Two leading spaces, two between columns.
  auto total = [&] {
    size_t s = 2;
    for (size_t x : w) s += x + 2;
    return s - 2;
  };
  // Too wide: first shorten the headers wider than their cell_w (the one with the most to spare
  // first, to no fewer than 4 columns), so that data (a host name, a link at 16,384 ranks) is
  // cut only when that is not enough; then shrink the widest text column.
  while (total() > width) {
    size_t spare = n;
    for (size_t i = 0; i < n; ++i) {
      const size_t floor = std::max<size_t>(cell_w[i], 4);
      if (w[i] > floor && (spare == n || w[i] - floor > w[spare] - std::max<size_t>(cell_w[spare], 4)))
        spare = i;
    }
    if (spare == n) break;
    w[spare] -= std::min(w[spare] - std::max<size_t>(cell_w[spare], 4), total() - width);
  }
  while (total() > width) {
    size_t widest = n;
    for (size_t i = 0; i < n; ++i)
      if (!t.columns[i].right && (widest == n || w[i] > w[widest])) widest = i;
    if (widest == n || w[widest] <= 4) {
      for (size_t i = 0; i < n; ++i)
        if (widest == n || w[i] > w[widest]) widest = i;
    }
    if (w[widest] <= 3) break;
    w[widest] -= std::min(w[widest] - 3, total() - width);
  }
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string l = " ";
    for (size_t i = 0; i < n; ++i) {
      // Escaped before the widths are taken, so a cell from the trace keeps its column.
      std::string c = i < cells.size() ? format::printable(cells[i]) : "";
      l += " " + pad(shorten(c, w[i]), w[i], header ? t.columns[i].right : t.columns[i].right);
      if (i + 1 < n) l += " ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  std::vector<std::string> header;
  for (const auto& c : t.columns) header.push_back(c.title);
  out += line(header, true);
  for (const auto& row : t.rows) out += line(row, false);
  if (!t.note.empty()) out += "  (" + t.note + ")\n";
  return out;
}

std::string renderTableMarkdown(const ReportTable& t) {
  std::string out = "## " + format::markdownText(t.title) + "\n\n";  // diff titles name the traces
  if (t.rows.empty()) return out + "(" + mdCell(t.note.empty() ? "none" : t.note) + ")\n\n";
  out += "|";
  for (const auto& c : t.columns) out += " " + mdCell(c.title) + " |";
  out += "\n|";
  for (const auto& c : t.columns) out += c.right ? " ---: |" : " --- |";
  out += "\n";
  for (const auto& row : t.rows) {
    out += "|";
    for (size_t i = 0; i < t.columns.size(); ++i)
      out += " " + mdCell(i < row.size() ? row[i] : "") + " |";
    out += "\n";
  }
  if (!t.note.empty()) out += "\n_" + mdCell(t.note) + "_\n";
  return out + "\n";
}

std::string renderTableCsv(const ReportTable& t) {
  std::vector<std::string> cells;
  for (const ReportColumn& c : t.columns) cells.push_back(c.key);
  std::string out = format::csvLine(cells);
  for (const auto& row : t.rows) {
    // One cell per column: extra cells dropped, missing ones empty.
    for (size_t i = 0; i < cells.size(); ++i) cells[i] = i < row.size() ? row[i] : "";
    out += format::csvLine(cells);
  }
  return out;
}

namespace {

// The what-if table is worth a person's lines only when it predicts something.
bool whatIfPredicts(const analyzer::Analysis& a) {
  for (const analyzer::WhatIf& w : a.what_if) {
    for (const analyzer::WhatIfAlgorithm& x : w.algorithms) {
      if (!x.ran && x.predicted_ns >= 0) return true;
    }
  }
  return false;
}

}  // namespace

std::vector<ReportTable> humanTables(const analyzer::Analysis& a, size_t limit) {
  std::vector<ReportTable> out;
  for (const char* id : {"what_if", "steps", "rank_steps", "op_buckets", "stragglers", "hosts", "ranks",
                         "links", "host_traffic", "idle_links", "phases", "gpus", "channels"}) {
    // The GPU tables only where the trace has GPU data (NCCL with CUPTI); the host tables only
    // where the ranks ran on 2+ hosts.
    std::string_view name(id);
    if ((name == "gpus" && a.gpus.empty()) ||
        (name == "channels" && a.channel_traffic.empty()) ||
        ((name == "hosts" || name == "host_traffic") && a.hosts.size() < 2) ||
        ((name == "steps" || name == "rank_steps") && a.steps.steps.empty()) ||
        (name == "what_if" && !whatIfPredicts(a)))
      continue;
    ReportTable t;
    buildReportTable(a, id, Units::kHuman, limit, &t);
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

// Rows per table in the text and Markdown reports (the HTML report shows more); fewer where
// many hosts add the host and clock tables, so that the report stays within ~150 lines (256
// ranks on 32 hosts: 134 lines).
constexpr size_t kHumanTableRows = 12;
constexpr size_t kManyHosts = 8;
size_t humanTableRows(const analyzer::Analysis& a) {
  return a.hosts.size() >= kManyHosts ? 6 : kHumanTableRows;
}

std::string linkFacts(const analyzer::Analysis& a) {
  std::string out;
  const analyzer::LinkStats* busiest = nullptr;
  for (const auto& l : a.links)
    if (busiest == nullptr || l.bytes > busiest->bytes) busiest = &l;
  if (busiest != nullptr)
    out += "busiest link " + std::to_string(busiest->src) + "->" + std::to_string(busiest->dst) +
           ": " + format::bytes(busiest->bytes) + ", busy " + format::duration(busiest->busy_ns);
  if (const analyzer::LinkStats* b = bottleneckLink(a))
    out += "; bottleneck " + std::to_string(b->src) + "->" + std::to_string(b->dst) + " (" +
           formatGbps(b->busy_gbps) + " while busy)";
  out += "; " + std::to_string(a.idle_links.size()) + " idle link" +
         (a.idle_links.size() == 1 ? "" : "s");
  return out;
}

std::string modelLine(const analyzer::Analysis& a) {
  if (a.alpha_s < 0 || a.beta_s_per_byte < 0)
    return "model: none (" + (a.model_note.empty() ? std::string("no topology") : a.model_note) + ")";
  double gbps = a.beta_s_per_byte > 0 ? 1e-9 / a.beta_s_per_byte : -1;
  return "model (" + (a.model_source.empty() ? std::string("?") : a.model_source) + "): alpha " +
         format::duration(static_cast<int64_t>(a.alpha_s * 1e9)) + ", link " + formatGbps(gbps);
}

}  // namespace

std::string formatReportText(const analyzer::Analysis& a, const ReportContext& ctx) {
  const size_t W = kReportWidth;
  std::string out = wrapText("ringside report: " + ctx.trace, W, "", "  ");
  out += wrapText(reportHeadline(a), W, "", "  ");
  if (!ctx.recording_note.empty()) out += wrapText(ctx.recording_note, W, "", "  ");
  if (a.clock.domains.size() >= 2) {
    ReportTable clocks;
    buildReportTable(a, "clocks", Units::kHuman, humanTableRows(a), &clocks);
    out += "\n" + renderTableText(clocks, W);
    for (const std::string& line : clockNotes(a)) out += wrapText(line, W, "  ", "    ");
  }
  out += "\nFindings\n";
  if (a.findings.empty()) out += "  no findings: nothing stood out\n";
  for (const analyzer::Finding& f : a.findings) {
    std::string tag = "[" + severityTag(f.severity) + "] ";
    out += wrapText(f.message, W, "  " + tag, std::string(2 + tag.size(), ' '));
    const std::string indent(2 + tag.size(), ' ');
    if (!f.evidence.empty()) out += wrapText(f.evidence, W, indent, indent);
    if (!f.action.empty()) out += wrapText("try: " + f.action, W, indent, indent + "     ");
  }
  for (const std::string& w : a.warnings) out += wrapText(w, W, "  [note] ", "         ");
  for (const ReportTable& t : humanTables(a, humanTableRows(a))) {
    out += "\n" + renderTableText(t, W);
    if (t.id == "links") out += wrapText(linkFacts(a), W, "  ", "  ");
    if (t.id == "op_buckets") out += wrapText(modelLine(a), W, "  ", "  ");
    if (t.id == "what_if") {
      std::vector<std::string> said;  // each basis once: libraries usually share one
      for (const analyzer::WhatIf& w : a.what_if) {
        if (std::find(said.begin(), said.end(), w.basis) == said.end()) {
          out += wrapText("predicted with the " + w.basis, W, "  ", "    ");
          said.push_back(w.basis);
        }
        if (!w.confirm.empty()) out += wrapText(w.library + ", " + w.best + ": " + w.confirm, W, "  ", "    ");
      }
    }
  }
  // The trace's path, findings and notes quote the trace: nothing in it drives the terminal.
  return format::printableText(out);
}

std::string formatReportMarkdown(const analyzer::Analysis& a, const ReportContext& ctx) {
  std::string out = "# ringside report: " + mdCell(ctx.trace) + "\n\n" + mdCell(reportHeadline(a)) +
                    "\n\n";
  if (a.clock.domains.size() >= 2) {
    ReportTable clocks;
    buildReportTable(a, "clocks", Units::kHuman, humanTableRows(a), &clocks);
    out += renderTableMarkdown(clocks);
    for (const std::string& line : clockNotes(a)) out += "- " + mdCell(line) + "\n";
    out += "\n";
  }
  out += "## Findings\n\n";
  if (a.findings.empty()) out += "No findings: nothing stood out.\n";
  for (const analyzer::Finding& f : a.findings) {
    out += "- **" + severityTag(f.severity) + "** (" + mdCell(f.rule) + "): " + mdCell(f.message);
    if (!f.evidence.empty()) out += " — " + mdCell(f.evidence);
    if (!f.action.empty()) out += " *Try:* " + mdCell(f.action);
    out += "\n";
  }
  for (const std::string& w : a.warnings) out += "- note: " + mdCell(w) + "\n";
  out += "\n";
  for (const ReportTable& t : humanTables(a, humanTableRows(a))) {
    out += renderTableMarkdown(t);
    if (t.id == "links") out += mdCell(linkFacts(a)) + "\n\n";
    if (t.id == "op_buckets") out += mdCell(modelLine(a)) + "\n\n";
  }
  return format::printableText(out);  // every value went through mdCell(); this is a backstop
}

}  // namespace ringside::cli
