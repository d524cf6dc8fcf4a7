// reference/src/ring.cpp — ring all-reduce: reduce-scatter, then all-gather.
//
// n ranks in a ring; rank r sends only to r+1 and receives only from r-1.
// The buffer of `count` elements is cut into n segments (segment x holds
// count/n elements, one more for x < count%n), each segment into C chunks of
// at most `ce` elements (C is the same for all segments; a short segment
// has empty chunks, sent as header-only frames).
//
// Reduce-scatter, steps t = 0..n-2: rank r sends segment (r-t) mod n to r+1
//   and receives segment (r-t-1) mod n from r-1, which it reduces into its
//   own copy. After step n-2, rank r holds segment (r+1) mod n reduced over
//   all ranks.
// All-gather, steps t = 0..n-2: rank r sends segment (r+1-t) mod n (fully
//   reduced) to r+1 and receives segment (r-t) mod n from r-1, which it
//   stores in place.
// Numbered together (global step g = t, then n-1+t), step g sends segment
// (r-g) mod n and receives segment (r-g-1) mod n: what is received at step g
// is exactly what is sent at step g+1.
//
// Bytes per rank: each step sends one segment, about count*esize/n bytes, and
// receives one; in all 2(n-1) steps, 2(n-1)/n * count*esize bytes each way.
//
// Pipelining: the send of chunk c at step g+1 waits only for chunk c of step
// g to have arrived and been reduced, not for the whole segment. So while
// chunk c is being reduced, chunk c+1 is arriving in the socket buffer and
// chunk c of the next step is already on its way to r+1: one stream of
// messages (g, c) in order on each of the two links, flowing continuously.
// The reduction order of every element is fixed (ring order from the
// segment's first owner), so results do not depend on timing.
#include <algorithm>

#include "algorithms.h"

namespace ringside::reference::detail {

namespace col = ringside::collector;

size_t chunkElements(size_t chunk_bytes, size_t part_bytes, size_t esize, size_t divisor, size_t lo,
                     size_t hi) {
  size_t bytes = chunk_bytes;
  if (bytes == 0) bytes = std::clamp(part_bytes / divisor, lo, hi);
  bytes = std::min<size_t>(bytes, size_t{1} << 30);  // frames stay far below kMaxFramePayload
  size_t elems = std::max<size_t>(1, bytes / esize);
  // At most 2^20 chunks per part, so message numbers fit the 32-bit counters.
  size_t part_elems = part_bytes / esize;
  return std::max(elems, (part_elems + (size_t{1} << 20) - 1) >> 20);
}

namespace {

class RingSchedule final : public Schedule {
 public:
  RingSchedule(const CollectiveArgs& a, int left_link, int right_link, FrameKind kind)
      : a_(a), n_(a.size), r_(a.rank), esize_(dtypeSize(a.dtype)) {
    base_ = a.count / static_cast<size_t>(n_);
    rem_ = a.count % static_cast<size_t>(n_);
    size_t max_seg = base_ + (rem_ > 0 ? 1 : 0);
    // At most 128 KiB: a received chunk is reduced while it is still in
    // cache, and sent on from there (docs/bench.md: 128 KiB gave the lowest
    // CPU per call at 64 MiB, against 64 and 256 KiB).
    ce_ = chunkElements(a.chunk_bytes, max_seg * esize_, esize_, 4, size_t{32} << 10,
                        size_t{128} << 10);
    chunks_ = static_cast<uint32_t>((max_seg + ce_ - 1) / ce_);
    total_ = static_cast<uint32_t>(2 * (n_ - 1)) * chunks_;
    // Step 0 sends the rank's own segment: ready at once (ringFloor: everything is).
    sends.push_back(SendStream{right_link, kind, total_, a.unordered ? total_ : chunks_, 0});
    recvs.push_back(RecvStream{left_link, kind, total_, 0});
    scratch_bytes = std::min(ce_, max_seg) * esize_;
  }

  Message sendMessage(size_t, uint32_t index) override { return message(index, 0); }
  Message recvMessage(size_t, uint32_t index) override { return message(index, 1); }

  void received(size_t, uint32_t index, char* scratch) override {
    Message m = message(index, 1);
    if (m.reduce && scratch != nullptr) {
      reduceInto(m.ptr, scratch, m.bytes / esize_, a_.dtype, a_.op);
      pool->release(scratch);
    }
    // Chunk c of step g is here (and reduced): chunk c of step g+1 may go.
    sends[0].ready = std::max(sends[0].ready, std::min(total_, index + 1 + chunks_));
  }

 private:
  // Message `index` = (global step g, chunk c); `shift` 0 for the segment we
  // send at g, 1 for the one we receive.
  Message message(uint32_t index, int shift) const {
    uint32_t g = index / chunks_, c = index % chunks_;
    int seg = ((r_ - static_cast<int>(g) - shift) % n_ + n_) % n_;
    size_t seg_start = static_cast<size_t>(seg) * base_ + std::min(static_cast<size_t>(seg), rem_);
    size_t seg_len = base_ + (static_cast<size_t>(seg) < rem_ ? 1 : 0);
    size_t first = std::min(seg_len, static_cast<size_t>(c) * ce_);
    size_t len = std::min(ce_, seg_len - first);
    bool reduce_scatter = g < static_cast<uint32_t>(n_ - 1);
    Message m;
    m.ptr = a_.data + (seg_start + first) * esize_;
    // ringFloor sends every chunk from the buffer's first chunk, which stays
    // in cache: no send waits for data, and none reads it from memory.
    if (a_.unordered && shift == 0) m.ptr = a_.data;
    m.bytes = len * esize_;
    m.step = g;
    m.chunk = c;
    m.phase =
        static_cast<uint8_t>(reduce_scatter ? col::Phase::kReduceScatter : col::Phase::kAllGather);
    m.trace_step = static_cast<int16_t>(reduce_scatter ? g : g - static_cast<uint32_t>(n_ - 1));
    m.reduce = reduce_scatter && shift == 1;
    return m;
  }

  CollectiveArgs a_;
  int n_, r_;
  size_t esize_;
  size_t base_ = 0, rem_ = 0, ce_ = 1;
  uint32_t chunks_ = 1, total_ = 0;
};

}  // namespace

std::unique_ptr<Schedule> makeRingSchedule(const CollectiveArgs& a,
                                           const std::vector<int>& link_of) {
  int right = link_of[static_cast<size_t>((a.rank + 1) % a.size)];
  int left = link_of[static_cast<size_t>((a.rank - 1 + a.size) % a.size)];
  return makeRingScheduleOn(a, left, right, FrameKind::kRing);
}

std::unique_ptr<Schedule> makeRingScheduleOn(const CollectiveArgs& a, int left_link, int right_link,
                                             FrameKind kind) {
  return std::make_unique<RingSchedule>(a, left_link, right_link, kind);
}

}  // namespace ringside::reference::detail
