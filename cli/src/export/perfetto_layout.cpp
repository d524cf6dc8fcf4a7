#include "export/perfetto_layout.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ringside::cli {

int LaneAllocator::assign(int64_t start, int64_t end) {
  while (!busy_.empty() && busy_.top().first <= start) {
    free_.push(busy_.top().second);
    busy_.pop();
  }
  int lane;
  if (!free_.empty()) {
    lane = free_.top();
    free_.pop();
  } else {
    lane = next_lane_++;
  }
  busy_.push({end < start ? start : end, lane});
  return lane;
}

int64_t LinkRateBins::binOf(int64_t t) const {
  // Floor division: times before the origin fall in negative bins.
  return t >= 0 ? t / bin_ns_ : -((-(t + 1)) / bin_ns_) - 1;
}

void LinkRateBins::put(int64_t bin, double bytes_in_bin, const Emit& emit) {
  double rate = bytes_in_bin * 1e9 / static_cast<double>(bin_ns_);
  // Rounded to whole bytes/s, so the float residue of adding and taking away a rate is 0.
  constexpr double kMax = 9.2e18;
  int64_t whole = rate >= kMax ? INT64_MAX : (rate <= 0.5 ? 0 : std::llround(rate));
  if (emitted_ ? whole == last_rate_ : whole == 0) return;
  int64_t start;
  if (__builtin_mul_overflow(bin, bin_ns_, &start)) start = bin > 0 ? INT64_MAX : INT64_MIN;
  emit(start, whole);
  last_rate_ = whole;
  emitted_ = true;
}

void LinkRateBins::flushBefore(int64_t bin, const Emit& emit) {
  for (;;) {
    int64_t next = INT64_MAX;
    if (!step_.empty()) next = step_.begin()->first;
    if (!single_.empty()) next = std::min(next, single_.begin()->first);
    // The bin after the last one handled holds the level alone, until the next key.
    if (gap_pending_ && gap_ < bin && gap_ < next) {
      put(gap_, level_, emit);
      gap_pending_ = false;
    }
    if (next >= bin || next == INT64_MAX) return;
    double extra = 0.0;
    if (!step_.empty() && step_.begin()->first == next) {
      level_ += step_.begin()->second;
      step_.erase(step_.begin());
    }
    if (!single_.empty() && single_.begin()->first == next) {
      extra = single_.begin()->second;
      single_.erase(single_.begin());
    }
    put(next, level_ + extra, emit);
    gap_ = next + 1;
    gap_pending_ = true;
  }
}

void LinkRateBins::add(int64_t start, int64_t end, int64_t bytes, const Emit& emit) {
  const int64_t b0 = binOf(start);
  flushBefore(b0, emit);
  if (bytes <= 0) return;
  int64_t dur;
  if (end <= start || __builtin_sub_overflow(end, start, &dur)) {
    single_[b0] += static_cast<double>(bytes);
    return;
  }
  const int64_t b1 = binOf(end - 1);  // the last bin holding part of [start, end)
  if (b1 == b0) {
    single_[b0] += static_cast<double>(bytes);
    return;
  }
  const double per_ns = static_cast<double>(bytes) / static_cast<double>(dur);
  // Bin edges as doubles: a damaged trace's times near INT64_MAX must not overflow.
  const double w = static_cast<double>(bin_ns_);
  single_[b0] += per_ns * ((static_cast<double>(b0) + 1.0) * w - static_cast<double>(start));
  single_[b1] += per_ns * (static_cast<double>(end) - static_cast<double>(b1) * w);
  if (b1 > b0 + 1) {
    step_[b0 + 1] += per_ns * w;
    step_[b1] -= per_ns * w;
  }
}

void LinkRateBins::finish(const Emit& emit) {
  flushBefore(INT64_MAX, emit);
  if (gap_pending_ && gap_ != INT64_MAX) put(gap_, level_, emit);
  gap_pending_ = false;
  if (emitted_ && last_rate_ != 0) put(gap_, 0.0, emit);
}

bool MessageMatcher::add(int32_t src, int32_t dst, int64_t slot, bool recv, const Side& side,
                         Side* other) {
  if (gave_up_) return false;
  auto it = keys_.try_emplace({src, dst, slot}).first;
  Key& key = it->second;
  const int64_t index = recv ? key.recvs++ : key.sends++;
  const int64_t partners = recv ? key.sends : key.recvs;
  auto pop = [&] {
    ++key.head;
    --waiting_;
    if (key.head * 2 > key.waiting.size()) {
      key.waiting.erase(key.waiting.begin(),
                        key.waiting.begin() + static_cast<std::ptrdiff_t>(key.head));
      key.head = 0;
    }
  };
  bool paired = false;
  if (index < partners) {
    // The other side is ahead: its waiting entries start at the oldest unpaired index (some
    // may have been dropped).
    while (key.head < key.waiting.size() && key.waiting[key.head].index < index) pop();
    if (key.head < key.waiting.size() && key.waiting[key.head].index == index) {
      *other = key.waiting[key.head].side;
      pop();
      paired = true;
    }
  } else {
    key.waiting.push_back({index, side});
    ++waiting_;
    if (key.waiting.size() - key.head > kMaxWaiting) pop();
  }
  if (key.sends == key.recvs) {
    waiting_ -= key.waiting.size() - key.head;
    keys_.erase(it);
  }
  if (waiting_ > kMaxWaitingTotal) {
    gave_up_ = true;
    keys_.clear();
  }
  return paired;
}

}  // namespace ringside::cli
