// gui/hang_focus.h — where the viewer opens on a hung or desynchronized trace: the collective of
// the autopsy's first verdict (analyzer/hang.h: stuck-collective, collective-mismatch,
// rank-exited, ...), selected on every rank, its culprits' lanes marked, and a time range that
// holds the collective before it (where the culprit was last seen) and the trace's end (where
// the others still wait). No ImGui here.
#pragma once

#include <string>
#include <vector>

#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

struct HangFocus {
  int collective = -1;        // index into Analysis::collectives; -1: the trace did not hang
  std::string rule;           // the verdict's rule id
  std::vector<int> culprits;  // ranks to mark
  TimeRange range;            // what to show
  bool any() const { return collective >= 0; }
};

// The focus of the first verdict that names a collective of the trace; none when the autopsy is
// empty or its collective is not in the analysis.
HangFocus findHangFocus(const TimelineModel& model);

// Marks the culprits' rank lanes: their names get " << <rule>" ("rank 5 << stuck-collective").
void markCulprits(const HangFocus& focus, TimelineModel* model);

}  // namespace ringside::gui
