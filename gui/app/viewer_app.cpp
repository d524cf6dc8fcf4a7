#include "viewer_app.h"

#include <imgui.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include "backend.h"
#include "ringside/analyzer/topology.h"
#include "ringside/gui/csv.h"
#include "ringside/gui/png_writer.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"
#include "timeline_view.h"
#include "view_tabs.h"

namespace ringside::gui {
namespace {

bool parseInt(const std::string& s, int lo, int hi, int* out) {
  int v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < lo || v > hi) return false;
  *out = v;
  return true;
}

// "1.5ms", "200us", "3s", "42" (ns) -> ns.
bool parseTime(const std::string& s, double* ns) {
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return false;
  double v = 0;
  try {
    v = std::stod(s.substr(0, i));
  } catch (...) {
    return false;
  }
  std::string unit = s.substr(i);
  double scale = unit == "" || unit == "ns" ? 1 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : unit == "s" ? 1e9 : -1;
  if (scale < 0) return false;
  *ns = v * scale;
  return true;
}

// The trace loads on its own thread; the UI thread polls and takes the model whole.
struct Loader {
  std::atomic<double> progress{0};
  std::atomic<bool> done{false};
  bool ok = false;
  std::string error;
  std::unique_ptr<TimelineModel> model;
  std::thread thread;
  const analyzer::Topology* topology = nullptr;

  void start(const std::string& path) {
    thread = std::thread([this, path] {
      auto m = std::make_unique<TimelineModel>();
      LoadOptions opt;
      opt.topology = topology;
      opt.progress = [this](double f) { progress = f; };
      ok = loadTimeline(path, opt, m.get(), &error);
      if (ok) model = std::move(m);
      done = true;
    });
  }
  ~Loader() {
    if (thread.joinable()) thread.join();
  }
};

void drawKeyHelp() {
  ImGui::TextUnformatted(
      "mouse wheel   zoom at the cursor\n"
      "drag          pan\n"
      "W / S, Up/Dn  zoom in / out\n"
      "A / D, Lt/Rt  pan left / right\n"
      "F             fit the whole trace\n"
      "U / R         undo / redo the view range\n"
      "T             dark / light theme\n"
      "click         select a collective (highlighted on every rank)\n"
      "click a name  fold / unfold a lane\n"
      "?             this help\n"
      "Esc           close help / clear selection");
}

}  // namespace

std::string viewerHelp() {
  return "Usage: ringside view [options] TRACE.sqlite [TRACE_B.sqlite]\n"
         "\n"
         "Opens a window with the trace's timeline: a lane per rank (collectives and their phases)\n"
         "and per directed link (bytes/s). Press ? in the window for the keys.\n"
         "\n"
         "Options:\n"
         "  --screenshot FILE.png  render --frames frames off screen, write FILE.png, exit\n"
         "  --frames N             frames before the screenshot (default 3)\n"
         "  --size WxH             window size (default 1280x800)\n"
         "  --view NAME            timeline, topology, matrix or stats (compare: not yet)\n"
         "  --topology FILE        machines and links (docs/topology.md): layout and idle links\n"
         "  --export-csv FILE      write the --view's table (stats, or matrix) as CSV; without\n"
         "                         --screenshot no window is opened\n"
         "  --dump-layout FILE     with --screenshot: the topology view's geometry as JSON\n"
         "  --scrub POS            topology view: scrubber on at POS (0..1) over the selection\n"
         "  --select N             select collective N (0 = the first to start)\n"
         "  --range START:END      show this time range from the trace start (e.g. 1ms:2.5ms)\n"
         "  --light                light theme\n"
         "  -h, --help             this help\n";
}

