// gui/overview_view.h — the ranks x time overview above the timeline (docs/viewer.md).
//
// One row per rank (or per group of consecutive ranks past 128), the whole trace across:
// orange where ranks waited inside collectives for others, blue where they moved data, the
// background where they were outside collectives. The timeline's view range is outlined; a
// click centres the timeline there and scrolls to the rank; a button jumps to the rank that
// arrived last most often.
#pragma once

#include <imgui.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

// Where the strip was drawn, in window pixels (--state-out reports it for the tests).
struct OverviewPlace {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int rows = 0;
};

struct OverviewAction {
  std::optional<TimeRange> range;  // centre the timeline here
  int rank = -1;                   // scroll to this rank's lane
};

class OverviewView {
 public:
  // `image`: draws an RGBA image (width x height) and returns its texture id, nullptr if none.
  using ImageFn = void* (*)(void* context, const std::vector<uint8_t>& rgba, int width, int height,
                            uint64_t version);
  OverviewAction draw(const TimelineModel& model, const ViewState& view, bool dark, ImageFn image,
                      void* context);
  const OverviewPlace& place() const { return place_; }

 private:
  // The parts of draw(), left to right and top to bottom.
  static void drawTitle(const Overview& o, ImVec2 origin);
  void drawStrip(const TimelineModel& model, const ViewState& view, void* tex, ImVec2 a,
                 ImVec2 size);
  static void hoverStrip(const TimelineModel& model, const ViewState& view, ImVec2 a, ImVec2 size,
                         OverviewAction* action);
  static void drawLegend(const Overview& o, float right, OverviewAction* action);

  std::vector<uint8_t> rgba_;
  int width_ = 0;
  bool dark_ = true;
  const TimelineModel* model_ = nullptr;
  uint64_t version_ = 0;
  OverviewPlace place_;
};

}  // namespace ringside::gui
