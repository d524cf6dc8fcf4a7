// gui/timeline_view.h — the timeline: a lane per rank (collectives, phases) and per
// directed link (bytes/s), a sticky time ruler, hover line and tooltips, selection.
//
// Draws the model with ImGui's draw list; all geometry comes from lod.h, so what
// is drawn and what the mouse hits are computed by the same tested code.
#pragma once

#include <string>
#include <vector>

#include "ringside/gui/lod.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

class TimelineView {
 public:
  void reset(const TimelineModel& model);
  // Draws into the current ImGui window's remaining space; handles its mouse input.
  void draw(const TimelineModel& model, ViewState* view);
  int selected() const { return selected_; }
  void select(int collective) { selected_ = collective; }

 private:
  std::vector<bool> collapsed_;
  int selected_ = -1;
  bool dragging_ = false;
};

// "1.5 ms", "250 us", "3 s": a duration with a unit that suits its size.
std::string formatDuration(double ns);
std::string formatRate(double bytes_per_s);
std::string formatBytes(double bytes);

}  // namespace ringside::gui
