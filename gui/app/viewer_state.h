// gui/viewer_state.h — `--state-out FILE.json`: what the viewer shows (view range, selection,
// hover, search, lanes, clickable targets, compare figures), for scripts and the GUI tests
// (tests/e2e_gui read it). Written whole to a temporary file beside FILE and renamed
// (ringside/fileio/output_file.h), so readers never see half.
// Threads: UI thread only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "compare_view.h"
#include "overview_view.h"
#include "ringside/gui/inspect.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"
#include "timeline_view.h"

namespace ringside::gui {

// What the state is made of. Everything past `view` only once every trace is loaded.
struct ViewerStateInput {
  bool loaded = false;
  std::vector<std::string> errors;         // "PATH: error" per trace that failed
  std::string view;                        // compare, or the tab shown
  const TimelineModel* model = nullptr;    // trace A
  const TimelineView* timeline = nullptr;  // A's timeline (the one the keys act on)
  const ViewState* view_state = nullptr;
  const char* search_query = "";
  bool search_active = false;  // the search box has the keyboard
  const SearchCursor* search = nullptr;
  const OverviewView* overview = nullptr;  // the ranks x time strip (not in compare mode)
  const CompareView* compare = nullptr;  // compare mode only, with:
  const TimelineModel* model_b = nullptr;
};

std::string viewerStateJson(const ViewerStateInput& in);
// The state when the window could not be opened.
std::string viewerStartFailedJson(const std::string& error);

// Through a temporary file beside `path` (ringside/fileio/output_file.h): replaces a regular
// file, never a link or a device; the first failure is said on stderr.
bool writeFileAtomically(const std::string& path, const std::string& text);

// Writes the state when it changes, at most 10 times a second; flush() writes the last one and
// says whether the file holds it (false: it could not be written; the viewer exits 1).
class StateWriter {
 public:
  explicit StateWriter(std::string path) : path_(std::move(path)) {}
  bool enabled() const { return !path_.empty(); }
  void update(std::string state);
  bool flush();

 private:
  std::string path_;
  std::string last_, pending_;
  bool written_ = false;  // a state was written at least once
  std::chrono::steady_clock::time_point last_write_ =
      std::chrono::steady_clock::now() - std::chrono::seconds(1);
};

}  // namespace ringside::gui
