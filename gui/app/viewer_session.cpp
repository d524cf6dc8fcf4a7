#include "viewer_session.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "inspector_view.h"
#include "ringside/format/units.h"
#include "viewer_state.h"

namespace ringside::gui {
namespace {

// Beside the timeline: the selected collective, the selected range, the findings.
InspectAction drawSidePanel(const TimelineModel& model, const TimelineView& timeline) {
  InspectAction action;
  if (ImGui::CollapsingHeader("Selection", ImGuiTreeNodeFlags_DefaultOpen)) {
    drawCollectiveDetails(model, timeline.selected(), &action);
  }
  if (ImGui::CollapsingHeader("Range", ImGuiTreeNodeFlags_DefaultOpen)) {
    if (timeline.rangeSelection()) {
      drawRangeStats(
          model, rangeStats(model, timeline.rangeSelection()->t0, timeline.rangeSelection()->t1));
    } else {
      textDisabledWrapped("Shift-drag over the timeline to select a range.");
    }
  }
  if (ImGui::CollapsingHeader("Findings", ImGuiTreeNodeFlags_DefaultOpen)) {
    drawFindings(model, "findings", &action);
  }
  return action;
}

}  // namespace

ViewerSession::ViewerSession(const ViewerOptions& options, const analyzer::Topology* topology,
                             Backend* backend)
    : options_(options), topology_(topology), backend_(backend) {
  for (const std::string& path : options.traces) {
    slots_.push_back(std::make_unique<TraceSlot>());
    slots_.back()->path = path;
    slots_.back()->loader.topology = topology;
    slots_.back()->loader.start(path);
  }
  compare_mode_ = options.view == "compare" && slots_.size() == 2;
  std::snprintf(search_.text, sizeof search_.text, "%s", options.search.c_str());
}

double ViewerSession::frameWaitSeconds() const {
  return !options_.screenshot.empty() || !ready_ || tabs_.animating() ? 0 : 0.25;
}

void ViewerSession::frame() {
  const std::vector<KeyPress> key_presses = backend_->takeKeyPresses();
  pollLoaders();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::Begin("ringside", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoBringToFrontOnFocus);
  if (exit_code_ != 0) {
    drawFailed();
  } else if (!ready_ && !compare_mode_ && slots_.size() == 1 && slots_[0]->early) {
    drawEarly();
  } else if (!ready_) {
    drawLoading();
  } else {
    drawReady(key_presses);
  }
  ImGui::End();
}

// ---- loading ---------------------------------------------------------------------------------

void ViewerSession::pollLoaders() {
  for (auto& slot : slots_) {
    if (slot->poll()) {
      std::cerr << "ringside view: " << slot->error << "\n";
      exit_code_ = 1;
    }
  }
  const bool all_loaded =
      std::all_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->model != nullptr; });
  if (all_loaded && !ready_) setUpViews();
}

void ViewerSession::setUpViews() {
  ready_ = true;
  TimelineModel& a = modelA();
  int64_t end = a.end_ns;
  if (compare_mode_)
    end = std::max(end, a.start_ns + (slots_[1]->model->end_ns - slots_[1]->model->start_ns));
  const TimeRange early_range = view_.range();
  view_.setLimits(a.start_ns, end);
  if (early_shown_ && (early_range.t0 != early_fit_.t0 || early_range.t1 != early_fit_.t1)) {
    // The user zoomed or panned while the analysis ran: stay there.
    view_.setRange(early_range);
    view_.commit();
  }
  hang_focus_ = findHangFocus(a);
  markCulprits(hang_focus_, &a);
  timeline_.reset(a);
  if (compare_mode_) compare_.reset(a, *slots_[1]->model);
  tabs_.reset(a, topology_, options_.view, options_.scrub);
  applyStartOptions();
}

