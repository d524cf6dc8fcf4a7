#include "ringside/gui/view_state.h"

#include <algorithm>
#include <cmath>

namespace ringside::gui {

void ViewState::setLimits(int64_t start_ns, int64_t end_ns) {
  limits_ = {start_ns, std::max(end_ns, start_ns + kMinSpanNs)};
  history_.clear();
  cursor_ = 0;
  fit();
  commit();
}

void ViewState::setRange(TimeRange r) {
  if (r.t1 - r.t0 < kMinSpanNs) {
    int64_t mid = r.t0 + (r.t1 - r.t0) / 2;
    r = {mid - kMinSpanNs / 2, mid - kMinSpanNs / 2 + kMinSpanNs};
  }
  // Never wider than the trace, and never outside it: a zoom to a call near the start once
  // showed "-64.22 ms .. 257.4 ms", time before the trace began.
  const int64_t max_span = limits_.t1 - limits_.t0;
  if (r.t1 - r.t0 >= max_span) {
    range_ = limits_;
    return;
  }
  if (r.t0 < limits_.t0) r = {limits_.t0, limits_.t0 + (r.t1 - r.t0)};
  if (r.t1 > limits_.t1) r = {limits_.t1 - (r.t1 - r.t0), limits_.t1};
  range_ = r;
}

void ViewState::zoomAt(double anchor, double factor) {
  anchor = std::clamp(anchor, 0.0, 1.0);
  const double span = static_cast<double>(range_.t1 - range_.t0);
  const double at = static_cast<double>(range_.t0) + anchor * span;
  const double new_span = span * factor;
  int64_t t0 = static_cast<int64_t>(std::llround(at - anchor * new_span));
  setRange({t0, t0 + std::max<int64_t>(1, static_cast<int64_t>(std::llround(new_span)))});
}

void ViewState::panPixels(float dx, float width) {
  if (width <= 0) return;
  const double span = static_cast<double>(range_.t1 - range_.t0);
  int64_t shift = static_cast<int64_t>(std::llround(-static_cast<double>(dx) / width * span));
  setRange({range_.t0 + shift, range_.t1 + shift});
}

void ViewState::fit() { range_ = limits_; }

void ViewState::commit() {
  if (cursor_ > 0 && history_[cursor_ - 1] == range_) return;
  history_.resize(cursor_);  // a new step drops what could be redone
  history_.push_back(range_);
  cursor_ = history_.size();
}

bool ViewState::undo() {
  if (cursor_ > 0 && !(history_[cursor_ - 1] == range_)) {  // uncommitted move: back to the last step
    range_ = history_[cursor_ - 1];
    return true;
  }
  if (cursor_ <= 1) return false;
  --cursor_;
  range_ = history_[cursor_ - 1];
  return true;
}

bool ViewState::redo() {
  if (cursor_ >= history_.size()) return false;
  ++cursor_;
  range_ = history_[cursor_ - 1];
  return true;
}

}  // namespace ringside::gui
