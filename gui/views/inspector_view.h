// gui/inspector_view.h — the side panels: the selected collective's details, the
// statistics of a selected time range, and the analyzer's findings (clickable).
//
// Numbers come from inspect.h (the analyzer's Analysis as loaded); these functions only
// lay them out with ImGui. A click is returned as an InspectAction for the app to apply.
#pragma once

#include <optional>

#include "ringside/gui/inspect.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

struct InspectAction {
  int select = -1;                // select this collective
  std::optional<TimeRange> zoom;  // show this range
  int rank = -1;                  // scroll this rank's lane into view
  int src = -1, dst = -1;         // scroll this link's lane into view
  bool any() const { return select >= 0 || zoom || rank >= 0 || src >= 0; }
};

// A dimmed line (a hint, a note) that wraps at the panel's edge instead of being cut.
void textDisabledWrapped(const char* text);
void drawCollectiveDetails(const TimelineModel& model, int collective, InspectAction* action);
void drawRangeStats(const TimelineModel& model, const RangeStats& stats);
// One clickable entry per finding, wrapped to the panel's width; a click selects and zooms to what it names.
void drawFindings(const TimelineModel& model, const char* id, InspectAction* action);
// Applies an action's zoom / selection target to a range (a collective's span).
InspectAction actionFor(const TimelineModel& model, const FindingTarget& target);

}  // namespace ringside::gui
