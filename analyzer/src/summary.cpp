// analyzer/summary.cpp — the run summary, in one streaming pass.
//
// Memory: per-(op, library), per-rank and per-link accumulators, and one small
// record per collective instance (the per-op figures are the analyzer's: counted
// and timed per instance, docs/metrics.md). The per-rank interval unions rely on
// the reader's order of collectives, by (rank, start_ns); the links' busy time on
// each link's rows in (start_ns, id) order (TransferTotals).
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
#include "ringside/storage/stage_timings.h"
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

// A link side's busy-time intervals put back into (start_ns, id) order, the order the union
// must take them in (movingFrom shifts a receive's start, so the union depends on the order),
// within a window of kSlots rows: NCCL records a message when it completes, so a few channels'
// messages on one link come out of the order they were posted in. add() returns false for a row
// that comes later than that (earlier than one already passed on): the side must then be counted
// in a time-ordered read.
class TimeOrderWindow {
 public:
  struct Item {
    int64_t start, id;  // the order
    int64_t from, end;  // the interval
  };
  bool add(const Item& item, IntervalUnion* to) {
    if (fed_ && !before(last_, item)) return false;
    if (count_ == kSlots) {
      if (before(item, at(0))) {
        feed(item, to);
        return true;
      }
      feed(at(0), to);
      head_ = (head_ + 1) % kSlots;
      --count_;
    }
    size_t i = count_;
    for (; i > 0 && before(item, at(i - 1)); --i) at(i) = at(i - 1);
    at(i) = item;
    ++count_;
    return true;
  }
  void flush(IntervalUnion* to) {
    for (size_t i = 0; i < count_; ++i) feed(at(i), to);
    count_ = 0;
  }

 private:
  static constexpr size_t kSlots = 16;  // a real Gloo DDP trace had rows 10 back
  static bool before(const Item& a, const Item& b) {
    return a.start != b.start ? a.start < b.start : a.id < b.id;
  }
  Item& at(size_t i) { return slots_[(head_ + i) % kSlots]; }
  void feed(const Item& item, IntervalUnion* to) {
    to->add(item.from, item.end);
    last_ = item;
    fed_ = true;
  }
  Item slots_[kSlots] = {};
  size_t head_ = 0, count_ = 0;
  Item last_ = {};
  bool fed_ = false;
};

struct SideAcc {
  int64_t messages = 0;
  int64_t bytes = 0;
  IntervalUnion busy;
  TimeOrderWindow window;  // what goes into busy
  // Whether its rows could be taken in the order they came: within the window's reach of time
  // order, and no negative byte count (a saturated sum of mixed signs depends on the order too).
  bool in_order = true;
  // sender_in: the sender's entry into the row's instance (-1 unknown), as the analyzer counts
  // busy time (link_time.h).
  void add(const TransferRow& row, bool send, int64_t sender_in) {
    if (row.bytes < 0) in_order = false;
    messages += row.chunk == -2 && row.slot > 0 ? row.slot : 1;  // per-link totals (schema.md)
    bytes = addSaturated(bytes, row.bytes);
    if (row.end_ns != storage::kNone && row.end_ns >= row.start_ns) {
      const int64_t from = detail::movingFrom(send, row.start_ns, row.end_ns, sender_in);
      if (!window.add({row.start_ns, row.id, from, row.end_ns}, &busy)) in_order = false;
    }
  }
  // After its last row.
  void finish() { window.flush(&busy); }
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
    // A rank's calls mostly repeat the communicator and op of the call before.
    if (comm_ < 0 || row.comm != last_comm_) {
      comm_ = id(comms_, row.comm);
      last_comm_ = row.comm;
    }
    if (op_ < 0 || row.op != last_op_ || row.library != last_library_) {
      op_ = id(ops_, std::string(row.op) + '\n' + std::string(row.library));
      last_op_ = row.op;
      last_library_ = row.library;
    }
    const int comm = comm_, op = op_;
    uint64_t key = (static_cast<uint64_t>(comm) << 40) ^ static_cast<uint64_t>(row.seq);
    int64_t end = std::max(row.start_ns, row.end_ns);
    auto [it, fresh] = instances_.try_emplace(key);
    InstanceAcc& c = it->second;
    if (fresh) c = {op, row.bytes, row.start_ns, end, static_cast<int64_t>(instances_.size()) - 1};
    of_call_.emplace_back(row.id, c.index);
    entries_.add(c.index, row.rank, row.start_ns);
    if (fresh) return;
    c.bytes = std::max(c.bytes, row.bytes);
    c.last_start = std::max(c.last_start, row.start_ns);
    c.last_end = std::max(c.last_end, end);
  }
  void finish() {
    entries_.finish();
    std::sort(of_call_.begin(), of_call_.end());  // mostly in order already: ids rise per rank
  }
  // The entry of `rank` into the instance of call `collective_id` (a merged call id); -1 unknown.
  int64_t entryOf(int64_t collective_id, int32_t rank) const {
    auto call = std::lower_bound(of_call_.begin(), of_call_.end(),
                                 std::make_pair(collective_id, INT64_MIN));
    return call == of_call_.end() || call->first != collective_id
               ? -1
               : entries_.find(call->second, rank);
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
  // (call id, instance index), sorted by finish(): 16 bytes a call (a hash map took about four
  // times that, most of the summary's memory at 3.3 M calls).
  std::vector<std::pair<int64_t, int64_t>> of_call_;
  int comm_ = -1, op_ = -1;
  std::string last_comm_, last_op_, last_library_;
  detail::EntryTimes entries_;
};

