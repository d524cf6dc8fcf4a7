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

// A directed link (src -> dst rank); src < 0: none.
struct LinkRef {
  int src = -1, dst = -1;
  bool valid() const { return src >= 0 && dst >= 0; }
  bool operator==(const LinkRef&) const = default;
};

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

  // The link under the mouse, shared by the views (the timeline's link lane, the topology
  // view's edge) so hovering one highlights the other. A view calls hoverLink() while the
  // mouse is over a link; endFrame() makes that the hovered link of the next frame.
  LinkRef hoveredLink() const { return hovered_; }
  void hoverLink(LinkRef link) { hover_next_ = link; }
  void endFrame() {
    hovered_ = hover_next_;
    hover_next_ = {};
  }

 private:
  LinkRef hovered_, hover_next_;
  TimeRange limits_{0, 1};
  TimeRange range_{0, 1};
  std::vector<TimeRange> history_;
  size_t cursor_ = 0;  // history_[cursor_ - 1] is the committed current range
};

}  // namespace ringside::gui