int parseViewerArgs(const std::vector<std::string>& args, ViewerOptions* out, std::string* error) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    bool has_inline = false;
    if (a.starts_with("--") && a.find('=') != std::string::npos) {
      value = a.substr(a.find('=') + 1);
      a = a.substr(0, a.find('='));
      has_inline = true;
    }
    auto need = [&](std::string* v) {
      if (has_inline) {
        *v = value;
        return true;
      }
      if (i + 1 >= args.size()) {
        *error = a + " needs a value";
        return false;
      }
      *v = args[++i];
      return true;
    };
    if (a == "-h" || a == "--help") {
      *error = viewerHelp();
      return -1;
    } else if (a == "--screenshot") {
      if (!need(&out->screenshot)) return 2;
    } else if (a == "--frames") {
      if (!need(&value) || !parseInt(value, 1, 100000, &out->frames)) {
        *error = "--frames: expected a count >= 1";
        return 2;
      }
    } else if (a == "--size") {
      if (!need(&value)) return 2;
      size_t x = value.find('x');
      if (x == std::string::npos || !parseInt(value.substr(0, x), 64, 16384, &out->width) ||
          !parseInt(value.substr(x + 1), 64, 16384, &out->height)) {
        *error = "--size: expected WxH, e.g. 1280x800";
        return 2;
      }
    } else if (a == "--view") {
      if (!need(&out->view)) return 2;
      if (out->view != "timeline" && out->view != "topology" && out->view != "matrix" &&
          out->view != "stats" && out->view != "compare") {
        *error = "--view: expected timeline, topology, matrix, stats or compare";
        return 2;
      }
    } else if (a == "--select") {
      if (!need(&value) || !parseInt(value, 0, 1 << 30, &out->select)) {
        *error = "--select: expected a collective number >= 0";
        return 2;
      }
    } else if (a == "--range") {
      if (!need(&out->range)) return 2;
      double t0 = 0, t1 = 0;
      size_t colon = out->range.find(':');
      if (colon == std::string::npos || !parseTime(out->range.substr(0, colon), &t0) ||
          !parseTime(out->range.substr(colon + 1), &t1) || t1 <= t0) {
        *error = "--range: expected START:END with END > START, e.g. 1ms:2.5ms";
        return 2;
      }
      out->range_start_ns = t0;
      out->range_end_ns = t1;
    } else if (a == "--topology") {
      if (!need(&out->topology)) return 2;
    } else if (a == "--export-csv") {
      if (!need(&out->export_csv)) return 2;
    } else if (a == "--dump-layout") {
      if (!need(&out->dump_layout)) return 2;
    } else if (a == "--scrub") {
      if (!need(&value)) return 2;
      char* end = nullptr;
      out->scrub = std::strtod(value.c_str(), &end);
      if (value.empty() || *end != '\0' || !(out->scrub >= 0 && out->scrub <= 1)) {
        *error = "--scrub: expected a position from 0 to 1";
        return 2;
      }
    } else if (a == "--light") {
      out->light = true;
    } else if (a.starts_with("-") && a != "-") {
      *error = "unknown option '" + a + "'";
      return 2;
    } else {
      out->traces.push_back(a);
    }
  }
  if (out->traces.empty() || out->traces.size() > 2) {
    *error = "expected TRACE.sqlite, or two traces to compare";
    return 2;
  }
  return 0;
}

