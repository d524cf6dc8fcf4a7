// align/src/evidence.cpp — what matched calls and messages say about the clocks.
#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>

#include "internal.h"

namespace ringside::align::detail {
namespace {

// How a call orders its ranks: every rank waits for every other (kAll), for the root's entry
// (kFromRoot: broadcast, scatter), or the root waits for every other's entry (kToRoot: reduce,
// gather). Point-to-point calls and unknown ops say nothing here (their messages do).
enum class Order { kNone, kAll, kFromRoot, kToRoot };

Order orderOf(std::string_view op) {
  for (std::string_view all : {"allreduce", "allgather", "allgatherv", "reduce_scatter",
                               "reducescatter", "alltoall", "alltoallv", "barrier",
                               "all_reduce", "all_gather", "all_to_all"}) {
    if (op == all) return Order::kAll;
  }
  if (op == "broadcast" || op == "scatter") return Order::kFromRoot;
  if (op == "reduce" || op == "gather") return Order::kToRoot;
  return Order::kNone;
}

struct PendingInstance {
  std::vector<Mark> marks;  // one per domain seen
};

Mark& markOf(PendingInstance& p, int32_t domain) {
  for (Mark& m : p.marks) {
    if (m.domain == domain) return m;
  }
  p.marks.push_back({domain, INT64_MIN, INT64_MAX});
  return p.marks.back();
}

}  // namespace

bool gatherCalls(storage::TraceReader& raw, const Domains& domains, Evidence* out,
                 std::string* error) {
  // (comm, seq) -> instance. NCCL's host times are enqueue times (the GPU runs the call later),
  // so NCCL calls are left out; their messages still count.
  std::unordered_map<std::string, uint32_t> index;
  std::vector<PendingInstance> pending;
  std::string key;
  const bool ok = raw.forEachCollective(
      [&](const storage::CollectiveRow& row) {
        if (row.status != 0 || row.end_ns == storage::kNone || row.end_ns < row.start_ns) return true;
        if (row.library == "nccl") return true;
        const Order order = orderOf(row.op);
        if (order == Order::kNone) return true;
        const int32_t domain = domains.of(row.rank);
        if (domain < 0) return true;
        const bool root = row.root == row.rank;
        if ((order == Order::kFromRoot || order == Order::kToRoot) && row.root < 0) return true;
        key.assign(row.comm);
        key += '\x1f';
        key += std::to_string(row.seq);
        auto [it, added] = index.try_emplace(key, static_cast<uint32_t>(pending.size()));
        if (added) pending.emplace_back();
        Mark& m = markOf(pending[it->second], domain);
        const bool enters = order == Order::kAll || order == Order::kToRoot ||
                            (order == Order::kFromRoot && root);
        const bool exits = order == Order::kAll || order == Order::kFromRoot ||
                           (order == Order::kToRoot && root);
        if (enters) m.enter = std::max(m.enter, row.start_ns);
        if (exits) m.exit = std::min(m.exit, row.end_ns);
        return true;
      },
      error);
  if (!ok) return false;
  for (PendingInstance& p : pending) {
    if (p.marks.size() < 2) continue;  // one domain: nothing about the clocks
    out->marks.insert(out->marks.end(), p.marks.begin(), p.marks.end());
    out->begin.push_back(static_cast<uint32_t>(out->marks.size()));
  }
  return true;
}

bool sideOf(const Domains& domains, const storage::TransferRow& row, Side* out) {
  if (row.src_rank < 0 || row.dst_rank < 0) return false;
  const int32_t a = domains.of(row.src_rank);
  const int32_t b = domains.of(row.dst_rank);
  if (a < 0 || b < 0 || a == b) return false;
  const bool recv = row.side == "recv";
  if (!recv && row.side != "send") return false;
  if (recv && (row.end_ns == storage::kNone || row.end_ns < row.start_ns)) return false;
  *out = {row.src_rank, row.dst_rank, row.slot, row.bytes, recv, recv ? row.end_ns : row.start_ns};
  return true;
}

bool gatherMessages(storage::TraceReader& raw, const Domains& domains, Evidence* out,
                    std::string* error) {
  // Each side of a message between domains, keyed so that the k-th send of (src, dst, slot)
  // meets the k-th receive (one link delivers in order); held as compact sorted runs.
  SideRuns sides;
  // Only the fields that pair the two sides are read (half the columns).
  const bool ok = raw.forEachMessageSide(
      [&](int32_t, const storage::TransferRow& row) {
        Side side;
        if (sideOf(domains, row, &side)) sides.add(side);
        return true;
      },
      error);
  if (!ok) return false;
  pairSides(&sides, domains, out);
  return true;
}

namespace {

// One (src, dst, slot)'s sides, sorted: sends, then receives. Paired in order; a count that
// differs (a side cut off) pairs nothing, rather than pairing the wrong messages.
void pairKey(const std::vector<Side>& key, const Domains& domains, Evidence* out) {
  size_t split = 0;
  while (split < key.size() && !key[split].recv) ++split;
  if (split != key.size() - split) return;
  const int32_t from = domains.of(key.front().src);
  const int32_t to = domains.of(key.front().dst);
  for (size_t k = 0; k < split; ++k) {
    const Side& s = key[k];
    const Side& r = key[split + k];
    if (s.bytes != r.bytes) continue;
    out->messages.push_back({from, to, s.t, r.t});
  }
}

}  // namespace

void pairSides(SideRuns* sides, const Domains& domains, Evidence* out) {
  // The runs merged come in sideBefore's total order: sides read in any order (the merged
  // trace's, or its inputs' one after another) pair the same.
  std::vector<Side> key;
  sides->drain([&](const Side& side) {
    if (!key.empty() && (side.src != key.front().src || side.dst != key.front().dst ||
                         side.slot != key.front().slot)) {
      pairKey(key, domains, out);
      key.clear();
    }
    key.push_back(side);
  });
  if (!key.empty()) pairKey(key, domains, out);
  // The tightest message (largest sent - received) per (from, to, 10 ms of receipt): within 10 ms
  // a drift of up to 1000 ppm moves a bound by at most 10 us, and the fit stays linear in time.
  constexpr int64_t kBucketNs = 10'000'000;
  struct Key {
    int32_t from, to;
    int64_t bucket;
    bool operator==(const Key& o) const { return from == o.from && to == o.to && bucket == o.bucket; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      const uint64_t h = static_cast<uint64_t>(k.bucket) * 1000003u +
                         static_cast<uint64_t>(static_cast<uint32_t>(k.from)) * 7919u +
                         static_cast<uint32_t>(k.to);
      return std::hash<uint64_t>()(h);
    }
  };
  std::unordered_map<Key, size_t, KeyHash> best;
  for (const Message& m : out->messages) {
    const Key k{m.from, m.to, m.received / kBucketNs};
    auto [it, added] = best.try_emplace(k, out->representatives.size());
    if (added) {
      out->representatives.push_back(m);
    } else {
      Message& b = out->representatives[it->second];
      // In double: a damaged trace's times must not overflow.
      if (static_cast<double>(m.sent) - static_cast<double>(m.received) >
          static_cast<double>(b.sent) - static_cast<double>(b.received)) {
        b = m;
      }
    }
  }
}

}  // namespace ringside::align::detail
