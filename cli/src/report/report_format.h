// cli/report/report_format.h — `ringside report` and `ringside diff` output formats.
// Each function turns plain analyzer values into one document; none of them
// reads a trace or analyses anything (one model, many front ends).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/text_wrap.h"
#include "report/report_tables.h"
#include "ringside/analyzer/analysis.h"

namespace ringside::cli {

inline constexpr size_t kJsonCollectiveCap = 10000;  // per-instance rows in JSON before capping
// JSON: phase rows before capping, per collective of the cap (several phases each).
inline constexpr size_t kJsonPhasesPerCollective = 4;
// HTML: ranks drawn one lane or node each, at most (a trace's world_size of a million must not
// make a million lanes).
inline constexpr int kMaxDrawnRanks = 256;

struct ReportContext {
  std::string trace;  // path as given on the command line
  size_t json_collective_cap = kJsonCollectiveCap;
  std::string recording_note = {};  // one line when the recording was bounded, else ""
};

// The phase rows a report in `format` prints (AnalysisOptions::phase_rows): the JSON report
// the first kJsonPhasesPerCollective x `json_collective_cap` (every row when the cap is 0), the
// HTML report the rows its phase timeline draws (ranks below kMaxDrawnRanks, each instance's
// extent); text, md and csv none: they print the totals (Analysis::phases_left_out).
analyzer::PhaseRowsKept reportPhaseRows(const std::string& format, size_t json_collective_cap);

// Text for a 100-column terminal: headline, findings first, then tables.
std::string formatReportText(const analyzer::Analysis& a, const ReportContext& ctx);
// The same content as Markdown (GitHub tables).
std::string formatReportMarkdown(const analyzer::Analysis& a, const ReportContext& ctx);
// docs/report-json.md: {"schema":"ringside-report/1","schema_version":1,...}.
std::string formatReportJson(const analyzer::Analysis& a, const ReportContext& ctx);
// One self-contained HTML page (inline CSS and SVG, no external references).
std::string formatReportHtml(const analyzer::Analysis& a, const ReportContext& ctx);

// Renderers of one table.
std::string renderTableText(const ReportTable& t, size_t width = kReportWidth);
std::string renderTableMarkdown(const ReportTable& t);
std::string renderTableCsv(const ReportTable& t);  // header + rows, RFC 4180 quoting, \r\n-free
std::string mdCell(const std::string& s);          // Markdown table cell: | escaped, newlines as spaces

// The tables of the human reports (text, Markdown, HTML), in order, each of at
// most `limit` rows; the GPU tables only where the trace has GPU data.
std::vector<ReportTable> humanTables(const analyzer::Analysis& a, size_t limit);

// A/B comparison.
std::string formatDiffText(const analyzer::Diff& d);
std::string formatDiffMarkdown(const analyzer::Diff& d);
std::string formatDiffJson(const analyzer::Diff& d);
std::string formatDiffCsv(const analyzer::Diff& d);
std::string formatDiffHtml(const analyzer::Diff& d);

}  // namespace ringside::cli