int runViewer(const ViewerOptions& options) {
  const bool headless = !options.screenshot.empty();
  std::unique_ptr<analyzer::Topology> topology;
  if (!options.topology.empty()) {
    topology = std::make_unique<analyzer::Topology>();
    std::string topo_error;
    if (!analyzer::loadTopology(options.topology, topology.get(), &topo_error)) {
      std::cerr << "ringside view: " << topo_error << "\n";
      return 1;
    }
  }
  if (!options.export_csv.empty() && !headless) {  // no window needed
    TimelineModel m;
    LoadOptions opt;
    opt.topology = topology.get();
    std::string csv_error;
    if (!loadTimeline(options.traces.front(), opt, &m, &csv_error) ||
        !writeTextFile(options.export_csv, viewCsv(m, options.view), &csv_error)) {
      std::cerr << "ringside view: " << csv_error << "\n";
      return 1;
    }
    return 0;
  }
  BackendOptions bopt;
  bopt.title = "ringside - " + options.traces.front();
  bopt.width = options.width;
  bopt.height = options.height;
  bopt.visible = !headless;
  bopt.dark = !options.light;
  Backend backend;
  std::string error;
  if (!backend.init(bopt, &error)) {
    std::cerr << "ringside view: " << error << "\n";
    return 1;
  }

  Loader loader;
  loader.topology = topology.get();
  loader.start(options.traces.front());
  std::unique_ptr<TimelineModel> model;
  ViewState view;
  TimelineView timeline;
  ViewTabs tabs;
  bool show_help = false;
  int frames_after_load = 0;
  int exit_code = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);

  while (!backend.shouldClose()) {
    backend.beginFrame(headless || !model || tabs.animating() ? 0 : 0.25);
    if (!model && loader.done) {
      loader.thread.join();
      if (loader.ok) {
        model = std::move(loader.model);
        view.setLimits(model->start_ns, model->end_ns);
        timeline.reset(*model);
        tabs.reset(*model, topology.get(), options.view, options.scrub);
        if (!options.range.empty()) {
          view.setRange({model->start_ns + static_cast<int64_t>(options.range_start_ns),
                         model->start_ns + static_cast<int64_t>(options.range_end_ns)});
          view.commit();
        }
        if (options.select >= 0 &&
            options.select < static_cast<int>(model->analysis.collectives.size())) {
          timeline.select(options.select);
        }
      } else {
        std::cerr << "ringside view: " << loader.error << "\n";
        exit_code = 1;
      }
      loader.done = false;  // handled
    }

    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("ringside", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
    if (!model && exit_code == 0) {
      ImGui::Text("Loading %s ...", options.traces.front().c_str());
      ImGui::ProgressBar(static_cast<float>(loader.progress.load()), ImVec2(-1, 0));
    } else if (!model) {
      ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "Cannot open %s", options.traces.front().c_str());
      ImGui::TextWrapped("%s", loader.error.c_str());
    } else {
      // Keys: characters for letters (keyboard-layout independent), named keys for arrows.
      ImGuiIO& io = ImGui::GetIO();
      if (!io.WantTextInput) {
        for (ImWchar c : io.InputQueueCharacters) {
          switch (c) {
            case 'w': view.zoomAt(0.5, 0.8); view.commit(); break;
            case 's': view.zoomAt(0.5, 1.25); view.commit(); break;
            case 'a': view.panPixels(100, 1000); view.commit(); break;
            case 'd': view.panPixels(-100, 1000); view.commit(); break;
            case 'f': case 'F': view.fit(); view.commit(); break;
            case 'u': view.undo(); break;
            case 'r': view.redo(); break;
            case 't': backend.setDark(!backend.dark()); break;
            case '?': show_help = !show_help; break;
            default: break;
          }
        }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_UpArrow))) { view.zoomAt(0.5, 0.8); view.commit(); }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_DownArrow))) { view.zoomAt(0.5, 1.25); view.commit(); }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) { view.panPixels(100, 1000); view.commit(); }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) { view.panPixels(-100, 1000); view.commit(); }
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
          if (show_help) show_help = false; else timeline.select(-1);
        }
      }
      const auto& a = model->analysis;
      ImGui::Text("%s  |  %d ranks, %zu collectives, %zu links  |  view %s .. %s  |  ? for keys",
                  model->path.c_str(), a.world_size, a.collectives.size(), a.links.size(),
                  formatDuration(static_cast<double>(view.range().t0 - model->start_ns)).c_str(),
                  formatDuration(static_cast<double>(view.range().t1 - model->start_ns)).c_str());
      if (options.view == "compare") {
        ImGui::TextDisabled("The %s view is not there yet; showing the timeline.", options.view.c_str());
      }
      if (timeline.selected() >= 0) {
        const auto& c = a.collectives[static_cast<size_t>(timeline.selected())];
        ImGui::Text("selected: %s %s seq %lld, %s on %d ranks, duration %s, skew %s (straggler rank %d), busbw %.3g GB/s",
                    c.op.c_str(), c.comm.c_str(), static_cast<long long>(c.seq),
                    formatBytes(static_cast<double>(c.bytes)).c_str(), c.ranks,
                    formatDuration(static_cast<double>(c.duration_ns)).c_str(),
                    formatDuration(static_cast<double>(c.arrival_skew_ns)).c_str(), c.straggler_rank,
                    c.busbw_gbps);
      }
      tabs.draw(*model, &view, &timeline);
      if (show_help) {
        ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.5f),
                                ImGuiCond_Always, ImVec2(0.5f, 0.5f));
        ImGui::Begin("Keys", &show_help, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings);
        drawKeyHelp();
        ImGui::End();
      }
    }
    ImGui::End();
    backend.render();

    if (headless) {
      const bool settled = model || exit_code != 0;
      if (settled && ++frames_after_load >= options.frames) {
        std::vector<uint8_t> rgb;
        int w = 0, h = 0;
        if (!backend.readPixels(&rgb, &w, &h)) {
          std::cerr << "ringside view: cannot read the frame back from OpenGL\n";
          return 1;
        }
        if (!writePng(options.screenshot, rgb, w, h, 3, &error)) {
          std::cerr << "ringside view: " << error << "\n";
          return 1;
        }
        if (model && !options.dump_layout.empty()) {
          const std::string json = tabs.topologyLayoutJson();
          if (json.empty()) {
            std::cerr << "ringside view: --dump-layout: the topology view was not drawn (use --view topology)\n";
          } else if (!writeTextFile(options.dump_layout, json, &error)) {
            std::cerr << "ringside view: " << error << "\n";
            return 1;
          }
        }
        if (model && !options.export_csv.empty() &&
            !writeTextFile(options.export_csv, viewCsv(*model, options.view), &error)) {
          std::cerr << "ringside view: " << error << "\n";
          return 1;
        }
        backend.present();
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        std::cerr << "ringside view: the trace did not load within 5 minutes\n";
        return 1;
      }
      if (!settled) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    backend.present();
  }
  return exit_code;
}

}  // namespace ringside::gui