// --range, --select, --search; without them, a trace that hung opens at its hang.
void ViewerSession::applyStartOptions() {
  const TimelineModel& a = modelA();
  if (hang_focus_.any() && options_.range.empty() && options_.select < 0 && options_.search.empty()) {
    selectCollective(hang_focus_.collective);
    view_.setRange(hang_focus_.range);
    view_.commit();
    return;
  }
  if (!options_.range.empty()) {
    // Clamped to the trace, and said when it is not all there (an empty view without a word
    // once followed --range 900ms:1000ms on a 321 ms trace).
    const int64_t span = a.end_ns - a.start_ns;
    const auto start = static_cast<int64_t>(options_.range_start_ns);
    const auto stop = static_cast<int64_t>(options_.range_end_ns);
    if (start >= span) {
      std::cerr << "ringside view: --range " << options_.range << " starts after the trace ends ("
                << format::duration(span) << "); showing the whole trace\n";
    } else {
      if (stop > span) {
        std::cerr << "ringside view: --range " << options_.range << " ends after the trace ("
                  << format::duration(span) << "); cut there\n";
      }
      TimeRange r{a.start_ns + start, a.start_ns + std::min(stop, span)};
      view_.setRange(r);
      view_.commit();
      activeTimeline().setRangeSelection(r);
    }
  }
  const size_t n = a.analysis.collectives.size();
  if (options_.select >= 0 && options_.select < static_cast<int>(n)) {
    selectCollective(options_.select);
  } else if (options_.select >= 0) {
    std::cerr << "ringside view: --select " << options_.select << ": the trace has " << n
              << " collectives (0 .. " << static_cast<long>(n) - 1 << "); nothing selected\n";
  }
  if (!options_.search.empty()) {
    search_.run(modelA());
    if (!search_.error.empty()) {
      std::cerr << "ringside view: --search " << options_.search << ": " << search_.error << "\n";
    } else if (search_.cursor.matches().empty()) {
      std::cerr << "ringside view: --search " << options_.search << ": no collective matches\n";
    }
    if (options_.select < 0) stepSearch(true);
  }
}

void ViewerSession::drawFailed() {
  for (const auto& slot : slots_) {
    if (!slot->failed) continue;
    ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "Cannot open %s", slot->path.c_str());
    ImGui::TextWrapped("%s", slot->error.c_str());
  }
}

// The calls are in: draw their timeline while the analysis runs (no selection, findings,
// phases, link lanes, topology or statistics until then).
void ViewerSession::drawEarly() {
  TimelineModel& early = *slots_[0]->early;
  if (!early_shown_) {
    early_shown_ = true;
    view_.setLimits(early.start_ns, early.end_ns);
    early_fit_ = view_.range();
    timeline_.reset(early);
  }
  ImGui::Text(
      "%s  |  timeline of the calls; findings, details, phases, links, topology and statistics: "
      "analysing...",
      early.path.c_str());
  ImGui::ProgressBar(static_cast<float>(slots_[0]->loader.progress.load()), ImVec2(-1, 0));
  TimelineDrawOptions topt;
  topt.dark = backend_->dark();
  timeline_.draw(early, &view_, topt);
}

void ViewerSession::drawLoading() {
  for (const auto& slot : slots_) {
    ImGui::Text("Loading %s ...", slot->path.c_str());
    ImGui::ProgressBar(static_cast<float>(slot->loader.progress.load()), ImVec2(-1, 0));
  }
}

// ---- loaded ----------------------------------------------------------------------------------

void ViewerSession::drawReady(const std::vector<KeyPress>& keys) {
  handleKeys(keys);
  drawToolbar({modelA(), view_, activeTimeline(), *backend_, search_, show_help_,
               [this](bool forward) { stepSearch(forward); }});
  drawViews();
  view_.endFrame();  // the link hovered in this frame is highlighted in the next
  if (show_help_) drawHelp();
}

void ViewerSession::handleKeys(const std::vector<KeyPress>& keys) {
  const ImGuiIO& io = ImGui::GetIO();
  const std::vector<unsigned> chars(io.InputQueueCharacters.begin(), io.InputQueueCharacters.end());
  for (const KeyEvent& e : keyEvents(chars, keys, io.WantTextInput, io.KeyCtrl)) apply(e);
}

void ViewerSession::apply(const KeyEvent& e) {
  switch (e.action) {
    case KeyAction::kZoomIn:
      view_.zoomAt(0.5, 0.8);
      view_.commit();
      break;
    case KeyAction::kZoomOut:
      view_.zoomAt(0.5, 1.25);
      view_.commit();
      break;
    case KeyAction::kPanLeft:
      view_.panPixels(100, 1000);
      view_.commit();
      break;
    case KeyAction::kPanRight:
      view_.panPixels(-100, 1000);
      view_.commit();
      break;
    case KeyAction::kFit:
      view_.fit();
      view_.commit();
      break;
    case KeyAction::kUndo: view_.undo(); break;
    case KeyAction::kRedo: view_.redo(); break;
    case KeyAction::kToggleTheme: backend_->setDark(!backend_->dark()); break;
    case KeyAction::kToggleHelp: show_help_ = !show_help_; break;
    case KeyAction::kFocusSearch: search_.focus = true; break;
    case KeyAction::kSearchStep: stepSearch(!e.shift); break;
    case KeyAction::kSearchStepIfQuery:
      if (search_.text[0] != '\0') stepSearch(!e.shift);
      break;
    case KeyAction::kEscape:
      if (show_help_) {
        show_help_ = false;
      } else {
        selectCollective(-1);
        activeTimeline().setRangeSelection(std::nullopt);
      }
      break;
    case KeyAction::kQuit: backend_->requestClose(); break;
  }
}

