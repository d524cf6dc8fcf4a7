// perf_viewer: how the viewer scales with trace size (run by hand; never a timed test).
//
// Writes synthetic traces of N events (collective calls plus one transfer per call, on 8
// ranks, through storage's RankWriter and merge), then for each prints the load time
// (loadTimeline: the analyzer and the viewer's own pass, as `ringside view` does: until the
// timeline is drawable, and until the analysis is in), the peak RSS so far and the
// CPU time to build one frame's draw geometry (buildFrameGeometry: level of detail for every
// lane, no OpenGL) at full zoom-out and at a mid zoom (1% of the trace).
//
//   perf_viewer [--events 100000,1000000,10000000] [--ranks 8] [--dir DIR] [--keep]
// With --ranks R (default 8) the ranks sit 8 to a host (host groups in the viewer), and the
// figures add the ranks x time overview: building its image (once per window width) and the
// frame with the host groups folded as the viewer opens a trace of many ranks.
#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ringside/gui/lod.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"

namespace fs = std::filesystem;
using ringside::gui::TimelineModel;

namespace {

double seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// `events` rows: calls and transfers in equal numbers, 8 ranks, a ring all-reduce pattern with
// sizes cycling 4 KiB .. 4 MiB; rank r arrives (r mod 8) x 2 us late.
bool writeTrace(const fs::path& dir, int64_t events, int kRanks, const fs::path& out, std::string* error) {
  const int64_t calls_per_rank = std::max<int64_t>(1, events / 2 / kRanks);
  std::vector<std::string> inputs;
  for (int r = 0; r < kRanks; ++r) {
    fs::path p = dir / ("rank-" + std::to_string(r) + ".sqlite");
    auto w = ringside::storage::RankWriter::create(p.string(), error);
    if (!w) return false;
    ringside::storage::RankInfo info;
    info.rank = r;
    info.world_size = kRanks;
    info.host = "bench" + std::to_string(r / 8);
    info.pid = 1000 + r;
    w->setRank(info);
    w->setMeta("schema_version", "1");
    w->setMeta("end_state", "clean");
    w->begin();
    for (int64_t i = 0; i < calls_per_rank; ++i) {
      const int64_t bytes = int64_t{4096} << (i % 11);
      const int64_t t = i * 50000 + (r % 8) * 2000;
      const int64_t dur = 20000 + (bytes >> 8);
      ringside::storage::CollectiveRow c;
      c.id = i + 1;
      c.rank = r;
      c.comm = "gloo/" + std::to_string(kRanks) + "/0";
      c.seq = i;
      c.op = "allreduce";
      c.library = "gloo";
      c.bytes = bytes;
      c.count = bytes / 4;
      c.dtype = "f32";
      c.reduce_op = "sum";
      c.algorithm = "ring";
      c.start_ns = t;
      c.end_ns = t + dur;
      w->addCollective(c);
      ringside::storage::TransferRow x;
      x.collective_id = i + 1;
      x.src_rank = r;
      x.dst_rank = (r + 1) % kRanks;
      x.bytes = bytes / 4;
      x.start_ns = t + 1000;
      x.end_ns = t + dur - 1000;
      x.side = "send";
      x.phase = "reduce-scatter";
      x.step = 0;
      x.chunk = 0;
      w->addTransfer(x);
      if (i % 100000 == 99999) {
        w->commit();
        w->begin();
      }
    }
    if (!w->commit() || !w->close()) {
      *error = w->error();
      return false;
    }
    inputs.push_back(p.string());
  }
  ringside::storage::MergeOptions m;
  m.inputs = inputs;
  m.output = out.string();
  m.overwrite = true;
  auto res = ringside::storage::mergeRankFiles(m);
  for (const auto& in : inputs) fs::remove(in);
  if (!res.ok) *error = res.error;
  return res.ok;
}

double threadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double frameMs(const TimelineModel& model, int64_t t0, int64_t t1, int frames, size_t* items) {
  const auto layout = ringside::gui::layoutLanes(model, std::vector<bool>{}, 0);
  const ringside::gui::TimeAxis axis{t0, t1, 120, 1600};
  const auto start = std::chrono::steady_clock::now();
  for (int f = 0; f < frames; ++f) {
    auto g = ringside::gui::buildFrameGeometry(model, layout, axis, 0, 4000);
    *items = g.itemCount();
  }
  return seconds(start) * 1e3 / frames;
}

double currentRssMb() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * 4096.0 / (1024.0 * 1024.0);
}

