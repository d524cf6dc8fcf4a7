// analyzer/analysis_transfers.cpp — pass 2: transfers (ordered by start_ns) feed per-link
// accumulators, channel counts, the alpha-beta fit's sums and the phase buffers. No pass
// keeps all transfers.
#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "analysis_call_rates.h"
#include "analysis_phases.h"
#include "analysis_state.h"
#include "link_time.h"
#include "ringside/analyzer/collective_math.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer::detail {

int PhaseNames::id(std::string_view name) {
  if (last_ >= 0 && names_[static_cast<size_t>(last_)] == name) return last_;
  auto it = ids_.find(name);
  if (it != ids_.end()) {
    last_ = it->second;
    return it->second;
  }
  int id = static_cast<int>(names_.size());
  names_.emplace_back(name);
  ids_.emplace(std::string(name), id);
  return id;
}

namespace {

using storage::TransferRow;

class TransferPass {
 public:
  explicit TransferPass(AnalysisState& s)
      : s_(s),
        phases_(s),
        calls_(s),
        dense_ranks_(std::clamp(std::max(s.meta.world_size, s.max_rank + 1), 0, 1024)),
        dense_link_(static_cast<size_t>(dense_ranks_) * static_cast<size_t>(dense_ranks_), -1),
        listed_ranks_(std::clamp(std::max(s.meta.world_size, s.max_rank + 1), 0, kMaxListedRanks)),
        peers_(static_cast<size_t>(listed_ranks_ > dense_ranks_ ? listed_ranks_ : 0)),
        dense_rank_acc_(static_cast<size_t>(listed_ranks_), nullptr),
        total_rows_(std::max<int64_t>(1, s.reader.transferCount())),
        send_name_(collective::name(collective::Side::kSend)),
        recv_name_(collective::name(collective::Side::kRecv)) {}

  void add(const TransferRow& row);
  void finish() {
    phases_.foldAll();
    calls_.judgeAll();
  }

 private:
  int32_t instanceOf(int64_t collective_id);
  int linkIndex(int src, int dst);
  RankAcc& rankAcc(int rank);
  void addToBins(SideAcc& side, int64_t start, int64_t end, int64_t bytes) const;
  void spreadOverBins(std::vector<double>& bins, int64_t bin_width_ns, int64_t start, int64_t end,
                      int64_t bytes) const;
  int64_t movingFrom(const TransferRow& row, bool send, int32_t instance, int64_t end) const;

