// collector/src/link_totals.h — the `links` detail level (and `auto` past its budget): messages
// added up per (call, link, side) instead of a row each, on the writer thread only.
//
// A total is written once its link has been quiet for kLinkQuietNs (event time): one row per
// (call, peer, side) with bytes and message count; start = first post, end = last completion.
// A call whose link stays busy longer than that between two messages gets more than one row (the
// sums stay right). Such rows carry chunk = kLinkTotalChunk and the message count in slot
// (docs/schema.md).
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <unordered_map>

#include "ringside/storage/records.h"

namespace ringside::collector::detail {

class LinkTotals {
 public:
  static constexpr int64_t kLinkQuietNs = 500 * 1000 * 1000;
  static constexpr int32_t kLinkTotalChunk = -2;

  // Adds one message (a transfer row as it would have been written; `phase` its Phase).
  void add(const storage::TransferRow& row, uint8_t phase);
  bool empty() const { return links_.empty(); }
  // Writes, through `write`, a row for every link quiet since before_ns and forgets it; stops
  // (keeping the rest) when `write` returns false.
  void flush(int64_t before_ns, const std::function<bool(const storage::TransferRow&)>& write);

  uint64_t rowsWritten() const { return rows_; }
  uint64_t messagesWritten() const { return messages_; }
  // The start of the first message added up (storage::kNone: none yet).
  int64_t firstNs() const { return first_ns_; }

 private:
  struct Key {
    int64_t collective_id;
    int32_t src, dst;
    bool send;
    bool operator==(const Key& o) const {
      return collective_id == o.collective_id && src == o.src && dst == o.dst && send == o.send;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<int64_t>()(k.collective_id * 1000003 + k.src * 8191 + k.dst * 2 + k.send);
    }
  };
  struct Total {
    int64_t bytes = 0, messages = 0;
    int64_t start_ns = INT64_MAX, end_ns = storage::kNone, last_ns = 0;
    uint8_t phase = 0;     // Phase, or 0xff when the messages differ
    int32_t channel = -1;  // or -2 when they differ
  };

  std::unordered_map<Key, Total, KeyHash> links_;
  uint64_t rows_ = 0;
  uint64_t messages_ = 0;
  int64_t first_ns_ = storage::kNone;
};

}  // namespace ringside::collector::detail
