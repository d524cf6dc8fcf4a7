// analyzer/hang_delivery.cpp — DeliveryTimes (hang_delivery.h).
#include "hang_delivery.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string_view>
#include <tuple>
#include <vector>

namespace ringside::analyzer::hang::detail {
namespace {

// Past this a time is absurd (11 days): capped, so that kStallFactor times it cannot overflow.
constexpr int64_t kMaxNeedNs = int64_t{1'000'000} * 1'000'000'000;

// One link of one collective: (communicator, seq, sender, receiver).
using LinkKey = std::tuple<std::string_view, int64_t, int, int>;
struct LinkMessages {
  std::vector<const Message*> sends, receives;
};

bool byPosting(const Message* a, const Message* b) { return a->posted_ns < b->posted_ns; }

}  // namespace

int DeliveryTimes::classOf(int64_t bytes) {
  return bytes <= 1 ? 0 : std::bit_width(static_cast<uint64_t>(bytes)) - 1;
}

void DeliveryTimes::add(int64_t bytes, int64_t ns) {
  SizeClass& c = classes_[static_cast<size_t>(classOf(bytes))];
  if (c.slowest_ns < 0 || bytes < c.smallest) c.smallest = std::max<int64_t>(bytes, 1);
  c.slowest_ns = std::max(c.slowest_ns, std::min(ns, kMaxNeedNs));
}

DeliveryTimes::DeliveryTimes(const Input& input) {
  std::map<LinkKey, LinkMessages> links;
  for (const Rank& r : input.ranks) {
    for (const Message& m : r.messages) {
      if (m.seq < 0 || m.posted_ns < 0) continue;
      if (m.send) {
        links[{m.comm, m.seq, r.rank, m.peer}].sends.push_back(&m);
      } else {
        links[{m.comm, m.seq, m.peer, r.rank}].receives.push_back(&m);
      }
    }
  }
  // The i-th send of a link pairs with its i-th receive (both sides post in the algorithm's
  // order). A pair mismatched by a ring that dropped old messages on one side only gives a
  // longer time or none (a receive done before its send was posted): it errs towards patience.
  for (auto& [key, l] : links) {
    std::sort(l.sends.begin(), l.sends.end(), byPosting);
    std::sort(l.receives.begin(), l.receives.end(), byPosting);
    for (size_t i = 0; i < l.sends.size() && i < l.receives.size(); ++i) {
      const Message& recv = *l.receives[i];
      const int64_t both_posted = std::max(l.sends[i]->posted_ns, recv.posted_ns);
      if (recv.done_ns >= both_posted) add(recv.bytes, recv.done_ns - both_posted);
    }
  }
}

int64_t DeliveryTimes::need(int64_t bytes) const {
  const int k = classOf(bytes);
  int64_t similar = -1;
  for (int j = std::max(0, k - 1); j <= std::min(kClasses - 1, k + 1); ++j) {
    similar = std::max(similar, classes_[static_cast<size_t>(j)].slowest_ns);
  }
  if (similar >= 0) return similar;
  // None of similar size: the nearest class's slowest, scaled by size from its smallest message
  // (a throughput that errs towards patience), and never more than it for a class of larger
  // messages; at equal distance the larger class.
  for (int d = 2; d < kClasses; ++d) {
    for (int j : {k + d, k - d}) {
      if (j < 0 || j >= kClasses || classes_[static_cast<size_t>(j)].slowest_ns < 0) continue;
      const SizeClass& c = classes_[static_cast<size_t>(j)];
      double scaled = static_cast<double>(c.slowest_ns) *
                      static_cast<double>(std::max<int64_t>(bytes, 1)) /
                      static_cast<double>(c.smallest);
      if (j > k) scaled = std::min(scaled, static_cast<double>(c.slowest_ns));
      return static_cast<int64_t>(std::min(scaled, static_cast<double>(kMaxNeedNs)));
    }
  }
  return 0;
}

int64_t DeliveryTimes::bound(int64_t bytes, int64_t floor_ns) const {
  return std::max(floor_ns, kStallFactor * need(bytes));
}

}  // namespace ringside::analyzer::hang::detail