  AnalysisState& s_;
  PhaseBuilder phases_;
  CallRates calls_;
  // Links between ranks below dense_ranks_ (1,024) are found in a flat table; past that, among
  // the last few peers a source rank sent to (a ring's or a tree's ranks have at most three),
  // and by hash only where those miss: at 16,384 ranks the hash's bucket and node were two
  // cache misses a row, a quarter of this pass.
  static constexpr int kMaxListedRanks = 1 << 20;
  // 32 bytes, aligned: one cache line a rank. The latest peer first; a new one pushes out the
  // oldest.
  struct alignas(32) Peers {
    static constexpr int kWays = 4;
    int32_t dst[kWays] = {-1, -1, -1, -1};
    int32_t link[kWays] = {-1, -1, -1, -1};
  };
  const int dense_ranks_;
  std::vector<int> dense_link_;
  const int listed_ranks_;  // ranks below it have their peers_ (past dense_ranks_) and accs listed
  std::vector<Peers> peers_;
  std::unordered_map<uint64_t, int> link_of_;
  std::vector<RankAcc*> dense_rank_acc_;  // [rank] -> s_.rank_acc[rank] once used
  int64_t last_collective_id_ = storage::kNone;  // consecutive rows share their collective
  int32_t last_instance_ = -1;
  const int64_t total_rows_;
  int64_t rows_ = 0;
  const std::string_view send_name_, recv_name_;  // the rows' side names
};

int32_t TransferPass::instanceOf(int64_t collective_id) {
  if (collective_id == storage::kNone) return -1;
  if (collective_id != last_collective_id_) {
    last_collective_id_ = collective_id;
    last_instance_ = s_.instance_of_row.find(collective_id);
  }
  return last_instance_;
}

int TransferPass::linkIndex(int src, int dst) {
  int* dense = src >= 0 && dst >= 0 && src < dense_ranks_ && dst < dense_ranks_
                   ? &dense_link_[static_cast<size_t>(src) * static_cast<size_t>(dense_ranks_) +
                                  static_cast<size_t>(dst)]
                   : nullptr;
  if (dense != nullptr && *dense >= 0) return *dense;
  // peers_ is empty unless ranks reach past the flat table (listed_ranks_ long then).
  Peers* peers = dense == nullptr && src >= 0 && static_cast<size_t>(src) < peers_.size()
                     ? &peers_[static_cast<size_t>(src)]
                     : nullptr;
  if (peers != nullptr) {
    for (int w = 0; w < Peers::kWays; ++w) {
      if (peers->dst[w] == dst && peers->link[w] >= 0) return peers->link[w];
    }
  }
  uint64_t key =
      (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  auto [it, fresh] = link_of_.try_emplace(key, static_cast<int>(s_.links.size()));
  if (fresh) {
    s_.links.emplace_back();
    s_.links.back().src = src;
    s_.links.back().dst = dst;
    s_.links.back().host_pair = s_.hostPair(src, dst);
    s_.max_rank = std::max({s_.max_rank, src, dst});
  }
  if (dense != nullptr) *dense = it->second;
  if (peers != nullptr) {
    for (int w = Peers::kWays - 1; w > 0; --w) {
      peers->dst[w] = peers->dst[w - 1];
      peers->link[w] = peers->link[w - 1];
    }
    peers->dst[0] = dst;
    peers->link[0] = it->second;
  }
  return it->second;
}

// s_.rank_acc[rank] without a map search per row (its entries never move).
RankAcc& TransferPass::rankAcc(int rank) {
  if (rank >= listed_ranks_) return s_.rank_acc[rank];
  RankAcc*& acc = dense_rank_acc_[static_cast<size_t>(rank)];
  if (acc == nullptr) acc = &s_.rank_acc[rank];
  return *acc;
}

// Bytes spread evenly over the bins the transfer overlaps (clipped to the time range).
// Offsets from the range's start are unsigned: a damaged trace's times may span more than
// int64_t holds, and a signed difference would overflow into a negative bin.
void TransferPass::addToBins(SideAcc& side, int64_t start, int64_t end, int64_t bytes) const {
  if (side.bins.empty()) side.bins.assign(static_cast<size_t>(s_.bins), 0.0);
  if (bytes <= 0) return;
  spreadOverBins(side.bins, s_.out->bin_ns, start, end, bytes);
  if (s_.bins == kPeakBins) return;
  if (side.peak_bins.empty()) side.peak_bins.assign(kPeakBins, 0.0);
  spreadOverBins(side.peak_bins, peakBinNs(*s_.out), start, end, bytes);
}

void TransferPass::spreadOverBins(std::vector<double>& bins, int64_t bin_width_ns, int64_t start,
                                  int64_t end, int64_t bytes) const {
  const int64_t range_start = s_.out->start_ns, range_end = std::max(range_start, s_.out->end_ns);
  const uint64_t bin_ns = static_cast<uint64_t>(std::max<int64_t>(1, bin_width_ns));
  auto offset = [&](int64_t t) {  // t in [range_start, range_end]
    return static_cast<uint64_t>(t) - static_cast<uint64_t>(range_start);
  };
  const uint64_t span = offset(range_end);
  const uint64_t from = offset(std::clamp(start, range_start, range_end)),
                 to = offset(std::clamp(end, range_start, range_end));
  const uint64_t max_bin = static_cast<uint64_t>(bins.size() - 1);
  const uint64_t first_bin = std::min(max_bin, from / bin_ns);
  const uint64_t last_bin = std::min(max_bin, to / bin_ns);
  if (first_bin == last_bin || to <= from) {
    bins[static_cast<size_t>(first_bin)] += static_cast<double>(bytes);
    return;
  }
  double per_ns = static_cast<double>(bytes) / static_cast<double>(to - from);
  // A bin's edge as an offset, never past the range's end (no overflow of b * bin_ns either).
  auto edge = [&](uint64_t b) { return b > span / bin_ns ? span : std::min(span, b * bin_ns); };
  for (uint64_t b = first_bin; b <= last_bin; ++b) {
    uint64_t lo = std::max(from, edge(b));
    uint64_t hi = std::min(to, edge(b + 1));
    if (hi > lo) bins[static_cast<size_t>(b)] += per_ns * static_cast<double>(hi - lo);
  }
}

int64_t TransferPass::movingFrom(const TransferRow& row, bool send, int32_t instance,
                                 int64_t end) const {
  if (send || instance < 0) return detail::movingFrom(send, row.start_ns, end, -1);
  // The call table finds a rank's entry among its instance's rows (CallTable::entry).
  const int64_t sender_in = s_.entries.find(instance, row.src_rank);
  return detail::movingFrom(send, row.start_ns, end, sender_in);
}

void TransferPass::add(const TransferRow& row) {
  // The row comes cold from the reader's batches (filled on another thread) and spans two or
  // three cache lines: ask for its last one now, so that its miss overlaps the first one's
  // instead of waiting until the channel is read (on the 1,024-rank traces that wait was
  // 40 % of this function's samples).
  __builtin_prefetch(reinterpret_cast<const char*>(&row + 1) - 1);
  if (!s_.timesOk(row.start_ns, row.end_ns)) {
    bool bad_start = row.start_ns < 0 || row.start_ns > s_.kMaxTimeNs;
    s_.skipped_times.add("transfers", row.id, bad_start ? "start_ns" : "end_ns",
                         bad_start ? row.start_ns : row.end_ns);
    return;
  }
  if (!s_.bytesOk(row.bytes)) {
    s_.skipped_bytes.add("transfers", row.id, "bytes", row.bytes);
    return;
  }
  // -1: the peer is unknown. Other ranks the trace does not support are skipped.
  for (auto [column, rank] : {std::pair{"src_rank", row.src_rank}, {"dst_rank", row.dst_rank}}) {
    if (rank != -1 && !s_.rankOk(rank)) {
      s_.skipped_transfers.add("transfers", row.id, column, rank);
      return;
    }
  }
  ++s_.out->transfers;
  if (++rows_ % (1 << 20) == 0) {
    s_.progress(0.2 + 0.75 * static_cast<double>(rows_) / static_cast<double>(total_rows_));
  }
  phases_.foldEndedBefore(row.start_ns);
  calls_.judgeEndedBefore(row.start_ns);
  const bool send = row.side == send_name_;
  if (!send && row.side != recv_name_) return;
  bool done = row.end_ns != storage::kNone && row.end_ns >= row.start_ns;
  int64_t end = done ? row.end_ns : row.start_ns;
  if (end < s_.window_start_ns || row.start_ns > s_.window_end_ns) return;
  int32_t instance = instanceOf(row.collective_id);
  if (s_.options.on_transfer) s_.options.on_transfer(row, instance);
  if (instance >= 0) autopsyTransfer(s_, row, send, instance);
  const size_t link_index = static_cast<size_t>(linkIndex(row.src_rank, row.dst_rank));
  LinkAcc& link = s_.links[link_index];
  if (row.channel >= 0) {
    auto& channel =
        (send ? s_.channel_send : s_.channel_recv)[{row.src_rank, row.dst_rank, row.channel}];
    channel.first = addSaturated(channel.first, row.bytes);
    ++channel.second;
  }
  SideAcc& side = send ? link.send : link.recv;
  // A per-link total row (chunk -2, docs/schema.md) stands for `slot` messages.
  side.messages += row.chunk == -2 && row.slot > 0 ? row.slot : 1;
  side.bytes = addSaturated(side.bytes, row.bytes);
  const int64_t moving = movingFrom(row, send, instance, end);
  if (done) side.busy.add(moving, row.end_ns);
  if (done && link.host_pair >= 0) {
    HostPairAcc& pair = s_.host_pairs[static_cast<size_t>(link.host_pair)];
    (send ? pair.send_busy : pair.recv_busy).add(moving, row.end_ns);
  }
  addToBins(side, moving, end, row.bytes);
  int recorder = send ? row.src_rank : row.dst_rank;
  if (recorder >= 0) rankAcc(recorder).events.add(row.start_ns, end);
  int phase = row.phase.empty() ? -1 : s_.phase_names.id(row.phase);
  if (instance >= 0) {
    if (side.last_instance != instance) {
      side.last_instance = instance;
      side.instances.push_back(instance);
    }
    GroupTraffic& traffic = side.group({s_.group_of[static_cast<size_t>(instance)], phase});
    traffic.bytes = addSaturated(traffic.bytes, row.bytes);
    if (done) traffic.busy.add(moving, row.end_ns);
    calls_.add(instance, traffic, link_index, send, phase, row.bytes, moving, row.end_ns, done);
  }
  if (send && done) {
    s_.fit.add(row.bytes, row.end_ns - row.start_ns);
  }
  if (send && instance >= 0) {
    int64_t& sent = s_.out->collectives[static_cast<size_t>(instance)].sent_bytes;
    sent = addSaturated(sent, row.bytes);
    phases_.addSend(instance, row, phase, end);
  }
}

}  // namespace

bool readTransfers(AnalysisState& s) {
  TransferPass pass(s);
  auto add = [&pass](const TransferRow& row) {
    pass.add(row);
    return true;  // every row
  };
  if (!s.reader.forEachTransfer(add, s.error)) return false;
  pass.finish();
  return true;
}

}  // namespace ringside::analyzer::detail
