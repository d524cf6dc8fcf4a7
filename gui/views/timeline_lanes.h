// gui/timeline_lanes.h — the timeline's lanes, one class per kind (as Tracy's
// TimelineItem*): a rank's calls and phases, a host's header, a directed link's bytes/s.
//
// Each kind draws its own name lines and contents and answers the mouse over its own
// body; TimelineView lays the lanes out, builds the frame's geometry (lod.h) and hands
// each lane its part. Lanes keep no state between frames: what the user changed
// (fold, hide, pin, selection) lives in TimelineView.
#pragma once

#include <imgui.h>

#include <span>
#include <vector>

#include "ringside/gui/lod.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

struct TimelineTarget;
struct TimelineHover;

// One frame of the timeline as every lane sees it.
struct LaneFrame {
  const TimelineModel* model = nullptr;
  ImDrawList* dl = nullptr;
  TimeAxis axis;
  float label_x = 0, plot_x = 0,
        plot_w = 0;  // the name column starts at label_x, the plot at plot_x
  ImVec2 clip_min, clip_max;
  double link_top = 1;   // the shared scale of every link lane (bytes/s)
  LinkRef hovered_link;  // hovered here or in the topology view
  ImU32 text = 0, dim = 0, lane_bg = 0, highlight = 0, mark = 0, on_event = 0;
  bool dark = true;
  const std::vector<int>* marked = nullptr;  // sorted collective indices to outline (search)
  int selected = -1;                         // the selected collective
  float min_event_px = 3.0f;                 // narrower events merge into counted blocks
};

// One lane's part of the frame's geometry (lod.h's buildFrameGeometry): a rank lane's rows in
// view, a link lane's counter.
struct LaneGeometry {
  int lane = -1;
  std::span<const RowGeometry> rows;
  const CounterGeometry* counter = nullptr;
};

// What the mouse is over, handed to the lane under it.
struct LanePointer {
  ImVec2 pos;
  Hit hit;               // hitTest's answer, on this lane
  bool gesture = false;  // a button went down in this plot and is still held
  bool moved = false;    // ... and the mouse moved since (a drag, not a click)
};

class TimelineLane {
 public:
  virtual ~TimelineLane() = default;
  // The lane's background, colour swatch and name line, then the kind's own labels.
  void drawName(const LaneFrame& f, const Lane& lane, const LaneLayout& l, bool pinned) const;
  // The kind's contents from the frame's geometry; a rank lane also lists the collectives it
  // drew on their own (--state-out's targets).
  virtual void drawContents(const LaneFrame& f, const LaneGeometry& g,
                            std::vector<TimelineTarget>* targets) const;
  // What is at (x, y) on this lane (lanes[index], laid out at `l`): the lane alone, or a rank
  // lane's row and the draw item there.
  virtual Hit hitTest(const LaneFrame& f, const Lane& lane, int index, const LaneLayout& l, float x,
                      float y) const;
  // The mouse is over this lane's plot: tooltips, the hovered link, the hovered collective.
  virtual void hover(const LaneFrame& f, const Lane& lane, const LaneLayout& l,
                     const LanePointer& p, ViewState* view, TimelineHover* out) const;

 protected:
  virtual ImU32 swatch(const Lane& lane) const = 0;
  virtual void drawLabels(const LaneFrame& f, const Lane& lane, const LaneLayout& l) const;
};

// The lane class of a kind; one shared instance each (lanes are stateless).
const TimelineLane& timelineLane(LaneKind kind);

}  // namespace ringside::gui
