#include "viewer_app.h"

#include <imgui.h>

#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <memory>
#include <mutex>
#include <thread>

#include "backend.h"
#include "compare_view.h"
#include "inspector_view.h"
#include "ringside/analyzer/topology.h"
#include "ringside/format/units.h"
#include "ringside/gui/csv.h"
#include "ringside/gui/inspect.h"
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
  // The timeline from the calls alone (LoadOptions::on_timeline), while the analysis runs.
  std::mutex early_mutex;
  std::unique_ptr<TimelineModel> early;  // guarded by early_mutex; the UI thread takes it
  std::thread thread;
  const analyzer::Topology* topology = nullptr;

  std::unique_ptr<TimelineModel> takeEarly() {
    std::lock_guard<std::mutex> lock(early_mutex);
    return std::move(early);
  }
  void start(const std::string& path) {
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
  ~Loader() {
    if (thread.joinable()) thread.join();
  }
};

void drawKeyHelp() {
  ImGui::TextUnformatted(
      "mouse wheel        zoom at the cursor\n"
      "drag               pan\n"
      "right-drag         zoom to the dragged range\n"
      "shift-drag         select a range: counts, sums, min/mean/max/p50/p99\n"
      "W / S, Up / Down   zoom in / out\n"
      "A / D, Left/Right  pan left / right\n"
      "F                  fit the whole trace\n"
      "Ctrl+Z, U, Bksp    undo the view range\n"
      "Ctrl+Y, R          redo\n"
      "Ctrl+F, /          search (op:allreduce size>1M rank:2 straggler:3 failed ...)\n"
      "Enter, F3          next match; Shift+F3 previous\n"
      "T                  dark / light theme\n"
      "click              select a collective (on every rank; details at the right)\n"
      "click a lane name  fold / unfold it; right-click: hide or pin it\n"
      "click a finding    select and zoom to what it names\n"
      "?                  this help\n"
      "Esc                close help / clear selection and range\n"
      "Ctrl+Q             quit");
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string q(const std::string& s) { return "\"" + jsonEscape(s) + "\""; }

bool writeFileAtomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!f) return false;
    f << text;
    if (!f) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// One trace: its loader, then its model or its error.
struct TraceSlot {
  std::string path;
  Loader loader;
  std::unique_ptr<TimelineModel> model;
  std::unique_ptr<TimelineModel> early;  // shown until `model` is in (TimelineModel::analysed false)
  std::string error;
  bool failed = false;
};

}  // namespace

