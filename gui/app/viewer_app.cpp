// runViewer: the window and the frame loop. The pieces it runs: viewer_options.cpp (the command
// line), viewer_session.h (loading, keys, toolbar, views), viewer_state.h (--state-out),
// headless.h (--screenshot, --export-csv).
#include "viewer_app.h"

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "headless.h"
#include "ringside/analyzer/topology.h"
#include "ringside/fileio/input_file.h"
#include "viewer_session.h"
#include "viewer_state.h"

namespace ringside::gui {
namespace {

// --topology FILE, if given. False (the error printed) when it cannot be read.
bool loadTopologyOption(const ViewerOptions& options,
                        std::unique_ptr<analyzer::Topology>* topology) {
  if (options.topology.empty()) return true;
  *topology = std::make_unique<analyzer::Topology>();
  std::string error;
  if (!analyzer::loadTopology(options.topology, topology->get(), &error)) {
    std::cerr << "ringside view: " << error << "\n";
    return false;
  }
  return true;
}

bool openWindow(const ViewerOptions& options, Backend* backend) {
  BackendOptions bopt;
  bopt.title = "ringside - " + options.traces.front() +
               (options.traces.size() > 1 ? " vs " + options.traces[1] : "");
  bopt.width = options.width;
  bopt.height = options.height;
  bopt.visible = options.screenshot.empty();
  bopt.dark = !options.light;
  std::string error;
  if (backend->init(bopt, &error)) return true;
  // Without a window the viewer could not show a missing input: that is the error to name
  // ("PATH: no such file" rather than "cannot start GLFW").
  for (const std::string& trace : options.traces) {
    std::error_code ec;
    if (!std::filesystem::exists(trace, ec)) {
      error = trace + ": no such file";
      break;
    }
  }
  std::cerr << "ringside view: " << error << "\n";
  if (!options.state_out.empty())
    writeFileAtomically(options.state_out, viewerStartFailedJson(error));
  return false;
}

}  // namespace

int runViewer(const ViewerOptions& options) {
  // No output (screenshot, CSV, layout, state) replaces a trace or the topology it shows, -f or
  // not: the same rule as every verb's (fileio/input_file.h), by device and inode.
  std::vector<std::string> inputs = options.traces;
  inputs.push_back(options.topology);
  for (const std::string* output : {&options.screenshot, &options.export_csv,
                                    &options.dump_layout, &options.state_out}) {
    std::string error;
    if (fileio::outputIsAnInput(*output, inputs, &error)) {
      std::cerr << "ringside view: " << error << "\n";
      return 2;
    }
  }
  const bool headless = !options.screenshot.empty();
  std::unique_ptr<analyzer::Topology> topology;
  if (!loadTopologyOption(options, &topology)) return 1;
  if (!options.export_csv.empty() && !headless)
    return exportCsvWithoutWindow(options, topology.get());
  Backend backend;
  if (!openWindow(options, &backend)) return 1;

  ViewerSession session(options, topology.get(), &backend);
  StateWriter state(options.state_out);
  HeadlessRun headless_run(options);
  while (!backend.shouldClose()) {
    backend.beginFrame(session.frameWaitSeconds());
    session.frame();
    backend.render();
    // The UI state for scripts and tests: written when it changes (at most 10 times a second).
    if (state.enabled()) state.update(session.stateJson());
    if (headless) {
      const HeadlessRun::Step step = headless_run.afterFrame(&backend, session);
      if (step == HeadlessRun::Step::kFailed) return 1;
      if (step == HeadlessRun::Step::kDone) {
        backend.present();
        break;
      }
    }
    backend.present();
  }
  // The last state, unthrottled. A state file that cannot be written is a failure: scripts
  // read it (the reason was said on stderr).
  if (!state.flush()) return 1;
  return session.exitCode();
}

}  // namespace ringside::gui
