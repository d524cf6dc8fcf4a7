// gui/view_state.h — the visible time range and how navigation changes it.
//
// Zoom keeps the time under the cursor still; pan moves by pixels; fit shows the
// whole trace. commit() records the range in an undo/redo history (the views call
// it when a gesture ends, so one drag is one step). No ImGui here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringside::gui {

struct TimeRange {
  int64_t t0 = 0, t1 = 1;
  bool operator==(const TimeRange&) const = default;
};

class ViewState {
 public:
  static constexpr int64_t kMinSpanNs = 100;  // deepest zoom

  void setLimits(int64_t start_ns, int64_t end_ns);  // the trace; also fits
  TimeRange range() const { return range_; }
  TimeRange limits() const { return limits_; }
  void setRange(TimeRange r);  // clamped to a span >= kMinSpanNs

  // factor < 1 zooms in. anchor: 0..1 across the view (the cursor's position).
  void zoomAt(double anchor, double factor);
  void panPixels(float dx, float width);  // dx > 0 moves the view to earlier times
  void fit();

  void commit();  // push the current range onto the history if it changed
  bool undo();
  bool redo();

 private:
  TimeRange limits_{0, 1};
  TimeRange range_{0, 1};
  std::vector<TimeRange> history_;
  size_t cursor_ = 0;  // history_[cursor_ - 1] is the committed current range
};

}  // namespace ringside::gui
