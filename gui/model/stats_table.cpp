#include "ringside/gui/stats_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>
#include <tuple>

#include "ringside/analyzer/collective_math.h"
#include "ringside/format/csv.h"
#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const char* statsColumnName(StatsColumn c) {
  switch (c) {
    case StatsColumn::kOp: return "op";
    case StatsColumn::kLibrary: return "library";
    case StatsColumn::kSize: return "size";
    case StatsColumn::kCount: return "count";
    case StatsColumn::kTotal: return "total_ns";
    case StatsColumn::kMean: return "mean_ns";
    case StatsColumn::kP50: return "p50_ns";
    case StatsColumn::kP99: return "p99_ns";
    case StatsColumn::kBusbw: return "busbw_gbps";
  }
  return "?";
}

std::vector<StatsRow> statsRows(const analyzer::Analysis& a) {
  std::vector<StatsRow> rows;
  rows.reserve(a.op_buckets.size());
  for (const analyzer::OpBucket& b : a.op_buckets) {
    StatsRow r;
    r.op = b.op;
    r.library = b.library;
    r.size_lo = b.size_lo;
    r.min_bytes = b.min_bytes;
    r.max_bytes = b.max_bytes;
    r.size_hi = b.size_hi;
    r.count = b.count;
    r.total_ns = b.total_ns;
    r.mean_ns = b.count > 0 ? static_cast<double>(b.total_ns) / static_cast<double>(b.count) : 0;
    r.p50_ns = b.p50_ns;
    r.p99_ns = b.p99_ns;
    r.busbw_gbps = b.mean_busbw_gbps;
    rows.push_back(std::move(r));
  }
  sortStats(&rows, StatsColumn::kOp, true);
  return rows;
}

void sortStats(std::vector<StatsRow>* rows, StatsColumn column, bool ascending) {
  auto key = [](const StatsRow& r) { return std::tie(r.op, r.library, r.size_lo); };
  std::stable_sort(rows->begin(), rows->end(), [&](const StatsRow& x, const StatsRow& y) {
    auto cmp = [&](const auto& a, const auto& b) { return a < b ? -1 : b < a ? 1 : 0; };
    int c = 0;
    switch (column) {
      case StatsColumn::kOp: c = cmp(x.op, y.op); break;
      case StatsColumn::kLibrary: c = cmp(x.library, y.library); break;
      case StatsColumn::kSize: c = cmp(x.size_lo, y.size_lo); break;
      case StatsColumn::kCount: c = cmp(x.count, y.count); break;
      case StatsColumn::kTotal: c = cmp(x.total_ns, y.total_ns); break;
      case StatsColumn::kMean: c = cmp(x.mean_ns, y.mean_ns); break;
      case StatsColumn::kP50: c = cmp(x.p50_ns, y.p50_ns); break;
      case StatsColumn::kP99: c = cmp(x.p99_ns, y.p99_ns); break;
      case StatsColumn::kBusbw: c = cmp(x.busbw_gbps, y.busbw_gbps); break;
    }
    if (c != 0) return ascending ? c < 0 : c > 0;
    return key(x) < key(y);
  });
}

std::string sizeLabel(const StatsRow& r) { return analyzer::sizeText(r.min_bytes, r.max_bytes); }

std::vector<int> filterStats(const std::vector<StatsRow>& rows, const std::string& filter) {
  std::vector<std::string> words;
  std::istringstream in(lower(filter));
  for (std::string w; in >> w;) words.push_back(w);
  std::vector<int> out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const StatsRow& r = rows[i];
    const std::string hay = lower(r.op + " " + r.library + " " + sizeLabel(r));
    bool all = std::all_of(words.begin(), words.end(),
                           [&](const std::string& w) { return hay.find(w) != std::string::npos; });
    if (all) out.push_back(static_cast<int>(i));
  }
  return out;
}

std::string statsCsv(const std::vector<StatsRow>& rows, const std::vector<int>& indexes) {
  std::string out = format::csvLine({"op", "library", "size_lo", "size_hi", "count", "total_ns",
                                     "mean_ns", "p50_ns", "p99_ns", "busbw_gbps"});
  for (int i : indexes) {
    if (i < 0 || static_cast<size_t>(i) >= rows.size()) continue;
    const StatsRow& r = rows[static_cast<size_t>(i)];
    out += format::csvLine({r.op, r.library, std::to_string(r.size_lo), std::to_string(r.size_hi),
                            std::to_string(r.count), std::to_string(r.total_ns),
                            std::to_string(std::llround(r.mean_ns)), std::to_string(r.p50_ns),
                            std::to_string(r.p99_ns), format::printf("%.6g", r.busbw_gbps)});
  }
  return out;
}

}  // namespace ringside::gui
