#include "record/summary_text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <vector>

namespace ringside::cli {
namespace {

constexpr size_t kMaxOps = 10;       // op rows shown; the rest are folded into one line
constexpr size_t kMaxRankRows = 16;  // more ranks: the 5 busiest and 5 quietest by share
constexpr size_t kLinkRows = 5;      // busiest and quietest links

[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  char buffer[256];
  va_list args;
  va_start(args, fmt);
  int n = std::vsnprintf(buffer, sizeof buffer, fmt, args);
  va_end(args);
  if (n < 0) return {};
  return std::string(buffer, std::min(static_cast<size_t>(n), sizeof buffer - 1));
}

// Cuts `text` to `width` columns, marking the cut with '~'.
std::string fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 1) + "~";
}

std::string percent(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return format("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

void addRankTable(const analyzer::Summary& summary, std::string* out) {
  *out += format("%-6s %-18s %8s %10s %12s %12s %8s\n", "rank", "host", "pid", "calls", "comm time",
                 "traced span", "in comm");
  auto row = [&](const analyzer::RankTotals& r) {
    *out += format("%-6d %-18s %8" PRId64 " %10s %12s %12s %8s%s\n", r.rank,
                   fit(r.host, 18).c_str(), r.pid, formatCount(r.calls).c_str(),
                   formatDuration(r.comm_ns).c_str(), formatDuration(r.trace_span_ns).c_str(),
                   percent(r.comm_ns, r.trace_span_ns).c_str(), r.cut_off ? "  CUT OFF" : "");
  };
  if (summary.ranks.size() <= kMaxRankRows) {
    for (const analyzer::RankTotals& r : summary.ranks) row(r);
    return;
  }
  std::vector<const analyzer::RankTotals*> by_share;
  for (const analyzer::RankTotals& r : summary.ranks) by_share.push_back(&r);
  auto share = [](const analyzer::RankTotals* r) {
    return r->trace_span_ns > 0
               ? static_cast<double>(r->comm_ns) / static_cast<double>(r->trace_span_ns)
               : 0.0;
  };
  std::stable_sort(by_share.begin(), by_share.end(),
                   [&](const auto* a, const auto* b) { return share(a) > share(b); });
  for (size_t i = 0; i < 5; ++i) row(*by_share[i]);
  *out += format("  ... %zu ranks in between ...\n", by_share.size() - 10);
  for (size_t i = by_share.size() - 5; i < by_share.size(); ++i) row(*by_share[i]);
}

void addLinkRows(const std::vector<analyzer::LinkTotals>& links, size_t begin, size_t end,
                 bool* any_from_recv, std::string* out) {
  for (size_t i = begin; i < end; ++i) {
    const analyzer::LinkTotals& l = links[i];
    *out += format("%6d -> %-6d %12s %12s %12s%s\n", l.src, l.dst, formatBytes(l.bytes).c_str(),
                   formatCount(l.messages).c_str(), formatDuration(l.busy_ns).c_str(),
                   l.from_recv ? " *" : "");
    *any_from_recv = *any_from_recv || l.from_recv;
  }
}

void addLinkTables(const analyzer::Summary& summary, std::string* out) {
  const auto& links = summary.links;
  if (links.empty()) return;
  bool any_from_recv = false;
  auto header = [](const char* title, bool columns) {
    return columns ? format("%-16s %12s %12s %12s\n", title, "bytes", "messages", "busy time")
                   : format("%s\n", title);
  };
  if (links.size() <= kLinkRows) {
    *out += header("links", true);
    addLinkRows(links, 0, links.size(), &any_from_recv, out);
  } else {
    *out += header("busiest links", true);
    addLinkRows(links, 0, kLinkRows, &any_from_recv, out);
    // Quietest: the tail, without repeating a link already shown above.
    size_t begin = std::max(kLinkRows, links.size() - kLinkRows);
    *out += header("quietest links", false);
    addLinkRows(links, begin, links.size(), &any_from_recv, out);
    *out += format("(%zu directed links in all)\n", links.size());
  }
  if (any_from_recv) *out += "* no send rows for this link: counted from its recv rows\n";
}

}  // namespace

std::string formatBytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  size_t unit = 0;
  value /= 1024;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return format(value >= 100 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
}

std::string formatDuration(int64_t ns) {
  if (ns < 0) return "-";
  if (ns < 1000) return format("%" PRId64 " ns", ns);
  double v = static_cast<double>(ns);
  if (ns < 1000000) return format(v < 1e5 ? "%.1f us" : "%.0f us", v / 1e3);
  if (ns < 1000000000) return format(v < 1e8 ? "%.2f ms" : "%.1f ms", v / 1e6);
  if (ns < 60 * int64_t{1000000000}) return format("%.2f s", v / 1e9);
  int64_t s = ns / 1000000000;
  if (s < 3600) return format("%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
  return format("%" PRId64 "h%02" PRId64 "m", s / 3600, (s % 3600) / 60);
}

std::string formatCount(int64_t count) {
  std::string digits = std::to_string(count < 0 ? -count : count);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

std::string formatSummary(const analyzer::Summary& summary) {
  std::string out;
  if (summary.world_size > 0) {
    out += format("ranks: %d of %d present", summary.ranks_present, summary.world_size);
  } else {
    out += format("ranks: %d present (world size unknown)", summary.ranks_present);
  }
  out += format(", %s collective calls, %s transfers\n", formatCount(summary.collectives).c_str(),
                formatCount(summary.transfers).c_str());
  if (!summary.missing_ranks.empty()) {
    out += "!! MISSING RANKS " + analyzer::formatRankList(summary.missing_ranks) +
           ": no rank file (never made a Gloo or NCCL call, or the file was lost)\n";
  }
  if (!summary.cut_off_ranks.empty()) {
    out += "!! CUT-OFF RANKS " + analyzer::formatRankList(summary.cut_off_ranks) +
           ": trace ends early (process killed or crashed; last events lost)\n";
  }
  for (const std::string& warning : summary.warnings) out += "!! " + warning + "\n";
  if (summary.dropped_events > 0)
    out += "   (raise the buffer with `ringside record --buffer-mb N`)\n";

  if (summary.ops.empty()) {
    out += "no collective calls recorded\n";
  } else {
    out += "\n";
    out += format("%-20s %-12s %10s %11s %12s %11s\n", "op", "library", "calls", "bytes",
                  "total time", "avg/call");
    size_t shown = std::min(summary.ops.size(), kMaxOps);
    for (size_t i = 0; i < shown; ++i) {
      const analyzer::OpTotals& op = summary.ops[i];
      out += format("%-20s %-12s %10s %11s %12s %11s\n", fit(op.op, 20).c_str(),
                    fit(op.library, 12).c_str(), formatCount(op.calls).c_str(),
                    formatBytes(op.bytes).c_str(), formatDuration(op.time_ns).c_str(),
                    formatDuration(op.calls > 0 ? op.time_ns / op.calls : 0).c_str());
    }
    if (summary.ops.size() > shown) {
      out += format("... %zu more op/library pairs\n", summary.ops.size() - shown);
    }
  }
  if (!summary.ranks.empty()) {
    out += "\n";
    addRankTable(summary, &out);
  }
  if (!summary.links.empty()) {
    out += "\n";
    addLinkTables(summary, &out);
  }
  return out;
}

}  // namespace ringside::cli