// The transfers' totals per link and side, and each recording rank's extent. One read of the
// rows in storage order (TraceReader::forEachTransferTotalsFields: no time-ordered merge of the
// table, 11 of 14 columns) gives them all where every link side's rows come within the window's
// reach of (start_ns, id) order, as a merged trace's mostly do (a side's rows all come from one
// recording rank, stored together in recording order). The sides that do not are counted again
// from zero in a time-ordered read (forEachTransfer, what every row took before): the result is
// the same as one time-ordered read's either way.
class TransferTotals {
 public:
  TransferTotals(const InstanceTable& instances, std::map<int, RankAcc>* ranks)
      : instances_(instances), ranks_(*ranks) {}

  bool read(storage::TraceReader& reader, std::string* error) {
    bool ok = reader.forEachTransferTotalsFields(
        [&](int32_t, const TransferRow& row) {
          ++rows_;
          bool send = false;
          SideAcc* side = sideOf(row, &send);
          if (side == nullptr) return true;
          side->add(row, send, senderIn(row, send));
          int recorder = send ? row.src_rank : row.dst_rank;
          int64_t end = row.end_ns == storage::kNone ? row.start_ns : row.end_ns;
          if (recorder >= 0) rankOf(recorder).events.add(row.start_ns, end);
          return true;
        },
        error);
    if (!ok) return false;
    bool again = false;
    for (auto& [key, link] : links_) {
      for (SideAcc* side : {&link.send, &link.recv}) {
        side->finish();
        if (side->in_order) continue;
        *side = SideAcc{};
        side->in_order = false;
        again = true;
      }
    }
    if (!again) return true;
    ok = reader.forEachTransfer(
        [&](const TransferRow& row) {
          bool send = false;
          SideAcc* side = sideOf(row, &send);
          if (side != nullptr && !side->in_order) side->add(row, send, senderIn(row, send));
          return true;
        },
        error);
    for (auto& [key, link] : links_) {
      for (SideAcc* side : {&link.send, &link.recv})
        if (!side->in_order) side->finish();
    }
    return ok;
  }
  int64_t rows() const { return rows_; }
  // By (src, dst) packed into 64 bits, in no order (addTotals sorts the links).
  const std::unordered_map<uint64_t, LinkAcc>& links() const { return links_; }
  static std::pair<int, int> linkOf(uint64_t key) {
    return {static_cast<int32_t>(static_cast<uint32_t>(key >> 32)),
            static_cast<int32_t>(static_cast<uint32_t>(key))};
  }

