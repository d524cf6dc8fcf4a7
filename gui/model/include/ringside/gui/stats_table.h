// gui/stats_table.h — the statistics table's rows: one per op, library and power-of-two
// size bucket, from Analysis::op_buckets (the analyzer computes count, total, p50, p99 and
// busbw; the mean is total / count). Sorting, text filtering and CSV live here so the view
// only draws. No ImGui here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"

namespace ringside::gui {

struct StatsRow {
  std::string op, library;
  int64_t size_lo = 0, size_hi = 0;  // bytes in [lo, hi)
  int64_t count = 0, total_ns = 0;
  double mean_ns = 0;
  int64_t p50_ns = 0, p99_ns = 0;
  double busbw_gbps = 0;
  int64_t min_bytes = 0, max_bytes = 0;  // the calls' actual sizes (shown: analyzer::sizeText)
};

enum class StatsColumn { kOp, kLibrary, kSize, kCount, kTotal, kMean, kP50, kP99, kBusbw };
inline constexpr int kStatsColumns = 9;
const char* statsColumnName(StatsColumn c);  // "op", "library", "size", ..., "busbw_gbps"

std::vector<StatsRow> statsRows(const analyzer::Analysis& a);

// Stable sort by one column; ties keep (op, library, size) order.
void sortStats(std::vector<StatsRow>* rows, StatsColumn column, bool ascending);

// The row's sizes as the report and diff show them (analyzer::sizeText): "26.5 KiB", "2.0 KiB-3.0 KiB".
std::string sizeLabel(const StatsRow& r);

// Indexes of the rows that match every blank-separated word of `filter` (case-insensitive,
// a substring of the op, the library or the size label); all rows for an empty filter.
std::vector<int> filterStats(const std::vector<StatsRow>& rows, const std::string& filter);

// Header + the rows at `indexes`, in that order; times in ns, busbw in GB/s.
std::string statsCsv(const std::vector<StatsRow>& rows, const std::vector<int>& indexes);

}  // namespace ringside::gui
