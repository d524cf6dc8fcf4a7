// gui/lod.h — level of detail and hit-testing for the timeline, in pixels.
//
// Pure functions of the model and a TimeAxis, so each frame draws only what is
// visible and at most a few items per pixel: events narrower than a few pixels
// merge into one counted block, counters keep min and max per pixel column.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ringside/gui/timeline_model.h"

namespace ringside::gui {

// Maps trace time [t0, t1] onto pixels [x0, x0 + width].
struct TimeAxis {
  int64_t t0 = 0, t1 = 1;
  float x0 = 0, width = 1;
  double nsPerPixel() const { return static_cast<double>(t1 - t0) / width; }
  float toX(int64_t t) const;
  int64_t toTime(float x) const;
};

// One thing to draw on a row: a single event (count == 1) or a block of `count`
// merged events starting at events[first].
struct DrawItem {
  float x0 = 0, x1 = 0;  // clipped to the axis
  int64_t start_ns = 0, end_ns = 0;
  int first = 0;
  int count = 1;
};

// Events of `row` visible on `axis`. An event narrower than `min_px` merges with its
// narrow neighbours into one block while the gap between them is below `min_px`.
std::vector<DrawItem> lodEvents(const EventRow& row, const TimeAxis& axis, float min_px = 3.0f);

// One pixel column of a counter: the min and max of the bins it covers.
struct CounterColumn {
  float x = 0;
  double min = 0, max = 0;
};
// At most one column per pixel; columns outside the counter's time range are left out.
std::vector<CounterColumn> downsampleCounter(const Counter& counter, const TimeAxis& axis);

// A link lane's columns at the level of detail the zoom needs: the analysis' bins while a pixel
// covers at least one of them, then the finer bins (Lane::fine), then, zoomed in further, the
// link's own messages binned at one column per pixel (down to single messages), so the picture
// never has a coarser resolution than the screen. Each column's min and max are bytes/s.
enum class LinkLevel { kCounter, kFine, kMessages };
const char* linkLevelName(LinkLevel level);  // "bins", "fine bins", "messages"
LinkLevel linkLevel(const Lane& lane, const TimeAxis& axis);
std::vector<CounterColumn> downsampleLink(const Lane& lane, const TimeAxis& axis);

// The messages of a link lane that overlap [t0, t1]: how many, their bytes, and the first one's
// index into Lane::messages (-1 when none).
struct MessageSpan {
  int64_t count = 0, bytes = 0;
  int64_t first = -1;
};
MessageSpan messagesIn(const Lane& lane, int64_t t0, int64_t t1);

// Vertical layout of the lanes: rank lanes expand to one line per row unless collapsed.
struct LaneLayout {
  float y = 0, height = 0;  // height 0: a hidden lane
  float header = 0;  // the lane's name line
  float row_height = 0;
  bool collapsed = false;
};
struct LayoutOptions {
  float line = 18.0f;          // one row of events / the header line
  float counter_height = 40.0f;
  float gap = 4.0f;
};
std::vector<LaneLayout> layoutLanes(const TimelineModel& model, const std::vector<bool>& collapsed,
                                    float top, const LayoutOptions& options = {});
// The same, with lanes hidden (height 0) and pinned lanes first, in their own order.
struct LaneFlags {
  bool collapsed = false, hidden = false, pinned = false;
};
std::vector<LaneLayout> layoutLanes(const TimelineModel& model, const std::vector<LaneFlags>& flags,
                                    float top, const LayoutOptions& options = {});

struct Hit {
  int lane = -1, row = -1;  // row -1: the lane header or a link's counter
  int event = -1;           // index into the row's events; -1 when none
  int count = 0;            // > 1: a merged block starting at `event`
};
// What is at pixel (x, y): the draw item under x (with `slack_px` tolerance) on the row under y.
// The lane under y, then, on a rank lane, hitRankLane (the timeline view asks each kind of lane
// its own way: gui/views/timeline_lanes.h).
Hit hitTest(const TimelineModel& model, const std::vector<LaneLayout>& layout,
            const TimeAxis& axis, float x, float y, float min_px = 3.0f, float slack_px = 2.0f);

// The lane whose [y, y + height) holds `y`; -1 when none (hidden lanes have no height).
int laneAt(std::span<const LaneLayout> layout, float y);
// On rank lane `lane` (lanes[index], laid out at `l`): the row under y and the draw item under x,
// with `slack_px` tolerance; row -1 on the header or a folded lane.
Hit hitRankLane(const Lane& lane, int index, const LaneLayout& l, const TimeAxis& axis, float x,
                float y, float min_px = 3.0f, float slack_px = 2.0f);

// Everything the timeline draws in one frame, in pixels, without drawing: the rows and
// counters of the lanes that reach into [clip_y0, clip_y1]. The view draws exactly this; the
// viewer benchmark times it.
struct RowGeometry {
  int lane = -1, row = -1;
  float y0 = 0, y1 = 0;
  std::vector<DrawItem> items;
};
struct CounterGeometry {
  int lane = -1;
  float y0 = 0, y1 = 0;
  LinkLevel level = LinkLevel::kCounter;
  std::vector<CounterColumn> columns;
};
struct FrameGeometry {
  std::vector<RowGeometry> rows;
  std::vector<CounterGeometry> counters;
  size_t itemCount() const;
  // The link lanes' shared scale in this frame: the highest column of the link lanes it draws
  // (the busiest link in view, at this zoom's resolution); 0 when none carried bytes.
  double linkTop() const;
};
FrameGeometry buildFrameGeometry(const TimelineModel& model, const std::vector<LaneLayout>& layout,
                                 const TimeAxis& axis, float clip_y0, float clip_y1, float min_px = 3.0f);

}  // namespace ringside::gui
