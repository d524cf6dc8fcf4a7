// cli/export/perfetto_layout.h — the three pieces of state behind `export --perfetto`'s shape,
// each bounded by what is in flight rather than by the trace's length:
//
// - LaneAllocator: which sub-track (lane) of a track a slice goes to, so that no two slices on one
//   lane overlap (the trace-event format forbids partial overlap of complete events on a thread);
// - LinkRateBins: one link's bytes/s counter, binned, each message's bytes spread evenly over its
//   duration;
// - MessageMatcher: the k-th send of (src, dst, slot) meets the k-th receive, for flow arrows.
//
// All times are nanoseconds on the export's time line; none of these classes writes anything.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace ringside::cli {

// Greedy interval colouring of one track's slices, visited in start order: a slice takes the
// lowest-numbered lane whose last slice ended at or before its start, else a new lane. On slices
// sorted by start this uses the fewest lanes possible (the largest number in flight at once).
// O(log lanes) per slice; memory O(lanes).
class LaneAllocator {
 public:
  // The lane for a slice [start, end] (end >= start). Starts must not decrease between calls.
  int assign(int64_t start, int64_t end);
  int lanes() const { return static_cast<int>(next_lane_); }

 private:
  // (end, lane) of the lanes still busy, the earliest end on top.
  std::priority_queue<std::pair<int64_t, int>, std::vector<std::pair<int64_t, int>>,
                      std::greater<>>
      busy_;
  std::priority_queue<int, std::vector<int>, std::greater<>> free_;  // lowest first
  int next_lane_ = 0;
};

// A link's rate counter in bins of `bin_ns`. A message of b bytes over [start, end) adds
// b / (end - start) bytes per ns to every instant of it; a bin's value is the bytes the link
// carried in that bin divided by the bin's width. A message with no duration (or never
// completed) counts whole in the bin of its start. Bins are emitted once no later message can
// change them (messages arrive in start order), and only where the value changes, so output and
// memory follow the changes, not the number of bins.
class LinkRateBins {
 public:
  // Receives (bin start ns, bytes per second rounded to a whole number) in increasing time.
  using Emit = std::function<void(int64_t bin_start_ns, int64_t bytes_per_second)>;

  explicit LinkRateBins(int64_t bin_ns) : bin_ns_(bin_ns) {}
  // Adds a message; emits the bins before `start`'s bin first. `end` < `start` means never
  // completed.
  void add(int64_t start, int64_t end, int64_t bytes, const Emit& emit);
  // Emits every remaining bin, ending with a 0.
  void finish(const Emit& emit);

 private:
  int64_t binOf(int64_t t) const;
  void flushBefore(int64_t bin, const Emit& emit);
  void put(int64_t bin, double bytes_in_bin, const Emit& emit);

  int64_t bin_ns_;
  // Bytes per bin added to every bin from the key on (difference form of the whole bins a
  // message covers), and bytes added to one bin only (the partial bins at a message's ends).
  std::map<int64_t, double> step_;
  std::map<int64_t, double> single_;
  double level_ = 0.0;  // the sum of step_ entries already passed
  int64_t gap_ = 0;     // the bin after the last one emitted from a key: holds level_ alone
  bool gap_pending_ = false;
  int64_t last_rate_ = 0;
  bool emitted_ = false;
};

// Pairs the sides of messages: per (src, dst, slot), the k-th send (in start order) with the
// k-th receive (in start order), as align/ pairs them; one link delivers in order. Memory: the
// sides still waiting for their partner (a key whose sides are even is forgotten, which is the
// same as counting both from 0 again). At most kMaxWaiting sides wait per key (older ones are
// dropped) and kMaxWaitingTotal in all: past that the matcher gives up and pairs nothing more, so
// a trace whose sends never meet their receives (one side cut off, clocks far apart) cannot make
// memory grow with its length.
class MessageMatcher {
 public:
  struct Side {
    int32_t pid = 0;
    int64_t tid = 0;
    int64_t ts = 0;  // a time inside the slice, where a flow event binds to it
    int64_t bytes = 0;
    bool usable = false;  // the slice can carry a flow end (completed, long enough)
  };
  static constexpr size_t kMaxWaiting = 4096;
  static constexpr size_t kMaxWaitingTotal = size_t{1} << 18;

  // Returns true and the partner in *other when this side completes a pair.
  bool add(int32_t src, int32_t dst, int64_t slot, bool recv, const Side& side, Side* other);
  size_t keys() const { return keys_.size(); }
  bool gaveUp() const { return gave_up_; }

 private:
  struct Waiting {
    int64_t index;
    Side side;
  };
  struct Key {
    int64_t sends = 0;
    int64_t recvs = 0;
    // Of the side that is ahead, oldest first from `head` (a vector, not a deque: most keys hold
    // one side at a time, and a deque allocates half a KiB each).
    std::vector<Waiting> waiting;
    size_t head = 0;
  };
  std::map<std::tuple<int32_t, int32_t, int64_t>, Key> keys_;
  size_t waiting_ = 0;  // sides waiting in all keys
  bool gave_up_ = false;
};

}  // namespace ringside::cli
