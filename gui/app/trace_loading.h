// gui/trace_loading.h — loading the traces off the UI thread. Each trace loads on its own
// thread; the UI thread polls once a frame and takes the model whole, and meanwhile the
// timeline of the calls alone (LoadOptions::on_timeline), drawn while the analysis runs.
// Threads: start() and poll() on the UI thread; the loader thread writes only the atomics,
// `early` (under its mutex) and, before `done`, ok/error/model.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ringside/analyzer/topology.h"
#include "ringside/gui/timeline_model.h"

namespace ringside::gui {

struct Loader {
  std::atomic<double> progress{0};
  std::atomic<bool> done{false};
  bool ok = false;
  std::string error;
  std::unique_ptr<TimelineModel> model;
  std::mutex early_mutex;
  std::unique_ptr<TimelineModel> early;  // guarded by early_mutex; the UI thread takes it
  std::thread thread;
  const analyzer::Topology* topology = nullptr;

  std::unique_ptr<TimelineModel> takeEarly();
  void start(const std::string& path);
  ~Loader();
};

// One trace: its loader, then its model or its error.
struct TraceSlot {
  std::string path;
  Loader loader;
  std::unique_ptr<TimelineModel> model;
  std::unique_ptr<TimelineModel>
      early;  // shown until `model` is in (TimelineModel::analysed false)
  std::string error;
  bool failed = false;

  // Takes what the loader has finished. Returns true when the trace has just failed (`error`
  // says why); the caller reports it.
  bool poll();
};

}  // namespace ringside::gui
