#include "headless.h"

#include <iostream>
#include <thread>
#include <vector>

#include "ringside/gui/csv.h"
#include "ringside/gui/png_writer.h"
#include "ringside/gui/timeline_model.h"
#include "view_tabs.h"

namespace ringside::gui {

int exportCsvWithoutWindow(const ViewerOptions& options, const analyzer::Topology* topology) {
  TimelineModel m;
  LoadOptions opt;
  opt.topology = topology;
  std::string error;
  if (!loadTimeline(options.traces.front(), opt, &m, &error) ||
      !writeTextFile(options.export_csv, viewCsv(m, options.view), &error)) {
    std::cerr << "ringside view: " << error << "\n";
    return 1;
  }
  return 0;
}

HeadlessRun::Step HeadlessRun::afterFrame(Backend* backend, const ViewerSession& session) {
  const bool settled = session.ready() || session.exitCode() != 0;
  if (settled && ++frames_after_load_ >= options_.frames) {
    return writeFiles(backend, session) ? Step::kDone : Step::kFailed;
  }
  if (std::chrono::steady_clock::now() > deadline_) {
    std::cerr << "ringside view: the trace did not load within 5 minutes\n";
    return Step::kFailed;
  }
  if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return Step::kNextFrame;
}

bool HeadlessRun::writeFiles(Backend* backend, const ViewerSession& session) const {
  std::vector<uint8_t> rgb;
  int w = 0, h = 0;
  if (!backend->readPixels(&rgb, &w, &h)) {
    std::cerr << "ringside view: cannot read the frame back from OpenGL\n";
    return false;
  }
  std::string error;
  if (!writePng(options_.screenshot, rgb, w, h, 3, &error)) {
    std::cerr << "ringside view: " << error << "\n";
    return false;
  }
  if (session.ready() && !options_.dump_layout.empty()) {
    const std::string json = session.tabs().topologyLayoutJson();
    if (json.empty()) {
      std::cerr
          << "ringside view: --dump-layout: the topology view was not drawn (use --view topology)\n";
    } else if (!writeTextFile(options_.dump_layout, json, &error)) {
      std::cerr << "ringside view: " << error << "\n";
      return false;
    }
  }
  if (session.ready() && !options_.export_csv.empty() &&
      !writeTextFile(options_.export_csv, viewCsv(*session.modelA(), options_.view), &error)) {
    std::cerr << "ringside view: " << error << "\n";
    return false;
  }
  return true;
}

}  // namespace ringside::gui
