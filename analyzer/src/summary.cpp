// analyzer/summary.cpp — the run summary, in one streaming pass.
//
// Memory: per-(op, library), per-rank and per-link accumulators only. The
// interval unions rely on the reader's order: collectives by (rank, start_ns),
// transfers by start_ns, so each union only has to remember its open interval.
#include "ringside/analyzer/summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "interval_union.h"
#include "ringside/analyzer/collective_math.h"
#include "ringside/storage/trace_reader.h"
#include "trace_meta.h"

namespace ringside::analyzer {
namespace {

using storage::CollectiveRow;
using storage::TransferRow;

using detail::IntervalUnion;
using detail::TimeSpan;

struct RankAcc {
  int64_t calls = 0;
  TimeSpan collectives;
  TimeSpan events;
  IntervalUnion comm;
};

struct SideAcc {
  int64_t messages = 0;
  int64_t bytes = 0;
  IntervalUnion busy;
  void add(const TransferRow& row) {
    ++messages;
    bytes = addSaturated(bytes, row.bytes);
    if (row.end_ns != storage::kNone && row.end_ns >= row.start_ns)
      busy.add(row.start_ns, row.end_ns);
  }
};

struct LinkAcc {
  SideAcc send;
  SideAcc recv;
};

// One line for all drops: per rank counts when few ranks dropped, else the worst one.
std::string droppedWarning(const Summary& summary) {
  const std::map<int, int64_t>& dropped = summary.dropped_by_rank;
  std::string text = detail::droppedTotal(dropped, detail::kDroppedEventsText) + ": ";
  if (dropped.size() <= 4) return text + detail::droppedPerRank(dropped);
  std::vector<int> ranks;
  std::pair<int, int64_t> worst{-1, -1};
  for (const auto& [rank, count] : dropped) {
    ranks.push_back(rank);
    if (count > worst.second) worst = {rank, count};
  }
  return text + "ranks " + formatRankList(ranks) + ", most on rank " + std::to_string(worst.first) +
         " (" + std::to_string(worst.second) + ")";
}

void addMetaFindings(const std::map<std::string, std::string>& meta,
                     const std::vector<storage::RankInfo>& infos, Summary* out) {
  detail::TraceMeta facts = detail::readTraceMeta(meta, infos);
  out->world_size = facts.world_size;
  out->missing_ranks = facts.missing;
  out->cut_off_ranks = facts.cut_off;
  out->skipped_inputs = facts.skipped;
  out->dropped_by_rank = facts.dropped;
  for (const auto& [rank, dropped] : facts.dropped) out->dropped_events += dropped;
  for (auto& [reason, ranks] : facts.inactive) {
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    out->warnings.push_back(text + formatRankList(ranks) + ": interposition " + reason);
  }
  if (out->dropped_events > 0) out->warnings.push_back(droppedWarning(*out));
  for (const std::string& w : facts.warnings) out->warnings.push_back(w);
  if (!facts.forked.empty()) out->warnings.push_back(detail::forkedChildrenText(facts.forked));
}

void addRankTotals(const std::vector<storage::RankInfo>& infos,
                   const std::map<int, RankAcc>& ranks, Summary* out) {
  std::set<int> cut_off(out->cut_off_ranks.begin(), out->cut_off_ranks.end());
  for (const auto& [rank, acc] : ranks) {
    RankTotals totals;
    totals.rank = rank;
    for (const storage::RankInfo& info : infos) {
      if (info.rank == rank) {
        totals.host = info.host;
        totals.pid = info.pid;
      }
    }
    totals.calls = acc.calls;
    totals.span_ns = acc.collectives.length();
    totals.comm_ns = acc.comm.total();
    totals.trace_span_ns = acc.events.length();
    totals.cut_off = cut_off.count(rank) != 0;
    out->ranks.push_back(std::move(totals));
  }
  std::set<int> present;
  for (const storage::RankInfo& info : infos) present.insert(info.rank);
  out->ranks_present = static_cast<int>(present.size());
}

// Ops by time (most first), ranks by rank, links by bytes (busiest first).
void addTotals(const std::vector<storage::RankInfo>& infos,
               std::map<std::pair<std::string, std::string>, OpTotals> ops,
               const std::map<int, RankAcc>& ranks,
               const std::map<std::pair<int, int>, LinkAcc>& links, Summary* out) {
  for (auto& [key, op] : ops) out->ops.push_back(std::move(op));
  std::sort(out->ops.begin(), out->ops.end(), [](const OpTotals& a, const OpTotals& b) {
    return std::tie(b.time_ns, a.op, a.library) < std::tie(a.time_ns, b.op, b.library);
  });
  addRankTotals(infos, ranks, out);
  for (const auto& [key, acc] : links) {
    bool from_recv = acc.send.messages == 0;
    const SideAcc& side = from_recv ? acc.recv : acc.send;
    out->links.push_back(
        {key.first, key.second, side.messages, side.bytes, side.busy.total(), from_recv});
  }
  std::sort(out->links.begin(), out->links.end(), [](const LinkTotals& a, const LinkTotals& b) {
    return std::tie(b.bytes, b.messages, a.src, a.dst) <
           std::tie(a.bytes, a.messages, b.src, b.dst);
  });
}

}  // namespace

std::string formatRankList(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

bool summarize(storage::TraceReader& reader, Summary* out, std::string* error) {
  *out = Summary{};
  std::vector<storage::RankInfo> infos = reader.ranks();
  addMetaFindings(reader.meta(), infos, out);

  std::map<std::pair<std::string, std::string>, OpTotals> ops;
  std::map<int, RankAcc> ranks;
  for (const storage::RankInfo& info : infos) ranks[info.rank];
  bool ok = reader.forEachCollective(
      [&](const CollectiveRow& row) {
        ++out->collectives;
        // Unsigned: a damaged row's times may be any two int64_t values.
        int64_t duration =
            row.end_ns <= row.start_ns
                ? 0
                : static_cast<int64_t>(std::min<uint64_t>(
                      static_cast<uint64_t>(row.end_ns) - static_cast<uint64_t>(row.start_ns),
                      INT64_MAX));
        auto key = std::make_pair(std::string(row.op), std::string(row.library));
        auto [it, inserted] = ops.try_emplace(key);
        OpTotals& op = it->second;
        if (inserted) std::tie(op.op, op.library) = key;
        ++op.calls;
        op.bytes = addSaturated(op.bytes, row.bytes);
        op.time_ns = addSaturated(op.time_ns, duration);

        RankAcc& rank = ranks[row.rank];
        ++rank.calls;
        rank.collectives.add(row.start_ns, row.end_ns);
        rank.events.add(row.start_ns, row.end_ns);
        rank.comm.add(row.start_ns, row.end_ns);
        return true;
      },
      error);
  if (!ok) return false;

  std::map<std::pair<int, int>, LinkAcc> links;
  ok = reader.forEachTransfer(
      [&](const TransferRow& row) {
        ++out->transfers;
        bool send = row.side == "send";
        if (!send && row.side != "recv") return true;
        LinkAcc& link = links[{row.src_rank, row.dst_rank}];
        (send ? link.send : link.recv).add(row);
        int recorder = send ? row.src_rank : row.dst_rank;
        int64_t end = row.end_ns == storage::kNone ? row.start_ns : row.end_ns;
        if (recorder >= 0) ranks[recorder].events.add(row.start_ns, end);
        return true;
      },
      error);
  if (!ok) return false;

  addTotals(infos, std::move(ops), ranks, links, out);
  return true;
}

}  // namespace ringside::analyzer