// The rank lanes' rows, built when first shown (TimelineModel::buildLane): how many the load
// left unbuilt, the time to build one host group's (unfolding it: the first 8 rank lanes) and
// then every lane's (unfolding them all), and the resident memory after each.
struct LazyFigures {
  size_t unbuilt = 0;
  double group_ms = 0, group_rss_mb = 0, all_ms = 0, all_rss_mb = 0;
};
LazyFigures measureLazyLanes(const TimelineModel& model) {
  LazyFigures out;
  out.unbuilt = model.unbuiltLanes();
  auto t = std::chrono::steady_clock::now();
  int built = 0;
  for (size_t i = 0; i < model.lanes.size() && built < 8; ++i) {
    if (model.lanes[i].kind != ringside::gui::LaneKind::kRank) continue;
    model.buildLane(i);
    ++built;
  }
  out.group_ms = seconds(t) * 1e3;
  out.group_rss_mb = currentRssMb();
  t = std::chrono::steady_clock::now();
  model.buildLanes();
  out.all_ms = seconds(t) * 1e3;
  out.all_rss_mb = currentRssMb();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes = {100000, 1000000, 10000000};
  fs::path dir = fs::temp_directory_path() / "ringside-viewer-bench";
  bool keep = false;
  int ranks = 8;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--events" && i + 1 < argc) {
      sizes.clear();
      std::string list = argv[++i];
      size_t p = 0;
      while (p < list.size()) {
        size_t q = list.find(',', p);
        sizes.push_back(std::atoll(list.substr(p, q - p).c_str()));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    } else if (a == "--dir" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--keep") {
      keep = true;
    } else if (a == "--ranks" && i + 1 < argc) {
      ranks = std::max(2, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: perf_viewer [--events N,N,...] [--ranks R] [--dir DIR] [--keep]\n");
      return 2;
    }
  }
  fs::create_directories(dir);
  // drawable_s: until the timeline can be drawn (LoadOptions::on_timeline); analysed_s: until
  // loadTimeline() returns with the analysis; peak_rss_mb: the process's peak so far.
  // drawable_cpu: CPU seconds of the thread that reads the calls, until drawable.
  // deep_zoom_ms: a frame at 0.01 % of the trace, where the link lanes draw their messages.
  std::printf("%12s %10s %11s %11s %11s %12s %12s %14s %12s %14s %12s\n", "events", "write_s", "drawable_s",
              "drawable_cpu", "analysed_s", "peak_rss_mb", "zoomed_out_ms", "items_out", "mid_zoom_ms", "items_mid",
              "deep_zoom_ms");
  for (int64_t n : sizes) {
    const fs::path trace = dir / ("viewer-bench-" + std::to_string(n) +
                                  (ranks == 8 ? std::string() : "-r" + std::to_string(ranks)) + ".sqlite");
    std::string error;
    auto t = std::chrono::steady_clock::now();
    if (!fs::exists(trace) && !writeTrace(dir, n, ranks, trace, &error)) {
      std::fprintf(stderr, "perf_viewer: %s\n", error.c_str());
      return 1;
    }
    const double write_s = seconds(t);
    TimelineModel model;
    t = std::chrono::steady_clock::now();
    double drawable_s = -1, drawable_cpu_s = -1;
    const double cpu0 = threadCpuSeconds();
    ringside::gui::LoadOptions options;
    TimelineModel early;  // kept until the full model is in, as `ringside view` keeps it
    options.on_timeline = [&](TimelineModel&& m) {
      drawable_s = seconds(t);
      drawable_cpu_s = threadCpuSeconds() - cpu0;  // this thread reads the calls; 2 shared cores swing the wall time
      early = std::move(m);
    };
    if (!ringside::gui::loadTimeline(trace.string(), options, &model, &error)) {
      std::fprintf(stderr, "perf_viewer: %s\n", error.c_str());
      return 1;
    }
    const double load_s = seconds(t);
    struct rusage usage {};
    getrusage(RUSAGE_SELF, &usage);
    const double rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;
    early = TimelineModel{};
    const LazyFigures lazy = measureLazyLanes(model);
    size_t items_out = 0, items_mid = 0;
    const double out_ms = frameMs(model, model.start_ns, model.end_ns, 20, &items_out);
    const int64_t span = (model.end_ns - model.start_ns) / 100, mid = model.start_ns + (model.end_ns - model.start_ns) / 2;
    const double mid_ms = frameMs(model, mid - span / 2, mid + span / 2, 20, &items_mid);
    size_t items_deep = 0;
    const int64_t deep = std::max<int64_t>(200, span / 100);
    const double deep_ms = frameMs(model, mid - deep / 2, mid + deep / 2, 20, &items_deep);
    std::printf("%12lld %10.2f %11.2f %11.2f %11.2f %12.0f %12.3f %14zu %12.3f %14zu %12.3f\n",
                static_cast<long long>(n), write_s, drawable_s, drawable_cpu_s, load_s, rss_mb, out_ms, items_out, mid_ms, items_mid, deep_ms);
    std::printf("    lanes built on demand: %zu of %zu unbuilt at load; a host group's 8 lanes built in %.3f ms "
                "(%.0f MB after); every lane in %.1f ms (%.0f MB after)\n",
                lazy.unbuilt, model.lanes.size(), lazy.group_ms, lazy.group_rss_mb, lazy.all_ms, lazy.all_rss_mb);
    if (ranks != 8) {
      // The overview's image at 1,600 px, and a frame as the viewer opens it (host groups folded).
      auto o0 = std::chrono::steady_clock::now();
      const auto image = ringside::gui::overviewRgba(model.overview, 1600, true);
      const double image_ms = seconds(o0) * 1e3;
      std::vector<ringside::gui::LaneFlags> flags(model.lanes.size());
      for (size_t i = 0; i < model.lanes.size(); ++i) flags[i].collapsed = model.lanes[i].kind == ringside::gui::LaneKind::kHost;
      const auto layout = ringside::gui::layoutLanes(model, flags, 0);
      const ringside::gui::TimeAxis axis{model.start_ns, model.end_ns, 120, 1600};
      o0 = std::chrono::steady_clock::now();
      size_t items = 0;
      for (int f = 0; f < 20; ++f) items = ringside::gui::buildFrameGeometry(model, layout, axis, 0, 1000).itemCount();
      std::printf("    ranks %d: overview %d rows, image %.2f ms (%zu bytes, once per width); folded frame %.3f ms "
                  "(%zu items, %zu lanes)\n",
                  ranks, model.overview.rows, image_ms, image.size(), seconds(o0) * 1e3 / 20, items, model.lanes.size());
    }
    std::fflush(stdout);
    if (!keep) fs::remove(trace);
  }
  return 0;
}
