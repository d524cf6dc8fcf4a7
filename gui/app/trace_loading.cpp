#include "trace_loading.h"

namespace ringside::gui {

std::unique_ptr<TimelineModel> Loader::takeEarly() {
  std::lock_guard<std::mutex> lock(early_mutex);
  return std::move(early);
}

void Loader::start(const std::string& path) {
  thread = std::thread([this, path] {
    auto m = std::make_unique<TimelineModel>();
    LoadOptions opt;
    opt.topology = topology;
    opt.progress = [this](double f) { progress = f; };
    opt.on_timeline = [this](TimelineModel&& timeline) {
      auto e = std::make_unique<TimelineModel>(std::move(timeline));
      std::lock_guard<std::mutex> lock(early_mutex);
      early = std::move(e);
    };
    ok = loadTimeline(path, opt, m.get(), &error);
    if (ok) model = std::move(m);
    done = true;
  });
}

Loader::~Loader() {
  if (thread.joinable()) thread.join();
}

bool TraceSlot::poll() {
  if (!model && !early) early = loader.takeEarly();
  if (model || failed || !loader.done) return false;
  loader.thread.join();
  early.reset();
  if (loader.ok) {
    model = std::move(loader.model);
    return false;
  }
  failed = true;  // a file the check refused: the error replaces its early timeline
  (void)loader.takeEarly();
  error = loader.error;
  return true;
}

}  // namespace ringside::gui
