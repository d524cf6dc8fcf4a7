// A total length of a union of intervals, fed in order of start: the time a
// rank spent inside collectives, the time a link was busy.
#pragma once

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

}  // namespace ringside::analyzer::detail
