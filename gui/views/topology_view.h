// gui/topology_view.h — the topology view: ranks as nodes, directed links as edges
// coloured by their load in a time window, idle links dashed grey, a legend, and a
// scrubber that slides the window over the selected collective (or the view range) to
// replay how load moves across links.
//
// All geometry and colours come from topology_graph.h (tested without a display); this
// file only draws them with ImGui's draw list and handles the mouse. Hovering an edge
// sets ViewState's hovered link, which the timeline highlights, and the other way round.
#pragma once

#include <imgui.h>

#include <optional>
#include <string>
#include <vector>

#include "ringside/gui/timeline_model.h"
#include "ringside/gui/topology_graph.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

class TopologyView {
 public:
  void reset(const TimelineModel& model, const analyzer::Topology* topology);
  // Draws into a `size` region at the cursor. `selected`: the selected collective (-1 none),
  // which bounds the scrubber. `range_selection`: the timeline's selected range, if any; the
  // colours follow it instead of the view range (and the scrubber spans it when no collective is
  // selected).
  void draw(const TimelineModel& model, ViewState* view, int selected,
            const std::optional<TimeRange>& range_selection, ImVec2 size);
  // The last frame's geometry as JSON (--dump-layout); "" before the first frame.
  std::string layoutJson() const;
  bool playing() const { return playing_; }  // the scrubber is moving: draw without waiting for input
  // Turns the scrubber on at `position` (0..1), as --scrub does.
  void scrubAt(float position) {
    scrub_ = true;
    position_ = position;
  }

 private:
  // The stages of draw(), in order.
  Window drawScrubber(const TimelineModel& model, ViewState* view, int selected,
                      const std::optional<TimeRange>& range_selection);
  void drawEdges(ImDrawList* dl, LinkRef hovered) const;
  void drawNodes(ImDrawList* dl, const analyzer::Analysis& a) const;
  void drawGroups(ImDrawList* dl, ImVec2 centre) const;
  void drawLegend(ImDrawList* dl, const analyzer::Analysis& a, ImVec2 at) const;
  void hoverGraph(const analyzer::Analysis& a, ViewState* view, ImVec2 graph) const;

  GraphLayout layout_;
  std::vector<GraphEdge> edges_;
  GraphGeometry geometry_;
  std::vector<EdgeLoad> loads_;
  double scale_gbps_ = 0;  // the window's colour scale top (edgeLoads)
  bool drawn_ = false;
  bool scrub_ = false, playing_ = false;
  float position_ = 0, width_ = 0.1f;
  std::string idle_group_;  // the selected collective's "op library"; "" for none
};

}  // namespace ringside::gui
