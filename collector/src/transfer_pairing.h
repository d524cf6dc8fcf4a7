// collector/src/transfer_pairing.h — pairs each transfer's post with its completion, on the
// writer thread only.
//
// Posts and completions come from different threads' rings, drained one after the other, so an
// event stamped earlier on thread A can reach the writer after a later one from thread B. Events
// are staged, sorted by time, and only those older than the drain's start minus kReorderLagNs
// are paired (a thread descheduled between taking its timestamp and publishing is the rare
// loser). A completion may still come before its post: both sides wait for each other in FIFO
// order per (buffer, peer, side), since a library completes one peer's messages on one buffer
// in the order they were posted.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

#include "ringside/collector/event.h"

namespace ringside::collector::detail {

class TransferPairing {
 public:
  // A paired transfer: its post, the peer its completion names and the completion's time
  // (storage::kNone for a post that never completed).
  using Sink = std::function<void(const Event& post, int32_t peer, int64_t end_ns)>;
  // How long after an event's time the writer waits for earlier events from other rings.
  static constexpr int64_t kReorderLagNs = 20 * 1000 * 1000;

  explicit TransferPairing(Sink sink) : sink_(std::move(sink)) {}

  // A kTransferPost or kTransferDone event, drained from some ring.
  void stage(const Event& e) { staged_.push_back(e); }
  // Pairs the staged events older than before_ns, in time order.
  void match(int64_t before_ns);
  // Whether a post is still waiting for its completion (staged or unpaired).
  bool postsWaiting() const;
  // At the end: every unpaired post goes to the sink without an end time; the unpaired
  // completions (and those dropped as older than the post they met) are dropped and returned
  // (the caller decides whether they count as unmatched).
  uint64_t finish();

 private:
  struct Key {
    uint64_t buffer;
    int32_t peer;
    uint8_t side;
    bool operator==(const Key& o) const {
      return buffer == o.buffer && peer == o.peer && side == o.side;
    }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(k.buffer * 31 + static_cast<uint64_t>(k.peer) * 7 + k.side);
    }
  };
  void post(const Event& e);
  void done(const Event& e);

  Sink sink_;
  std::unordered_map<Key, std::deque<Event>, KeyHash> posts_;
  std::unordered_map<Key, std::deque<Event>, KeyHash> dones_;
  uint64_t stale_dones_ = 0;  // completions dropped as older than the post they met (post())
  // Transfer events wait here, sorted by time, until no earlier one can still arrive from
  // another ring.
  std::vector<Event> staged_;
};

}  // namespace ringside::collector::detail