 private:
  // The accumulator of the row's link and side; nullptr for a row neither sent nor received.
  SideAcc* sideOf(const TransferRow& row, bool* send) {
    *send = collective::is(row.side, collective::Side::kSend);
    if (!*send && !collective::is(row.side, collective::Side::kRecv)) return nullptr;
    // A call's rows come link after link: the last one looked up is kept.
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(row.src_rank)) << 32) |
                         static_cast<uint32_t>(row.dst_rank);
    if (last_link_ == nullptr || key != last_key_) {
      last_link_ = &links_[key];
      last_key_ = key;
    }
    return *send ? &last_link_->send : &last_link_->recv;
  }
  // The sender's entry, which only a receive's busy time depends on (link_time.h).
  int64_t senderIn(const TransferRow& row, bool send) const {
    return send ? -1 : instances_.entryOf(row.collective_id, row.src_rank);
  }
  RankAcc& rankOf(int rank) {
    if (last_rank_ == nullptr || rank != last_rank_key_) {
      last_rank_ = &ranks_[rank];
      last_rank_key_ = rank;
    }
    return *last_rank_;
  }

  const InstanceTable& instances_;
  std::map<int, RankAcc>& ranks_;
  // A hash map: a tree's links (a rank's parent and children in turn) defeat the last-link
  // cache, and a std::map of 32,766 links cost 6 % of the summary at 16,384 ranks.
  std::unordered_map<uint64_t, LinkAcc> links_;
  int64_t rows_ = 0;
  LinkAcc* last_link_ = nullptr;
  uint64_t last_key_ = 0;
  RankAcc* last_rank_ = nullptr;
  int last_rank_key_ = 0;
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
               const std::unordered_map<uint64_t, LinkAcc>& links, Summary* out) {
  for (auto& [key, op] : ops) out->ops.push_back(std::move(op));
  std::sort(out->ops.begin(), out->ops.end(), [](const OpTotals& a, const OpTotals& b) {
    return std::tie(b.time_ns, a.op, a.library) < std::tie(a.time_ns, b.op, b.library);
  });
  addRankTotals(infos, ranks, out);
  for (const auto& [packed, acc] : links) {
    const std::pair<int, int> key = TransferTotals::linkOf(packed);
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
  storage::StageTimer calls_timer("summary: calls");
  RankAcc* rank_acc = nullptr;  // of the row before (a rank's calls come together)
  int rank_of_acc = 0;
  bool ok = reader.forEachCollectiveTotalsFields(
      [&](const CollectiveRow& row) {
        ++out->collectives;
        // Rows the analyzer would skip (times or sizes no trace can hold) are skipped here too.
        if (row.start_ns < 0 || row.start_ns > (int64_t{1} << 62) ||
            row.end_ns > (int64_t{1} << 62) || row.bytes < 0 || row.bytes > (int64_t{1} << 48)) {
          return true;
        }
        instances.add(row);

        if (rank_acc == nullptr || row.rank != rank_of_acc) {
          rank_acc = &ranks[row.rank];
          rank_of_acc = row.rank;
        }
        RankAcc& rank = *rank_acc;
        ++rank.calls;
        rank.collectives.add(row.start_ns, row.end_ns);
        rank.events.add(row.start_ns, row.end_ns);
        rank.comm.add(row.start_ns, row.end_ns);
        return true;
      },
      error);
  if (!ok) return false;
  instances.finish();
  calls_timer.stop();

  storage::StageTimer transfers_timer("summary: transfers");
  TransferTotals transfers(instances, &ranks);
  if (!transfers.read(reader, error)) return false;
  out->transfers = transfers.rows();
  transfers_timer.stop();

  instances.totals(&ops);
  addTotals(infos, std::move(ops), ranks, transfers.links(), out);
  return true;
}

}  // namespace ringside::analyzer
