#include "record/summary_text.h"

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <vector>

#include "ringside/format/text.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

constexpr size_t kMaxOps = 10;       // op rows shown; the rest are folded into one line
constexpr size_t kMaxRankRows = 16;  // more ranks: the 5 busiest and 5 quietest by share
constexpr size_t kLinkRows = 5;      // busiest and quietest links

// Cuts `text` to `width` columns, marking the cut with '~'.
std::string fit(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  return text.substr(0, width - 1) + "~";
}

std::string percent(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return format::printf("%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
}

void addRankTable(const analyzer::Summary& summary, std::string* out) {
  *out += format::printf("%-6s %-18s %8s %10s %12s %12s %8s\n", "rank", "host", "pid", "calls",
                         "comm time", "traced span", "in comm");
  auto row = [&](const analyzer::RankTotals& r) {
    *out += format::printf(
        "%-6d %-18s %8" PRId64 " %10s %12s %12s %8s%s\n", r.rank, fit(r.host, 18).c_str(), r.pid,
        format::count(r.calls).c_str(), format::duration(r.comm_ns).c_str(),
        format::duration(r.trace_span_ns).c_str(), percent(r.comm_ns, r.trace_span_ns).c_str(),
        r.cut_off ? "  CUT OFF" : "");
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
  *out += format::printf("  ... %zu ranks in between ...\n", by_share.size() - 10);
  for (size_t i = by_share.size() - 5; i < by_share.size(); ++i) row(*by_share[i]);
}

void addLinkRows(const std::vector<analyzer::LinkTotals>& links, size_t begin, size_t end,
                 bool* any_from_recv, std::string* out) {
  for (size_t i = begin; i < end; ++i) {
    const analyzer::LinkTotals& l = links[i];
    *out += format::printf("%6d -> %-6d %12s %12s %12s%s\n", l.src, l.dst,
                           format::bytes(l.bytes).c_str(), format::count(l.messages).c_str(),
                           format::duration(l.busy_ns).c_str(), l.from_recv ? " *" : "");
    *any_from_recv = *any_from_recv || l.from_recv;
  }
}

void addLinkTables(const analyzer::Summary& summary, std::string* out) {
  const auto& links = summary.links;
  if (links.empty()) return;
  bool any_from_recv = false;
  auto header = [](const char* title, bool columns) {
    return columns
               ? format::printf("%-16s %12s %12s %12s\n", title, "bytes", "messages", "busy time")
               : format::printf("%s\n", title);
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
    *out += format::printf("(%zu directed links in all)\n", links.size());
  }
  if (any_from_recv) *out += "* no send rows for this link: counted from its recv rows\n";
}

}  // namespace

// The rank files' meta (rank.<r>.<key>) summed over the ranks: what a bounded recording kept.
std::string formatSummary(const analyzer::Summary& summary) {
  std::string out;
  if (summary.world_size > 0) {
    out += format::printf("ranks: %d of %d present", summary.ranks_present, summary.world_size);
  } else {
    out += format::printf("ranks: %d present (world size unknown)", summary.ranks_present);
  }
  // "calls" are instances (matched across ranks) here as in the op table and `ringside report`;
  // the rows the ranks recorded are "rank calls" (docs/metrics.md).
  int64_t instances = 0;
  for (const analyzer::OpTotals& op : summary.ops) instances += op.calls;
  out += format::printf(", %s collective calls (%s rank calls), %s transfers\n",
                        format::count(instances).c_str(), format::count(summary.collectives).c_str(),
                        format::count(summary.transfers).c_str());
  if (!summary.missing_ranks.empty() && summary.skipped_inputs.empty()) {
    out += "!! MISSING RANKS " + analyzer::formatRankList(summary.missing_ranks) +
           ": no rank file (never made a Gloo or NCCL call, or the file was lost)\n";
  } else if (!summary.missing_ranks.empty()) {
    // The file may well exist: the merge skipped it as unreadable (damaged, truncated, ...).
    out += "!! MISSING RANKS " + analyzer::formatRankList(summary.missing_ranks) +
           ": no usable rank file\n";
  }
  if (!summary.skipped_inputs.empty()) {
    const std::vector<std::string>& names = summary.skipped_inputs;
    out += "!! UNREADABLE RANK FILES skipped by the merge (" + std::to_string(names.size()) + "): ";
    for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
    out += names.size() > 5 ? ", ...\n" : "\n";
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
    out += format::printf("%-20s %-12s %10s %11s %12s %11s\n", "op", "library", "calls", "bytes",
                          "time", "mean/call");
    size_t shown = std::min(summary.ops.size(), kMaxOps);
    for (size_t i = 0; i < shown; ++i) {
      const analyzer::OpTotals& op = summary.ops[i];
      out += format::printf("%-20s %-12s %10s %11s %12s %11s\n", fit(op.op, 20).c_str(),
                            fit(op.library, 12).c_str(), format::count(op.calls).c_str(),
                            format::bytes(op.bytes).c_str(), format::duration(op.time_ns).c_str(),
                            format::duration(op.calls > 0 ? op.sum_ns / op.calls : 0).c_str());
    }
    if (summary.ops.size() > shown) {
      out += format::printf("... %zu more op/library pairs\n", summary.ops.size() - shown);
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
  // Hosts, ops and file names come from the trace: nothing in them drives the terminal.
  return format::printableText(out);
}

}  // namespace ringside::cli
