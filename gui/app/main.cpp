// ringside-view: the desktop viewer. Started as `ringside view ...` (cli/src/view_cmd.cpp execs it)
// or directly.
#include <iostream>
#include <string>
#include <vector>

#include "viewer_app.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  ringside::gui::ViewerOptions options;
  std::string message;
  int rc = ringside::gui::parseViewerArgs(args, &options, &message);
  if (rc == -1) {
    std::cout << message;
    return 0;
  }
  if (rc != 0) {
    std::cerr << "ringside view: " << message << " (see 'ringside view --help')\n";
    return rc;
  }
  return ringside::gui::runViewer(options);
}
