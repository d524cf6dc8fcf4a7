// analyzer/summary.cpp — the run summary, in one streaming pass.
//
// Memory: per-(op, library), per-rank and per-link accumulators, and one small
// record per collective instance (the per-op figures are the analyzer's: counted
// and timed per instance, docs/metrics.md). The per-rank interval unions rely on
// the reader's order: collectives by (rank, start_ns), transfers by start_ns.
#include "ringside/analyzer/summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "interval_union.h"
#include "link_time.h"
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
  // sender_in: the sender's entry into the row's instance (-1 unknown), as the analyzer counts
  // busy time (link_time.h).
  void add(const TransferRow& row, bool send, int64_t sender_in) {
    messages += row.chunk == -2 && row.slot > 0 ? row.slot : 1;  // per-link totals (schema.md)
    bytes = addSaturated(bytes, row.bytes);
    if (row.end_ns != storage::kNone && row.end_ns >= row.start_ns)
      busy.add(detail::movingFrom(send, row.start_ns, row.end_ns, sender_in), row.end_ns);
  }
};

struct LinkAcc {
  SideAcc send;
  SideAcc recv;
};

// One collective instance (communicator, sequence number), as the analyzer matches them.
struct InstanceAcc {
  int op = -1;             // index into the op list
  int64_t bytes = 0;       // max over ranks
  int64_t last_start = 0;  // the last rank's entry
  int64_t last_end = 0;    // the last rank's return
  int64_t index = 0;       // in order of first call
};

// The instances of the trace, matched by (comm, seq) and grouped per (op, library).
class InstanceTable {
 public:
  void add(const CollectiveRow& row) {
    int comm = id(comms_, row.comm);
    int op = id(ops_, std::string(row.op) + '\n' + std::string(row.library));
    uint64_t key = (static_cast<uint64_t>(comm) << 40) ^ static_cast<uint64_t>(row.seq);
    int64_t end = std::max(row.start_ns, row.end_ns);
    auto [it, fresh] = instances_.try_emplace(key);
    InstanceAcc& c = it->second;
    if (fresh) c = {op, row.bytes, row.start_ns, end, static_cast<int64_t>(instances_.size()) - 1};
    of_call_[row.id] = c.index;
    entries_.add(c.index, row.rank, row.start_ns);
    if (fresh) return;
    c.bytes = std::max(c.bytes, row.bytes);
    c.last_start = std::max(c.last_start, row.start_ns);
    c.last_end = std::max(c.last_end, end);
  }
  void finish() { entries_.finish(); }
  // The entry of `rank` into the instance of call `collective_id` (a merged call id); -1 unknown.
  int64_t entryOf(int64_t collective_id, int32_t rank) const {
    auto call = of_call_.find(collective_id);
    return call == of_call_.end() ? -1 : entries_.find(call->second, rank);
  }
  // Per (op, library): instances, payload, the union and the sum of their times.
  void totals(std::map<std::pair<std::string, std::string>, OpTotals>* ops) const {
    std::vector<std::vector<std::pair<int64_t, int64_t>>> spans(ops_.size());
    std::vector<OpTotals> per_op(ops_.size());
    for (const auto& [key, c] : instances_) {
      OpTotals& t = per_op[static_cast<size_t>(c.op)];
      ++t.calls;
      t.bytes = addSaturated(t.bytes, c.bytes);
      int64_t end = std::max(c.last_start, c.last_end);
      t.sum_ns = addSaturated(t.sum_ns, end - c.last_start);
      spans[static_cast<size_t>(c.op)].emplace_back(c.last_start, end);
    }
    for (const auto& [name, index] : ops_) {
      OpTotals& t = per_op[static_cast<size_t>(index)];
      auto& s = spans[static_cast<size_t>(index)];
      std::sort(s.begin(), s.end());
      IntervalUnion u;
      for (const auto& [from, to] : s) u.add(from, to);
      t.time_ns = u.total();
      size_t cut = name.find('\n');
      t.op = name.substr(0, cut);
      t.library = name.substr(cut + 1);
      (*ops)[{t.op, t.library}] = t;
    }
  }

 private:
  static int id(std::map<std::string, int, std::less<>>& ids, std::string_view name) {
    auto it = ids.find(name);
    if (it == ids.end()) it = ids.emplace(std::string(name), static_cast<int>(ids.size())).first;
    return it->second;
  }
  std::map<std::string, int, std::less<>> comms_, ops_;
  std::unordered_map<uint64_t, InstanceAcc> instances_;
  std::unordered_map<int64_t, int64_t> of_call_;  // call id -> instance index
  detail::EntryTimes entries_;
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
    // As the analyzer counts a link (docs/metrics.md): bytes and messages from the sending
    // side when recorded, busy time from the receiving side when recorded.
    bool from_recv = acc.send.messages == 0;
    const SideAcc& side = from_recv ? acc.recv : acc.send;
    int64_t recv_busy = acc.recv.busy.total();
    out->links.push_back({key.first, key.second, side.messages, side.bytes,
                          recv_busy > 0 ? recv_busy : side.busy.total(), from_recv});
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
  InstanceTable instances;
  std::map<int, RankAcc> ranks;
  for (const storage::RankInfo& info : infos) ranks[info.rank];
  bool ok = reader.forEachCollective(
      [&](const CollectiveRow& row) {
        ++out->collectives;
        // Rows the analyzer would skip (times or sizes no trace can hold) are skipped here too.
        if (row.start_ns < 0 || row.start_ns > (int64_t{1} << 62) ||
            row.end_ns > (int64_t{1} << 62) || row.bytes < 0 || row.bytes > (int64_t{1} << 48)) {
          return true;
        }
        instances.add(row);

        RankAcc& rank = ranks[row.rank];
        ++rank.calls;
        rank.collectives.add(row.start_ns, row.end_ns);
        rank.events.add(row.start_ns, row.end_ns);
        rank.comm.add(row.start_ns, row.end_ns);
        return true;
      },
      error);
  if (!ok) return false;
  instances.finish();

  std::map<std::pair<int, int>, LinkAcc> links;
  ok = reader.forEachTransfer(
      [&](const TransferRow& row) {
        ++out->transfers;
        bool send = collective::is(row.side, collective::Side::kSend);
        if (!send && !collective::is(row.side, collective::Side::kRecv)) return true;
        LinkAcc& link = links[{row.src_rank, row.dst_rank}];
        (send ? link.send : link.recv).add(row, send, instances.entryOf(row.collective_id, row.src_rank));
        int recorder = send ? row.src_rank : row.dst_rank;
        int64_t end = row.end_ns == storage::kNone ? row.start_ns : row.end_ns;
        if (recorder >= 0) ranks[recorder].events.add(row.start_ns, end);
        return true;
      },
      error);
  if (!ok) return false;

  instances.totals(&ops);
  addTotals(infos, std::move(ops), ranks, links, out);
  return true;
}

}  // namespace ringside::analyzer