void ViewerSession::drawViews() {
  if (compare_mode_) {
    compare_.draw(modelA(), *slots_[1]->model, &view_, backend_->dark(), &search_.cursor.matches());
    return;
  }
  // Timeline (with the details at the right), Topology (the graph above the same), Traffic
  // matrix, Statistics.
  tabs_.draw(modelA(), &view_, timeline_.selected(), timeline_.rangeSelection(),
             [this] { drawTimelineArea(); });
}

void ViewerSession::drawTimelineArea() {
  const float side_w = std::min(ImGui::GetFontSize() * 34, ImGui::GetContentRegionAvail().x * 0.4f);
  ImGui::BeginChild("timeline area", ImVec2(ImGui::GetContentRegionAvail().x - side_w, 0));
  const OverviewAction jump = overview_.draw(
      modelA(), view_, backend_->dark(),
      [](void* b, const std::vector<uint8_t>& rgba, int w, int h, uint64_t version) {
        return static_cast<Backend*>(b)->image(rgba, w, h, version);
      },
      backend_);
  if (jump.range) {
    view_.setRange(*jump.range);
    view_.commit();
  }
  if (jump.rank >= 0) timeline_.scrollToLane(timeline_.laneOfRank(modelA(), jump.rank));
  TimelineDrawOptions topt;
  topt.dark = backend_->dark();
  topt.marked = &search_.cursor.matches();
  timeline_.draw(modelA(), &view_, topt);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("side", ImVec2(0, 0), true);
  const InspectAction action = drawSidePanel(modelA(), timeline_);
  ImGui::EndChild();
  if (action.select >= 0) timeline_.select(action.select);
  if (action.rank >= 0) timeline_.scrollToLane(timeline_.laneOfRank(modelA(), action.rank));
  if (action.src >= 0)
    timeline_.scrollToLane(timeline_.laneOfLink(modelA(), action.src, action.dst));
  if (action.zoom) {
    view_.setRange(*action.zoom);
    view_.commit();
  }
}

void ViewerSession::drawHelp() {
  static const std::string kHelp = keyHelpText();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(
      ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.5f),
      ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::Begin("Keys", &show_help_,
               ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoSavedSettings);
  ImGui::TextUnformatted(kHelp.c_str());
  ImGui::End();
}

// ---- selection and search --------------------------------------------------------------------

// Centre the view on a collective; zoom in only as far as needed to show it whole.
void ViewerSession::showCollective(int c) {
  if (c < 0) return;
  const auto& ci = modelA().analysis.collectives[static_cast<size_t>(c)];
  TimeRange r = view_.range();
  int64_t span = std::max(r.t1 - r.t0, 3 * (ci.last_end_ns - ci.first_start_ns));
  int64_t mid = ci.first_start_ns + (ci.last_end_ns - ci.first_start_ns) / 2;
  view_.setRange({mid - span / 2, mid - span / 2 + span});
  view_.commit();
}

void ViewerSession::selectCollective(int c) {
  if (compare_mode_) {
    compare_.selectA(c);
  } else {
    timeline_.select(c);
  }
}

void ViewerSession::stepSearch(bool forward) {
  SearchCursor& cursor = search_.cursor;
  if (cursor.matches().empty()) search_.run(modelA());
  int c = cursor.position() < 0 ? cursor.startAt(modelA(), view_.range().t0)
                                : (forward ? cursor.next() : cursor.prev());
  selectCollective(c);
  showCollective(c);
}

// ---- --state-out -----------------------------------------------------------------------------

std::string ViewerSession::stateJson() const {
  ViewerStateInput in;
  in.loaded = ready_;
  for (const auto& slot : slots_) {
    if (slot->failed) in.errors.push_back(slot->path + ": " + slot->error);
  }
  in.view = compare_mode_ ? std::string("compare") : tabs_.current();
  if (ready_) {
    in.model = slots_[0]->model.get();
    in.timeline = &activeTimeline();
    in.view_state = &view_;
    in.search_query = search_.text;
    in.search_active = search_.active;
    in.search = &search_.cursor;
    if (!compare_mode_) in.overview = &overview_;
    if (compare_mode_) {
      in.compare = &compare_;
      in.model_b = slots_[1]->model.get();
    }
  }
  return viewerStateJson(in);
}

}  // namespace ringside::gui
