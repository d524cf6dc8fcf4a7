// gui/headless.h — the viewer without a person: --screenshot (a hidden window, a PNG after
// --frames frames, with --dump-layout and --export-csv beside it) and --export-csv alone (no
// window at all). Errors: one "ringside view: ..." line on stderr, exit status 1.
// Threads: UI thread only.
#pragma once

#include <chrono>

#include "backend.h"
#include "ringside/analyzer/topology.h"
#include "viewer_app.h"
#include "viewer_session.h"

namespace ringside::gui {

// --export-csv without --screenshot: loads the first trace and writes the --view's table.
int exportCsvWithoutWindow(const ViewerOptions& options, const analyzer::Topology* topology);

// --screenshot: decides after each rendered frame whether to write the files and stop.
class HeadlessRun {
 public:
  explicit HeadlessRun(const ViewerOptions& options) : options_(options) {}
  enum class Step { kNextFrame, kDone, kFailed };
  // Once the traces are in (or one failed) and --frames frames later: the PNG of the frame just
  // rendered, then --dump-layout and --export-csv. Gives up 5 minutes after the start.
  Step afterFrame(Backend* backend, const ViewerSession& session);

 private:
  bool writeFiles(Backend* backend, const ViewerSession& session) const;

  const ViewerOptions& options_;
  int frames_after_load_ = 0;
  std::chrono::steady_clock::time_point deadline_ =
      std::chrono::steady_clock::now() + std::chrono::minutes(5);
};

}  // namespace ringside::gui
