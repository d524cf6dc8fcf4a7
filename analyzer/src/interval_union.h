// Time accumulators fed in order of start: a total length of a union of intervals (the time a
// rank spent inside collectives, the time a link was busy), and a first-to-last extent.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ringside::analyzer::detail {

class IntervalUnion {
 public:
  void add(int64_t start, int64_t end) {
    if (end < start) end = start;
    if (!open_) {
      open_ = true;
      start_ = start;
      end_ = end;
    } else if (start > end_) {
      closed_ += end_ - start_;
      start_ = start;
      end_ = end;
    } else if (end > end_) {
      end_ = end;
    }
  }
  int64_t total() const { return closed_ + (open_ ? end_ - start_ : 0); }

 private:
  bool open_ = false;
  int64_t start_ = 0;
  int64_t end_ = 0;
  int64_t closed_ = 0;
};

// First start and last end seen, in any order; an end before its start counts as the start.
class TimeSpan {
 public:
  void add(int64_t start, int64_t end) {
    end = std::max(start, end);
    if (!any_) {
      any_ = true;
      first_ = start;
      last_ = end;
      return;
    }
    first_ = std::min(first_, start);
    last_ = std::max(last_, end);
  }
  bool any() const { return any_; }
  int64_t first() const { return first_; }
  int64_t last() const { return last_; }
  int64_t length() const { return any_ ? last_ - first_ : 0; }

 private:
  bool any_ = false;
  int64_t first_ = 0;
  int64_t last_ = 0;
};

}  // namespace ringside::analyzer::detail
