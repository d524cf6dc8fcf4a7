// gui/viewer_session.h — one run of the viewer between opening the window and closing it: the
// traces loading, then the views, the keys and the toolbar, one frame at a time.
// runViewer() (viewer_app.cpp) owns the frame loop around it; headless.h and viewer_state.h
// read it.
// Threads: UI thread only (the traces load on their own threads: trace_loading.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "compare_view.h"
#include "key_bindings.h"
#include "overview_view.h"
#include "ringside/analyzer/topology.h"
#include "ringside/gui/hang_focus.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"
#include "timeline_view.h"
#include "toolbar.h"
#include "trace_loading.h"
#include "view_tabs.h"
#include "viewer_app.h"

namespace ringside::gui {

class ViewerSession {
 public:
  // Starts loading options.traces. `topology` and `backend` outlive the session.
  ViewerSession(const ViewerOptions& options, const analyzer::Topology* topology, Backend* backend);

  // How long Backend::beginFrame may wait for input: never while loading, animating or headless.
  double frameWaitSeconds() const;
  // Between Backend::beginFrame() and render(): takes what the loaders finished and draws.
  void frame();

  bool ready() const { return ready_; }        // every trace loaded and the views set up
  int exitCode() const { return exit_code_; }  // 1 once a trace failed to load
  const TimelineModel* modelA() const { return ready_ ? slots_[0]->model.get() : nullptr; }
  const ViewTabs& tabs() const { return tabs_; }
  std::string stateJson() const;  // viewer_state.h

 private:
  void pollLoaders();
  void setUpViews();
  void applyStartOptions();
  void drawFailed();
  void drawEarly();
  void drawLoading();
  void drawReady(const std::vector<KeyPress>& keys);
  void handleKeys(const std::vector<KeyPress>& keys);
  void apply(const KeyEvent& e);
  void drawViews();
  void drawTimelineArea();
  void drawHelp();

  TimelineModel& modelA() { return *slots_[0]->model; }
  const OverviewView& overview() const { return overview_; }
  TimelineView& activeTimeline() { return compare_mode_ ? compare_.timelineA() : timeline_; }
  const TimelineView& activeTimeline() const {
    return compare_mode_ ? compare_.timelineA() : timeline_;
  }
  void showCollective(int c);
  void selectCollective(int c);
  void stepSearch(bool forward);

  const ViewerOptions& options_;
  const analyzer::Topology* topology_;
  Backend* backend_;
  std::vector<std::unique_ptr<TraceSlot>> slots_;
  bool compare_mode_ = false;
  ViewState view_;
  TimelineView timeline_;
  OverviewView overview_;
  CompareView compare_;
  ViewTabs tabs_;  // Timeline | Topology | Traffic matrix | Statistics (all but compare mode)
  SearchBox search_;
  bool show_help_ = false;
  bool ready_ = false;
  bool early_shown_ = false;  // the timeline of the calls was drawn before the analysis was in
  TimeRange early_fit_;       // the range it was first drawn at
  int exit_code_ = 0;
  HangFocus hang_focus_;  // trace A's autopsy: where the viewer opens (hang_focus.h)
};

}  // namespace ringside::gui