std::string viewerHelp() {
  return "Usage: ringside view [options] TRACE.sqlite [TRACE_B.sqlite]\n"
         "\n"
         "Opens a window with the trace's timeline: a lane per rank (collectives and their phases)\n"
         "and per directed link (bytes/s). With two traces: A/B compare (both timelines on one\n"
         "zoom, the diff table, findings). Press ? in the window for the keys.\n"
         "\n"
         "Options:\n"
         "  --screenshot FILE.png  render --frames frames off screen, write FILE.png, exit\n"
         "  --frames N             frames before the screenshot (default 3)\n"
         "  --size WxH             window size (default 1280x800)\n"
         "  --view NAME            timeline, topology, matrix, stats, or compare (the default with\n"
         "                         two traces)\n"
         "  --topology FILE        machines and links (docs/topology.md): layout and idle links\n"
         "  --export-csv FILE      write the --view's table (stats, or matrix) as CSV; without\n"
         "                         --screenshot no window is opened\n"
         "  --dump-layout FILE     with --screenshot: the topology view's geometry as JSON\n"
         "  --scrub POS            topology view: scrubber on at POS (0..1) over the selection\n"
         "  --select N             select collective N (0 = the first to start) and show its details\n"
         "  --range START:END      show and select this time range from the trace start (e.g. 1ms:2.5ms)\n"
         "  --search QUERY         search collectives (op:allreduce size>1M rank:2 ...), select the first\n"
         "  --state-out FILE.json  write the view range, selection, hover, ... (on change and at exit)\n"
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
      out->view_given = true;
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
    } else if (a == "--state-out") {
      if (!need(&out->state_out)) return 2;
    } else if (a == "--search") {
      if (!need(&out->search)) return 2;
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
  if (!out->view_given && out->traces.size() == 2) out->view = "compare";
  if (out->view == "compare" && out->traces.size() != 2) {
    *error = "--view compare needs two traces: A.sqlite B.sqlite";
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
  bopt.title = "ringside - " + options.traces.front() + (options.traces.size() > 1 ? " vs " + options.traces[1] : "");
  bopt.width = options.width;
  bopt.height = options.height;
  bopt.visible = !headless;
  bopt.dark = !options.light;
  Backend backend;
  std::string error;
  if (!backend.init(bopt, &error)) {
    std::cerr << "ringside view: " << error << "\n";
    if (!options.state_out.empty()) {
      writeFileAtomically(options.state_out, "{\"loaded\": false, \"errors\": [" + q(error) + "]}\n");
    }
    return 1;
  }

  std::vector<std::unique_ptr<TraceSlot>> slots;
  for (const std::string& path : options.traces) {
    slots.push_back(std::make_unique<TraceSlot>());
    slots.back()->path = path;
    slots.back()->loader.topology = topology.get();
    slots.back()->loader.start(path);
  }
  const bool compare_mode = options.view == "compare" && slots.size() == 2;
  ViewState view;
  TimelineView timeline;
  CompareView compare;
  ViewTabs tabs;  // Timeline | Topology | Traffic matrix | Statistics (one trace, or --view other than compare)
  SearchCursor search;
  std::string search_error;
  char search_text[256] = {};
  std::snprintf(search_text, sizeof search_text, "%s", options.search.c_str());
  bool focus_search = false;
  bool show_help = false;
  bool ready = false;  // every trace loaded and the views set up
  bool early_shown = false;  // the timeline of the calls was drawn before the analysis was in
  TimeRange early_fit;       // the range it was first drawn at
  int frames_after_load = 0;
  int exit_code = 0;
  std::string last_state, pending_state;
  auto last_state_write = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);

  auto modelA = [&]() -> TimelineModel& { return *slots[0]->model; };
  auto activeTimeline = [&]() -> TimelineView& { return compare_mode ? compare.timelineA() : timeline; };
  // Centre the view on a collective; zoom in only as far as needed to show it whole.
  auto showCollective = [&](int c) {
    if (c < 0) return;
    const auto& ci = modelA().analysis.collectives[static_cast<size_t>(c)];
    TimeRange r = view.range();
    int64_t span = std::max(r.t1 - r.t0, 3 * (ci.last_end_ns - ci.first_start_ns));
    int64_t mid = ci.first_start_ns + (ci.last_end_ns - ci.first_start_ns) / 2;
    view.setRange({mid - span / 2, mid - span / 2 + span});
    view.commit();
  };
  auto selectCollective = [&](int c) {
    if (compare_mode) {
      compare.selectA(c);
    } else {
      timeline.select(c);
    }
  };
  auto runSearch = [&] {
    search_error.clear();
    search.set(searchCollectives(modelA(), search_text, &search_error));
  };
  auto stepSearch = [&](bool forward) {
    if (search.matches().empty()) runSearch();
    int c = search.position() < 0 ? search.startAt(modelA(), view.range().t0) : (forward ? search.next() : search.prev());
    selectCollective(c);
    showCollective(c);
  };

  while (!backend.shouldClose()) {
    backend.beginFrame(headless || !ready || tabs.animating() ? 0 : 0.25);
    const std::vector<KeyPress> key_presses = backend.takeKeyPresses();
    for (auto& slot : slots) {
      if (!slot->model && !slot->early) slot->early = slot->loader.takeEarly();
      if (!slot->model && !slot->failed && slot->loader.done) {
        slot->loader.thread.join();
        if (slot->loader.ok) {
          slot->model = std::move(slot->loader.model);
          slot->early.reset();
        } else {
          slot->failed = true;
          slot->early.reset();  // a file the check refused: the error replaces its early timeline
          (void)slot->loader.takeEarly();
          slot->error = slot->loader.error;
          std::cerr << "ringside view: " << slot->error << "\n";
          exit_code = 1;
        }
      }
    }
    const bool all_loaded = std::all_of(slots.begin(), slots.end(), [](const auto& s) { return s->model != nullptr; });
    if (all_loaded && !ready) {
      ready = true;
      TimelineModel& a = modelA();
      int64_t end = a.end_ns;
      if (compare_mode) end = std::max(end, a.start_ns + (slots[1]->model->end_ns - slots[1]->model->start_ns));
      const TimeRange early_range = view.range();
      view.setLimits(a.start_ns, end);
      if (early_shown && (early_range.t0 != early_fit.t0 || early_range.t1 != early_fit.t1)) {
        // The user zoomed or panned while the analysis ran: stay there.
        view.setRange(early_range);
        view.commit();
      }
      timeline.reset(a);
      if (compare_mode) compare.reset(a, *slots[1]->model);
      tabs.reset(a, topology.get(), options.view, options.scrub);
      if (!options.range.empty()) {
        TimeRange r{a.start_ns + static_cast<int64_t>(options.range_start_ns),
                    a.start_ns + static_cast<int64_t>(options.range_end_ns)};
        view.setRange(r);
        view.commit();
        activeTimeline().setRangeSelection(r);
      }
      if (options.select >= 0 && options.select < static_cast<int>(a.analysis.collectives.size())) {
        selectCollective(options.select);
      } else if (options.select >= 0) {
        std::cerr << "ringside view: --select " << options.select << ": the trace has "
                  << a.analysis.collectives.size() << " collectives (0 .. "
                  << static_cast<long>(a.analysis.collectives.size()) - 1 << "); nothing selected\n";
      }
      if (!options.search.empty()) {
        runSearch();
        if (options.select < 0) stepSearch(true);
      }
    }

    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(vp->WorkPos);
    ImGui::SetNextWindowSize(vp->WorkSize);
    ImGui::Begin("ringside", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
    if (exit_code != 0) {
      for (const auto& slot : slots) {
        if (!slot->failed) continue;
        ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "Cannot open %s", slot->path.c_str());
        ImGui::TextWrapped("%s", slot->error.c_str());
      }
    } else if (!ready && !compare_mode && slots.size() == 1 && slots[0]->early) {
      // The calls are in: draw their timeline while the analysis runs (no selection, findings,
      // phases, link lanes, topology or statistics until then).
      TimelineModel& early = *slots[0]->early;
      if (!early_shown) {
        early_shown = true;
        view.setLimits(early.start_ns, early.end_ns);
        early_fit = view.range();
        timeline.reset(early);
      }
      ImGui::Text("%s  |  timeline of the calls; findings, details, phases, links, topology and statistics: "
                  "analysing...",
                  early.path.c_str());
      ImGui::ProgressBar(static_cast<float>(slots[0]->loader.progress.load()), ImVec2(-1, 0));
      TimelineDrawOptions topt;
      topt.dark = backend.dark();
      timeline.draw(early, &view, topt);
    } else if (!ready) {
      for (const auto& slot : slots) {
        ImGui::Text("Loading %s ...", slot->path.c_str());
        ImGui::ProgressBar(static_cast<float>(slot->loader.progress.load()), ImVec2(-1, 0));
      }
    } else {
      // Keys: characters for letters (keyboard-layout independent), named keys for arrows.
      ImGuiIO& io = ImGui::GetIO();
      TimelineView& active = activeTimeline();
      if (!io.WantTextInput) {
        for (ImWchar c : io.InputQueueCharacters) {
          if (io.KeyCtrl) continue;
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
            case '/': focus_search = true; break;
            default: break;
          }
        }
      }
      for (const KeyPress& k : key_presses) {
        if (k.key == KeyPress::kF3) stepSearch(!k.shift);
        if (k.key == 'Q' && k.ctrl) backend.requestClose();
        if (k.key == 'F' && k.ctrl) focus_search = true;
        if (io.WantTextInput) continue;  // typing in the search box
        switch (k.key) {
          case KeyPress::kUp: view.zoomAt(0.5, 0.8); view.commit(); break;
          case KeyPress::kDown: view.zoomAt(0.5, 1.25); view.commit(); break;
          case KeyPress::kLeft: view.panPixels(100, 1000); view.commit(); break;
          case KeyPress::kRight: view.panPixels(-100, 1000); view.commit(); break;
          case KeyPress::kBackspace: view.undo(); break;
          case 'Z': if (k.ctrl) view.undo(); break;
          case 'Y': if (k.ctrl) view.redo(); break;
          case KeyPress::kEnter: if (search_text[0] != '\0') stepSearch(!k.shift); break;
          case KeyPress::kEscape:
            if (show_help) {
              show_help = false;
            } else {
              selectCollective(-1);
              active.setRangeSelection(std::nullopt);
            }
            break;
          default: break;
        }
      }

      // Toolbar: what is open, the search, the view range.
      const auto& a = modelA().analysis;
      ImGui::Text("%s  |  %d ranks, %zu collectives, %zu links  |  view %s .. %s  |  ? for keys",
                  modelA().path.c_str(), a.world_size, a.collectives.size(), a.links.size(),
                  format::durationSignificant(static_cast<double>(view.range().t0 - modelA().start_ns)).c_str(),
                  format::durationSignificant(static_cast<double>(view.range().t1 - modelA().start_ns)).c_str());
      ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
      if (focus_search) {
        ImGui::SetKeyboardFocusHere();
        focus_search = false;
      }
      if (ImGui::InputTextWithHint("##search", "search: op:allreduce size>1M rank:2", search_text, sizeof search_text,
                                   ImGuiInputTextFlags_EnterReturnsTrue)) {
        runSearch();
        stepSearch(true);
        ImGui::SetKeyboardFocusHere(-1);  // stay in the box: Enter again steps on
      } else if (ImGui::IsItemEdited()) {
        runSearch();
      }
      ImGui::SameLine();
      if (ImGui::ArrowButton("prev", ImGuiDir_Left)) stepSearch(false);
      ImGui::SameLine();
      if (ImGui::ArrowButton("next", ImGuiDir_Right)) stepSearch(true);
      ImGui::SameLine();
      if (!search_error.empty()) {
        ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", search_error.c_str());
      } else if (search_text[0] != '\0') {
        ImGui::Text("%d / %zu", search.position() + 1, search.matches().size());
      }
      ImGui::SameLine();
      if (ImGui::Button("Fit")) { view.fit(); view.commit(); }
      ImGui::SameLine();
      if (ImGui::Button("Undo")) view.undo();
      ImGui::SameLine();
      if (ImGui::Button("Redo")) view.redo();
      ImGui::SameLine();
      if (ImGui::Button("Lanes")) ImGui::OpenPopup("lanes");
      if (ImGui::BeginPopup("lanes")) {
        auto& flags = active.laneFlags();
        for (size_t i = 0; i < flags.size() && i < modelA().lanes.size(); ++i) {
          bool shown = !flags[i].hidden;
          if (ImGui::Checkbox(modelA().lanes[i].name.c_str(), &shown)) flags[i].hidden = !shown;
          ImGui::SameLine();
          ImGui::PushID(static_cast<int>(i));
          ImGui::Checkbox("pin", &flags[i].pinned);
          ImGui::PopID();
        }
        if (ImGui::Button("show all")) {
          for (auto& f : flags) f.hidden = false;
        }
        ImGui::EndPopup();
      }
      ImGui::SameLine();
      if (ImGui::Button(backend.dark() ? "Light" : "Dark")) backend.setDark(!backend.dark());
      ImGui::SameLine();
      if (ImGui::Button("?")) show_help = !show_help;

      // The views.
      if (compare_mode) {
        compare.draw(modelA(), *slots[1]->model, &view, backend.dark(), &search.matches());
      } else {
        // Timeline (with the details at the right), Topology (the graph above the same), Traffic matrix,
        // Statistics.
        auto drawTimelineArea = [&] {
          const float side_w = std::min(ImGui::GetFontSize() * 34, ImGui::GetContentRegionAvail().x * 0.4f);
          ImGui::BeginChild("timeline area", ImVec2(ImGui::GetContentRegionAvail().x - side_w, 0));
          TimelineDrawOptions topt;
          topt.dark = backend.dark();
          topt.marked = &search.matches();
          timeline.draw(modelA(), &view, topt);
          ImGui::EndChild();
          ImGui::SameLine();
          ImGui::BeginChild("side", ImVec2(0, 0), true);
          InspectAction action;
          if (ImGui::CollapsingHeader("Selection", ImGuiTreeNodeFlags_DefaultOpen)) {
            drawCollectiveDetails(modelA(), timeline.selected(), &action);
          }
          if (ImGui::CollapsingHeader("Range", ImGuiTreeNodeFlags_DefaultOpen)) {
            if (timeline.rangeSelection()) {
              drawRangeStats(modelA(), rangeStats(modelA(), timeline.rangeSelection()->t0, timeline.rangeSelection()->t1));
            } else {
              ImGui::TextDisabled("Shift-drag over the timeline to select a range.");
            }
          }
          if (ImGui::CollapsingHeader("Findings", ImGuiTreeNodeFlags_DefaultOpen)) {
            drawFindings(modelA(), "findings", &action);
          }
          ImGui::EndChild();
          if (action.select >= 0) timeline.select(action.select);
          if (action.rank >= 0) timeline.scrollToLane(timeline.laneOfRank(modelA(), action.rank));
          if (action.src >= 0) timeline.scrollToLane(timeline.laneOfLink(modelA(), action.src, action.dst));
          if (action.zoom) {
            view.setRange(*action.zoom);
            view.commit();
          }
        };
        tabs.draw(modelA(), &view, timeline.selected(), timeline.rangeSelection(), drawTimelineArea);
      }
      view.endFrame();  // the link hovered in this frame is highlighted in the next
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

    // The UI state for scripts and tests: written when it changes (at most 10 times a second).
    if (!options.state_out.empty()) {
      std::ostringstream js;
      js << "{\n  \"loaded\": " << (ready ? "true" : "false") << ",\n  \"errors\": [";
      bool first = true;
      for (const auto& slot : slots) {
        if (!slot->failed) continue;
        js << (first ? "" : ", ") << q(slot->path + ": " + slot->error);
        first = false;
      }
      js << "],\n  \"view\": " << q(compare_mode ? std::string("compare") : tabs.current());
      if (ready) {
        const TimelineModel& m = modelA();
        TimelineView& tv = activeTimeline();
        js << ",\n  \"range_ns\": [" << view.range().t0 - m.start_ns << ", " << view.range().t1 - m.start_ns << "]";
        js << ",\n  \"trace_ns\": [0, " << m.end_ns - m.start_ns << "]";
        js << ",\n  \"selected\": " << tv.selected();
        if (tv.selected() >= 0) {
          const auto& c = m.analysis.collectives[static_cast<size_t>(tv.selected())];
          js << ",\n  \"selected_op\": " << q(c.op) << ", \"selected_ranks\": "
             << collectiveDetails(m, tv.selected()).ranks.size();
        }
        if (tv.rangeSelection()) {
          RangeStats st = rangeStats(m, tv.rangeSelection()->t0, tv.rangeSelection()->t1);
          js << ",\n  \"range_selection_ns\": [" << tv.rangeSelection()->t0 - m.start_ns << ", "
             << tv.rangeSelection()->t1 - m.start_ns << "], \"range_stats\": {\"count\": " << st.all.count
             << ", \"sum_ns\": " << st.all.sum_ns << ", \"p50_ns\": " << st.all.p50_ns << ", \"p99_ns\": "
             << st.all.p99_ns << ", \"max_ns\": " << st.all.max_ns << "}";
        }
        js << ",\n  \"hovered\": {\"lane\": " << q(tv.hover().lane) << ", \"collective\": " << tv.hover().collective
           << "}";
        js << ",\n  \"search\": {\"query\": " << q(search_text) << ", \"matches\": " << search.matches().size()
           << ", \"position\": " << search.position() << "}";
        js << ",\n  \"lanes\": [";
        for (size_t i = 0; i < m.lanes.size(); ++i) {
          const LaneFlags f = i < tv.laneFlags().size() ? tv.laneFlags()[i] : LaneFlags{};
          js << (i ? ", " : "") << "{\"name\": " << q(m.lanes[i].name) << ", \"hidden\": " << (f.hidden ? "true" : "false")
             << ", \"pinned\": " << (f.pinned ? "true" : "false") << "}";
        }
        js << "]";
        js << ",\n  \"targets\": [";
        for (size_t i = 0; i < tv.targets().size() && i < 16; ++i) {
          const TimelineTarget& t = tv.targets()[i];
          js << (i ? ", " : "") << "{\"collective\": " << t.collective << ", \"rank\": " << t.rank << ", \"x\": "
             << static_cast<int>((t.x0 + t.x1) / 2) << ", \"y\": " << static_cast<int>((t.y0 + t.y1) / 2) << "}";
        }
        js << "]";
        if (compare_mode) {
          const CompareModel& cm = compare.model();
          int colored = 0;
          for (const auto& row : cm.diff.rows) {
            RgbF rgb;
            colored += speedupColor(row.speedup, &rgb) ? 1 : 0;
          }
          js << ",\n  \"compare\": {\"pairs\": " << cm.pairs.size() << ", \"diff_rows\": " << cm.diff.rows.size()
             << ", \"colored_rows\": " << colored << ", \"selected_b\": " << compare.timelineB().selected()
             << ", \"offset_ns\": " << compare.offsetNs() << ", \"findings_a\": " << m.analysis.findings.size()
             << ", \"findings_b\": " << slots[1]->model->analysis.findings.size() << "}";
        }
      }
      js << "\n}\n";
      pending_state = js.str();
      const auto now = std::chrono::steady_clock::now();
      if (pending_state != last_state && now - last_state_write > std::chrono::milliseconds(100)) {
        if (writeFileAtomically(options.state_out, pending_state)) last_state = pending_state;
        last_state_write = now;
      }
    }

    if (headless) {
      const bool settled = ready || exit_code != 0;
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
        if (ready && !options.dump_layout.empty()) {
          const std::string json = tabs.topologyLayoutJson();
          if (json.empty()) {
            std::cerr << "ringside view: --dump-layout: the topology view was not drawn (use --view topology)\n";
          } else if (!writeTextFile(options.dump_layout, json, &error)) {
            std::cerr << "ringside view: " << error << "\n";
            return 1;
          }
        }
        if (ready && !options.export_csv.empty() &&
            !writeTextFile(options.export_csv, viewCsv(modelA(), options.view), &error)) {
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
  // The last state, unthrottled.
  if (!options.state_out.empty() && pending_state != last_state) writeFileAtomically(options.state_out, pending_state);
  return exit_code;
}

}  // namespace ringside::gui
