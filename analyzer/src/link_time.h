// When a message's bytes can move on its link: the one definition of a link's busy time
// (docs/metrics.md), for the analysis and the run summary alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ringside::analyzer::detail {

// A receive is posted when its rank enters the call, but nothing moves before the sender has
// entered it too (`sender_in`: the sending rank's entry into the same collective instance; -1
// unknown): the time before is the sender's lateness, not the link's, so a straggler does not
// make the links out of it look busy and slow. Sends move from their start.
inline int64_t movingFrom(bool send, int64_t start, int64_t end, int64_t sender_in) {
  if (send || sender_in < 0) return start;
  return std::max(start, std::min(sender_in, end));
}

// Each rank's entry into each collective instance (the earliest, if a rank has several calls
// of one instance), looked up by (instance key, rank). 16 bytes a call, sorted once.
class EntryTimes {
 public:
  // instance: a dense index (below 2^43); ranks at or above 2^20 (trace_meta.h's
  // kMaxWorldSize) are not kept.
  void add(int64_t instance, int32_t rank, int64_t start) {
    if (instance < 0 || instance >= (int64_t{1} << 43) || rank < 0 || rank >= kRanks) return;
    entries_.push_back({key(instance, rank), start});
  }
  // Sorted, and the earliest entry of a rank with several calls of one instance kept first.
  void finish() { std::sort(entries_.begin(), entries_.end()); }
  // -1 when the rank made no call of that instance (or the rank is unknown).
  int64_t find(int64_t instance, int32_t rank) const {
    if (instance < 0 || rank < 0 || rank >= kRanks) return -1;
    const uint64_t k = key(instance, rank);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), std::make_pair(k, INT64_MIN));
    return it != entries_.end() && it->first == k ? it->second : -1;
  }

 private:
  static constexpr int32_t kRanks = 1 << 20;
  static uint64_t key(int64_t instance, int32_t rank) {
    return (static_cast<uint64_t>(instance) << 20) | static_cast<uint64_t>(rank);
  }
  std::vector<std::pair<uint64_t, int64_t>> entries_;
};

}  // namespace ringside::analyzer::detail
