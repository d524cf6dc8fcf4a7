// gui/toolbar.h — the line above the views: what is open and the view range, the search box,
// Fit / Undo / Redo, the lanes popup, the theme and help buttons.
// Threads: UI thread only.
#pragma once

#include <functional>
#include <string>

#include "backend.h"
#include "ringside/gui/inspect.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"
#include "timeline_view.h"

namespace ringside::gui {

// The search: the query as typed, its matches, and where Enter / F3 stand in them.
struct SearchBox {
  char text[256] = {};
  SearchCursor cursor;
  std::string error;   // the query's error, shown instead of the match count
  bool focus = false;  // give the box the keyboard on the next frame (Ctrl+F, /)
  bool active = false;  // the box has the keyboard (this frame; --state-out reports it)

  void run(const TimelineModel& model);
};

struct ToolbarContext {
  const TimelineModel& model;
  ViewState& view;
  TimelineView& timeline;  // whose lanes the popup hides and pins
  Backend& backend;
  SearchBox& search;
  bool& show_help;
  std::function<void(bool forward)> step_search;  // select and show the next / previous match
};

void drawToolbar(const ToolbarContext& c);

}  // namespace ringside::gui
