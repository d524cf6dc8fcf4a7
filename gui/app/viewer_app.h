// gui/viewer_app.h — `ringside-view`: options, the loader thread, the frame loop.
#pragma once

#include <string>
#include <vector>

namespace ringside::gui {

struct ViewerOptions {
  std::vector<std::string> traces;  // 1, or 2 for A/B (compare)
  std::string screenshot;           // write a PNG after `frames` frames, then exit
  int frames = 3;
  int width = 1280, height = 800;
  std::string view = "timeline";    // timeline|topology|matrix|stats|compare
  int select = -1;                  // collective index (order of first start)
  std::string range;                // START:END from the trace start, e.g. 1ms:2.5ms
  double range_start_ns = -1, range_end_ns = -1;  // parsed from `range`
  bool light = false;
  bool view_given = false;          // --view was on the command line (else: compare for two traces)
  std::string state_out;            // write the UI state as JSON here (on change and at exit)
  std::string search;               // start with this search (as if typed)
  std::string topology;     // --topology FILE: machines and links (docs/topology.md)
  std::string export_csv;   // --export-csv FILE: the --view's table (stats or matrix) as CSV
  std::string dump_layout;  // --dump-layout FILE: the topology view's geometry as JSON (tests)
  double scrub = -1;        // --scrub POS: the topology view's scrubber on at POS (0..1)
};

// Parses argv after the program name. Returns 0 ok, 2 usage error (message in *error),
// -1 help was asked for (*error holds the help text).
int parseViewerArgs(const std::vector<std::string>& args, ViewerOptions* out, std::string* error);
std::string viewerHelp();

int runViewer(const ViewerOptions& options);

}  // namespace ringside::gui
