// analyzer/hang_delivery.h — how long healthy links took to deliver, private to hang.cpp: the
// yardstick that tells a stalled link from a message merely in flight when the record ends.
// Built once per judgeHang() from every completed message of the input (any communicator, any
// collective: the flight rings keep the recent calls' messages, a trace the unfinished calls').
#pragma once

#include <array>
#include <cstdint>

#include "ringside/analyzer/hang.h"

namespace ringside::analyzer::hang::detail {

class DeliveryTimes {
 public:
  // Pairs each link's sends with its receives (per communicator and seq, in posting order) and
  // keeps, per completed receive, its bytes and the time from both ends having posted it to its
  // completion: what the link needed, without the wait for a late peer to post.
  explicit DeliveryTimes(const Input& input);

  // The longest a healthy link needed for a message of `bytes`: the slowest delivery of a
  // message of similar size (within a factor of about 2, by power-of-two classes); with none,
  // the nearest class's slowest scaled by size (never beyond it when that class holds larger
  // messages). 0 when no message completed.
  int64_t need(int64_t bytes) const;

  // The shortest wait that judges a link (or a peer) for a message of `bytes`: at least
  // `floor_ns`, and kStallFactor times need(bytes).
  int64_t bound(int64_t bytes, int64_t floor_ns) const;

 private:
  // Messages of [2^k, 2^(k+1)) bytes (class 0 also holds 0 and 1).
  struct SizeClass {
    int64_t slowest_ns = -1;  // -1: none delivered
    int64_t smallest = 0;     // its smallest message's bytes (to scale from, conservatively)
  };
  static constexpr int kClasses = 64;
  static int classOf(int64_t bytes);
  void add(int64_t bytes, int64_t ns);

  std::array<SizeClass, kClasses> classes_{};
};

}  // namespace ringside::analyzer::hang::detail
