// cli/report/report_tables.h — the tables of `ringside report`, built once from an
// analyzer::Analysis and rendered by every format (text, Markdown, CSV, HTML).
//
// A table is columns + rows of cell strings. Human tables use units ("64 KiB",
// "1.2 ms"); raw tables (CSV) hold plain numbers with the unit in the column
// key (total_ns, bytes). Nothing here analyses: the few views that regroup the
// analysis (stragglers, phase totals) only count and sum its values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"

namespace ringside::cli {

struct ReportColumn {
  std::string key;    // CSV header / JSON-ish key: size_lo, total_ns, ...
  std::string title;  // human header: size, total, ...
  bool right = true;  // numbers align right
};

struct ReportTable {
  std::string id;     // op_buckets, collectives, links, idle_links, phases, ranks, stragglers,
                      // gpus, channels, hosts, host_traffic, clocks, steps, rank_steps
  std::string title;  // "Collectives by op and size"
  std::vector<ReportColumn> columns;
  std::vector<std::vector<std::string>> rows;
  std::string note;   // one line under the table ("12 more links", ...); may be empty
};

enum class Units { kHuman, kRaw };

// Tables a CSV export can ask for (--csv-table), in order.
const std::vector<std::string>& csvTableIds();

// One table by id; false if the id is unknown. `limit` caps the rows of long
// tables (links, idle links, collectives) for human output; 0 = all.
bool buildReportTable(const analyzer::Analysis& a, const std::string& id, Units units,
                      size_t limit, ReportTable* out);

// Training steps (report_steps.cpp): per step over its ranks ("steps"; a person sees the
// slowest 16 at most) and per rank over its steps ("rank_steps"); both empty without steps.
void stepTable(const analyzer::Analysis& a, Units units, size_t limit, ReportTable* out);
void rankStepTable(const analyzer::Analysis& a, Units units, size_t limit, ReportTable* out);
// Keeps a person's per-rank table readable whatever the rank count: when it has more than
// 2 x limit rows, the `limit` rows of highest `score` and (lowest_too) the `limit` of lowest,
// in their order, and a note for the rest ("980 more ranks in between ..."). limit 0: all.
void keepRowsForPerson(ReportTable* t, const std::vector<double>& score, size_t limit,
                       bool lowest_too, const std::string& what);

// Stragglers: per rank, how often it entered a collective last and the skew it caused.
struct StragglerRow {
  int rank = -1;
  int64_t times_last = 0;       // collectives (with >= 2 ranks) it entered last
  int64_t total_skew_ns = 0;    // arrival skew summed over those
  int64_t max_skew_ns = 0;
};
std::vector<StragglerRow> stragglers(const analyzer::Analysis& a);  // most skew first

// Phase totals over all instances, one per phase name: the rows in Analysis::phases and those
// folded into Analysis::phases_left_out.
using analyzer::PhaseTotal;
std::vector<PhaseTotal> phaseTotals(const analyzer::Analysis& a);  // most time first

// The link that gates the others: of the links that carried at least a tenth of
// the busiest one's bytes, the one with the lowest rate while busy; nullptr if none, or if its
// rate is within 20% of their median (no link gates the others).
const analyzer::LinkStats* bottleneckLink(const analyzer::Analysis& a);

// "1.23" GB/s (3 significant digits), "-" when negative/unknown.
std::string formatGbps(double gbps);
// The clock section's lines for a trace with 2+ clock domains (none otherwise): the domains'
// summary, the messages that still appear to arrive before they were sent, and a warning when the
// largest uncertainty exceeds the median arrival skew or collective duration.
std::vector<std::string> clockNotes(const analyzer::Analysis& a);

// One-line header facts: "3 ranks (0-2) · 48 collectives · 640 transfers · 12.3 ms".
std::string reportHeadline(const analyzer::Analysis& a);

}  // namespace ringside::cli
