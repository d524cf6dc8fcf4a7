// gui/timeline_view.h — the timeline: a lane per rank (collectives, phases) and per
// directed link (bytes/s), a sticky time ruler, hover line and tooltips, selection.
// Each kind of lane draws itself and answers its own tooltips (timeline_lanes.h); this
// class lays them out, keeps what the user changed and turns the mouse into gestures.
//
// Draws the model with ImGui's draw list; all geometry comes from lod.h
// (buildFrameGeometry), so what is drawn, what the mouse hits and what the viewer
// benchmark times are computed by the same tested code. Several TimelineViews can share
// one ViewState (A/B compare: B drawn `offset_ns` later on its own clock).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringside/gui/lod.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

struct TimelineDrawOptions {
  const char* id = "lanes";
  float height = 0;          // of the lanes area; 0: the rest of the window
  int64_t offset_ns = 0;     // model time = view time + offset_ns
  const char* title = nullptr;  // drawn left of the ruler, e.g. "A: ring.sqlite"
  const std::vector<int>* marked = nullptr;  // sorted collective indices to outline (search)
  bool dark = true;
};

// A collective drawn on its own (not merged), where it is on screen: --state-out lists a
// few so scripted input (tests/e2e_gui) can click one.
struct TimelineTarget {
  int collective = -1;
  int rank = -1;
  float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
};

struct TimelineHover {
  std::string lane;      // "" when not over a lane
  int collective = -1;
  int64_t time_ns = -1;  // model time under the cursor, -1 outside the plot
};

class TimelineView {
 public:
  void reset(const TimelineModel& model);
  // Draws into the current ImGui window's remaining space (or options.height); handles its
  // mouse input: wheel zoom at the cursor, drag to pan, right-drag to zoom to a range,
  // shift-drag to select a range, click to select, click a lane name to fold it, right-click
  // a lane name to hide or pin it.
  void draw(const TimelineModel& model, ViewState* view, const TimelineDrawOptions& options = {});
  int selected() const { return selected_; }
  void select(int collective) { selected_ = collective; }
  // The collective clicked in the last draw (once), -1 when none.
  int takeClicked() {
    int c = clicked_;
    clicked_ = -1;
    return c;
  }
  // A time range selected with shift-drag or --range (model time).
  const std::optional<TimeRange>& rangeSelection() const { return range_selection_; }
  void setRangeSelection(std::optional<TimeRange> r) { range_selection_ = r; }
  // Lanes: hide, pin (drawn first), show again; scroll a lane into view on the next draw.
  std::vector<LaneFlags>& laneFlags() { return flags_; }
  const std::vector<LaneFlags>& laneFlags() const { return flags_; }
  void scrollToLane(int lane) { scroll_to_lane_ = lane; }
  int laneOfRank(const TimelineModel& model, int rank) const;
  int laneOfLink(const TimelineModel& model, int src, int dst) const;
  const TimelineHover& hover() const { return hover_; }
  const std::vector<TimelineTarget>& targets() const { return targets_; }

 private:
  enum class Drag { kNone, kPan, kZoomRange, kSelectRange };
  struct Frame;  // one frame's lanes, layout and geometry (timeline_view.cpp)
  // The stages of draw(), in order.
  Frame beginFrame(const TimelineModel& model, ViewState* view, const TimelineDrawOptions& options);
  std::vector<LaneLayout> layoutAndScroll(const TimelineModel& model, float top);
  // Rank lanes folded or hidden since the last frame give their rows back (built again when
  // shown: TimelineModel::releaseLane).
  void releaseFolded(const TimelineModel& model, const std::vector<LaneLayout>& layout);
  void drawLanes(const Frame& f);
  void drawRangeSelection(const Frame& f) const;
  Hit hoverLanes(const Frame& f, ViewState* view);
  void followGesture(const Frame& f, ViewState* view, const Hit& hit);
  void laneNameInput(const Frame& f, const Hit& hit);

  std::vector<LaneFlags> flags_;
  std::vector<char> shown_;  // per lane: unfolded and not hidden at the last frame
  int selected_ = -1;
  int clicked_ = -1;
  Drag drag_ = Drag::kNone;
  bool dragged_ = false;
  int64_t drag_start_ns_ = 0;  // view time where a range drag began
  std::optional<TimeRange> range_selection_;
  int scroll_to_lane_ = -1;
  int menu_lane_ = -1;
  TimelineHover hover_;
  std::vector<TimelineTarget> targets_;
};

}  // namespace ringside::gui
