// gui/view_tabs.h — the tab bar over the viewer's views: Timeline, Topology, Matrix, Stats.
// (A/B compare is a mode of its own, drawn instead of the tabs: compare_view.h.)
//
// The topology tab shows the graph above the timeline, so hovering an edge highlights its
// link lane and hovering a link lane highlights the edge (ViewState's hovered link).
// Threads: UI thread only.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "matrix_view.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"
#include "stats_view.h"
#include "topology_view.h"

namespace ringside::gui {

class ViewTabs {
 public:
  // `initial`: the --view to open on (timeline, topology, matrix, stats).
  // `scrub` >= 0: the topology view's scrubber on at that position (--scrub).
  void reset(const TimelineModel& model, const analyzer::Topology* topology, const std::string& initial,
             double scrub = -1);
  // `selected`: the selected collective (-1 none); `range_selection`: the selected time range,
  // if any (the topology view's colours follow it, else the view range). `draw_timeline` draws
  // the timeline (and whatever sits beside it) into the rest of the tab.
  void draw(const TimelineModel& model, ViewState* view, int selected,
            const std::optional<TimeRange>& range_selection, const std::function<void()>& draw_timeline);
  // The tab shown in the last frame (timeline, topology, matrix, stats); before the first
  // frame, the one reset() was asked to open.
  const std::string& current() const { return current_; }
  std::string topologyLayoutJson() const { return topology_.layoutJson(); }
  bool animating() const { return topology_.playing(); }  // frames must not wait for input

 private:
  TopologyView topology_;
  MatrixView matrix_;
  StatsView stats_;
  std::string select_;  // the tab to select on the next frame
  std::string current_ = "timeline";
};

// The CSV of a view's table for --export-csv: "matrix" -> the traffic matrix, else the stats.
std::string viewCsv(const TimelineModel& model, const std::string& view);

}  // namespace ringside::gui
