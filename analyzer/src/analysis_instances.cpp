// analyzer/analysis_instances.cpp — the instances stage: pass 1 over collectives (ordered by
// rank, start_ns) matches rows across ranks by (comm, seq) into one CollectiveInstance each;
// then the time range, the (op, library) groups, and once the GPU times are in, each
// instance's skew, duration and bandwidth.
#include <algorithm>
#include <set>
#include <unordered_map>

#include "analysis_state.h"
#include "gpu_analysis.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer::detail {

void readMeta(AnalysisState& s) {
  Analysis* out = s.out;
  out->cut_off_ranks = s.meta.cut_off;
  out->missing_ranks = s.meta.missing;
  std::set<int> present;
  for (const auto& info : s.infos) present.insert(info.rank);
  out->ranks_present.assign(present.begin(), present.end());
  for (const auto& info : s.infos) s.rank_acc[info.rank];
  for (const std::string& w : s.meta.warnings) out->warnings.push_back(w);
  // Rank ids beyond the world (or, without one, far beyond the rank rows) would size the
  // per-rank and per-link structures: such rows are skipped instead.
  int64_t top_rank = -1;
  for (const auto& info : s.infos) {
    if (info.rank >= 0 && info.rank < kMaxWorldSize)
      top_rank = std::max<int64_t>(top_rank, info.rank);
  }
  int64_t limit = s.meta.world_size > 0 ? std::max<int64_t>(s.meta.world_size, top_rank + 1)
                                        : std::max<int64_t>(kMaxDenseRanks, 4 * (top_rank + 1));
  s.rank_limit = static_cast<int>(std::min(limit, kMaxWorldSize));
}

void warnSkippedRows(AnalysisState& s) {
  const std::string world = s.meta.world_size > 0
                                ? "the world of " + std::to_string(s.meta.world_size) + " ranks"
                                : "the ranks this trace supports (below " +
                                      std::to_string(s.rank_limit) + ")";
  for (const SkippedRows* rows : {&s.skipped_collectives, &s.skipped_transfers}) {
    if (rows->count == 0) continue;
    std::string more = rows->count > 1 ? " (" + std::to_string(rows->count) + " such rows)" : "";
    s.out->warnings.push_back(rows->first + " is outside " + world + "; skipped" + more);
  }
  if (s.skipped_times.count > 0) {
    const auto& rows = s.skipped_times;
    std::string more = rows.count > 1 ? " (" + std::to_string(rows.count) + " such rows)" : "";
    s.out->warnings.push_back(rows.first + " is outside the times a trace can hold (0 to 2^62 "
                              "ns); skipped" + more);
  }
  if (s.skipped_bytes.count > 0) {
    const auto& rows = s.skipped_bytes;
    std::string more = rows.count > 1 ? " (" + std::to_string(rows.count) + " such rows)" : "";
    s.out->warnings.push_back(rows.first + " is outside the sizes a call can have (0 to 256 "
                              "TiB); skipped" + more);
  }
}

namespace {

using storage::CollectiveRow;

CollectiveInstance newInstance(const CollectiveRow& row, int64_t end) {
  CollectiveInstance c;
  c.comm = row.comm;
  c.seq = row.seq;
  c.op = row.op;
  c.library = row.library;
  c.algorithm = row.algorithm;
  c.dtype = row.dtype;
  c.reduce_op = row.reduce_op;
  c.first_start_ns = row.start_ns;
  c.last_start_ns = row.start_ns;
  c.last_end_ns = end;
  c.straggler_rank = row.rank;
  return c;
}

// One rank's row of an instance.
void addRow(const CollectiveRow& row, int64_t end, bool fresh, CollectiveInstance* c) {
  c->bytes = std::max(c->bytes, row.bytes);
  ++c->ranks;
  c->first_start_ns = std::min(c->first_start_ns, row.start_ns);
  if (row.start_ns > c->last_start_ns || (fresh && c->ranks == 1)) {
    c->last_start_ns = row.start_ns;
    c->straggler_rank = row.rank;
  }
  c->last_end_ns = std::max(c->last_end_ns, end);
  c->failed = c->failed || row.status != 0;
}

class InstancePass {
 public:
  explicit InstancePass(AnalysisState& s) : s_(s) {}
  bool add(const CollectiveRow& row);  // true: go on reading

 private:
  int commId(std::string_view comm);
  RankAcc& rankAcc(int rank);

  AnalysisState& s_;
  std::map<std::string, int, std::less<>> comm_ids_;
  std::unordered_map<uint64_t, int32_t> instance_of_;  // (comm id, seq) -> instance
  std::string last_comm_;                              // consecutive rows share their communicator
  int last_comm_id_ = -1;
  RankAcc* last_acc_ = nullptr;  // and their rank
  int last_acc_rank_ = -1;
};

int InstancePass::commId(std::string_view comm) {
  if (last_comm_id_ < 0 || comm != last_comm_) {
    auto it = comm_ids_.try_emplace(std::string(comm), static_cast<int>(comm_ids_.size())).first;
    last_comm_ = comm;
    last_comm_id_ = it->second;
  }
  return last_comm_id_;
}

RankAcc& InstancePass::rankAcc(int rank) {
  if (last_acc_ == nullptr || last_acc_rank_ != rank) {
    last_acc_ = &s_.rank_acc[rank];  // map nodes stay put
    last_acc_rank_ = rank;
  }
  return *last_acc_;
}

bool InstancePass::add(const CollectiveRow& row) {
  if (!s_.timesOk(row.start_ns, row.end_ns)) {
    bool bad_start = row.start_ns < 0 || row.start_ns > s_.kMaxTimeNs;
    s_.skipped_times.add("collectives", row.id, bad_start ? "start_ns" : "end_ns",
                         bad_start ? row.start_ns : row.end_ns);
    return true;
  }
  if (!s_.bytesOk(row.bytes)) {
    s_.skipped_bytes.add("collectives", row.id, "bytes", row.bytes);
    return true;
  }
  int64_t end = std::max(row.start_ns, row.end_ns);
  if (end < s_.window_start_ns || row.start_ns > s_.window_end_ns) return true;
  if (!s_.rankOk(row.rank)) {
    s_.skipped_collectives.add("collectives", row.id, "rank", row.rank);
    return true;
  }
  uint64_t key = (static_cast<uint64_t>(commId(row.comm)) << 40) ^ static_cast<uint64_t>(row.seq);
  std::vector<CollectiveInstance>& instances = s_.out->collectives;
  auto [it, fresh] = instance_of_.try_emplace(key, static_cast<int32_t>(instances.size()));
  if (fresh) {
    instances.push_back(newInstance(row, end));
    s_.arrivals.addInstance();
  }
  CollectiveInstance& instance = instances[static_cast<size_t>(it->second)];
  addRow(row, end, fresh, &instance);
  s_.autopsy.tails.add(row, commId(row.comm), it->second, instance.op, instance.dtype);
  s_.arrivals.add(row.id,
                  {row.start_ns, row.end_ns >= row.start_ns ? row.end_ns - row.start_ns : -1,
                   static_cast<int32_t>(row.rank), it->second});
  RankAcc& rank = rankAcc(row.rank);
  rank.events.add(row.start_ns, end);
  rank.comm.add(row.start_ns, end);
  s_.max_rank = std::max(s_.max_rank, static_cast<int>(row.rank));
  return true;
}

}  // namespace

bool readInstances(AnalysisState& s) {
  InstancePass pass(s);
  bool ok =
      s.reader.forEachCollective([&](const CollectiveRow& row) { return pass.add(row); }, s.error);
  return ok && s.arrivals.finish(s.error);
}

// The collectives' extent; a pre-pass over transfers only when there are none.
bool findTimeRange(AnalysisState& s) {
  TimeSpan range;
  for (const CollectiveInstance& c : s.out->collectives) range.add(c.first_start_ns, c.last_end_ns);
  if (!range.any()) {
    bool ok = s.reader.forEachTransfer(
        [&](const storage::TransferRow& row) {
          if (!s.timesOk(row.start_ns, row.end_ns)) return true;  // counted by TransferPass
          int64_t end =
              row.end_ns == storage::kNone ? row.start_ns : std::max(row.start_ns, row.end_ns);
          if (end < s.window_start_ns || row.start_ns > s.window_end_ns) return true;
          range.add(row.start_ns, end);
          return true;
        },
        s.error);
    if (!ok) return false;
  }
  int64_t start = std::max(range.first(), s.window_start_ns);
  int64_t end = std::min(range.last(), s.window_end_ns);
  if (end < start) end = start;
  s.out->start_ns = start;
  s.out->end_ns = end;
  s.out->bin_ns = binWidthNs(start, end, s.bins);
  return true;
}

// Groups of (op, library): phase groups for the slow-link rule, idle links per group.
void groupInstances(AnalysisState& s) {
  std::map<std::pair<std::string, std::string>, int> group_ids;
  s.group_of.resize(s.out->collectives.size());
  for (size_t i = 0; i < s.out->collectives.size(); ++i) {
    const CollectiveInstance& c = s.out->collectives[i];
    auto [it, fresh] = group_ids.try_emplace({c.op, c.library}, static_cast<int>(s.groups.size()));
    if (fresh) s.groups.push_back({c.op, c.library, {}});
    s.group_of[i] = it->second;
    for (const Arrival& a : s.arrivals[i])
      s.groups[static_cast<size_t>(it->second)].ranks.insert(a.rank);
  }
}

// Kernels' and NCCL's GPU times, per-device busy time and overlap.
bool readGpu(AnalysisState& s) {
  auto instance_of_row = [&](int64_t id) { return s.instance_of_row.find(id); };
  return analyzeGpu(s.reader, instance_of_row, s.window_start_ns, s.window_end_ns, s.out, s.error);
}

void timeInstances(AnalysisState& s) {
  for (CollectiveInstance& c : s.out->collectives) {
    c.arrival_skew_ns = c.last_start_ns - c.first_start_ns;
    c.duration_ns = std::max<int64_t>(0, c.last_end_ns - c.last_start_ns);
    // NCCL returns once the work is enqueued: the GPU times are the call's own time.
    if (c.gpu_ranks > 0 && c.gpu_ranks >= c.ranks && c.gpu_end_ns >= c.gpu_start_ns) {
      c.gpu_timed = true;
      c.duration_ns = c.gpu_end_ns - c.gpu_start_ns;
    }
    if (c.duration_ns > 0) {
      c.algbw_gbps = static_cast<double>(c.bytes) / static_cast<double>(c.duration_ns);
      c.busbw_gbps = c.algbw_gbps * busbwFactor(c.op, c.ranks);
    }
  }
}

}  // namespace ringside::analyzer::detail
