#include "timeline_view.h"

#include "ringside/format/units.h"
#include "ringside/gui/inspect.h"
#include "timeline_lanes.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace ringside::gui {
namespace {

constexpr float kLabelWidth = 120.0f;
constexpr float kMinEventPx = 3.0f;
constexpr int kFoldHostsAbove = 48;  // rank lanes; more and host groups start folded

// Tick step: 1, 2 or 5 x 10^k ns, about `target_px` apart.
double tickStep(double ns_per_px, float target_px) {
  double raw = ns_per_px * target_px;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (p * m >= raw) return p * m;
  }
  return p * 10;
}

void drawRuler(ImDrawList* dl, const TimeAxis& axis, int64_t origin, ImVec2 at, float width, float height) {
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 line = ImGui::GetColorU32(ImGuiCol_Border);
  dl->AddRectFilled(at, ImVec2(at.x + width, at.y + height), ImGui::GetColorU32(ImGuiCol_FrameBg));
  const double step = tickStep(axis.nsPerPixel(), 110.0f);
  double first = std::ceil(static_cast<double>(axis.t0 - origin) / step) * step;
  for (double t = first; t <= static_cast<double>(axis.t1 - origin); t += step) {
    float x = axis.toX(origin + static_cast<int64_t>(t));
    dl->AddLine(ImVec2(x, at.y + height - 8), ImVec2(x, at.y + height), line);
    // A label that would run past the ruler's end (under the side panel's edge) is left out.
    const std::string label = format::durationSignificant(t);
    if (x + 3 + ImGui::CalcTextSize(label.c_str()).x <= at.x + width) {
      dl->AddText(ImVec2(x + 3, at.y + 3), text, label.c_str());
    }
  }
}

}  // namespace

void TimelineView::reset(const TimelineModel& model) {
  flags_.assign(model.lanes.size(), LaneFlags{});
  shown_.clear();
  // Many ranks: host groups start folded (a few dozen rank lanes fit a screen), except the group
  // of the rank the overview points at (the latest to arrive); the overview shows them all.
  int ranks = 0;
  for (const Lane& l : model.lanes) ranks += l.kind == LaneKind::kRank ? 1 : 0;
  if (ranks > kFoldHostsAbove) {
    int keep_host = -1;
    for (const Lane& l : model.lanes) {
      if (l.kind == LaneKind::kRank && l.rank == model.overview.latest_rank) keep_host = l.host;
    }
    for (size_t i = 0; i < model.lanes.size(); ++i) {
      const Lane& l = model.lanes[i];
      if (l.kind == LaneKind::kHost && l.host != keep_host) flags_[i].collapsed = true;
    }
  }
  selected_ = -1;
  clicked_ = -1;
  range_selection_.reset();
}

int TimelineView::laneOfRank(const TimelineModel& model, int rank) const {
  for (size_t i = 0; i < model.lanes.size(); ++i) {
    if (model.lanes[i].kind == LaneKind::kRank && model.lanes[i].rank == rank) return static_cast<int>(i);
  }
  return -1;
}

int TimelineView::laneOfLink(const TimelineModel& model, int src, int dst) const {
  for (size_t i = 0; i < model.lanes.size(); ++i) {
    const Lane& l = model.lanes[i];
    if (l.kind == LaneKind::kLink && l.src == src && l.dst == dst) return static_cast<int>(i);
  }
  return -1;
}

// One frame of the view: the lanes' shared frame, their layout and geometry.
struct TimelineView::Frame {
  LaneFrame lanes;
  std::vector<LaneLayout> layout;
  FrameGeometry geometry;
  ImVec2 avail;
  float total_h = 0;
  bool hovered_area = false;  // the mouse is over the lanes' child window
  int64_t offset_ns = 0;      // model time = view time + offset_ns
};

void TimelineView::draw(const TimelineModel& model, ViewState* view, const TimelineDrawOptions& options) {
  if (flags_.size() != model.lanes.size()) flags_.resize(model.lanes.size());
  Frame f = beginFrame(model, view, options);
  drawLanes(f);
  drawRangeSelection(f);
  ImGui::Dummy(ImVec2(f.avail.x, f.total_h));
  const Hit hit = hoverLanes(f, view);
  followGesture(f, view, hit);
  laneNameInput(f, hit);
  ImGui::EndChild();
}

// The sticky ruler, then the lanes' child window (the lanes scroll beneath the ruler), their
// layout, colours and this frame's geometry.
TimelineView::Frame TimelineView::beginFrame(const TimelineModel& model, ViewState* view,
                                             const TimelineDrawOptions& options) {
  Frame f;
  LaneFrame& lf = f.lanes;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  f.avail = ImGui::GetContentRegionAvail();
  const float label_w = kLabelWidth * ImGui::GetFontSize() / 13.0f;
  const float ruler_h = ImGui::GetTextLineHeight() + 10;
  lf.model = &model;
  lf.label_x = origin.x;
  lf.plot_x = origin.x + label_w;
  lf.plot_w = std::max(10.0f, f.avail.x - label_w);
  f.offset_ns = options.offset_ns;
  lf.axis = TimeAxis{view->range().t0 + f.offset_ns, view->range().t1 + f.offset_ns, lf.plot_x,
                     lf.plot_w};

  ImDrawList* wdl = ImGui::GetWindowDrawList();
  drawRuler(wdl, lf.axis, model.start_ns, ImVec2(lf.plot_x, origin.y), lf.plot_w, ruler_h);
  wdl->AddText(ImVec2(origin.x + 4, origin.y + 3), ImGui::GetColorU32(ImGuiCol_Text),
               options.title != nullptr ? options.title : "time");
  ImGui::Dummy(ImVec2(f.avail.x, ruler_h));
  ImGui::BeginChild(options.id, ImVec2(0, options.height), false, ImGuiWindowFlags_NoScrollWithMouse);
  lf.dl = ImGui::GetWindowDrawList();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  f.layout = layoutAndScroll(model, top.y);
  releaseFolded(model, f.layout);
  lf.clip_min = ImGui::GetWindowPos();
  lf.clip_max =
      ImVec2(lf.clip_min.x + ImGui::GetWindowWidth(), lf.clip_min.y + ImGui::GetWindowHeight());
  lf.text = ImGui::GetColorU32(ImGuiCol_Text);
  lf.dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  lf.lane_bg = ImGui::GetColorU32(ImGuiCol_FrameBg);
  lf.highlight = options.dark ? IM_COL32(255, 217, 26, 255) : IM_COL32(200, 120, 0, 255);
  lf.mark = options.dark ? IM_COL32(80, 220, 255, 255) : IM_COL32(0, 90, 200, 255);
  lf.on_event = IM_COL32(20, 20, 20, 255);
  lf.dark = options.dark;
  lf.marked = options.marked;
  lf.selected = selected_;
  lf.min_event_px = kMinEventPx;
  lf.hovered_link = view->hoveredLink();
  f.hovered_area = ImGui::IsWindowHovered();
  // Events and counters: exactly the frame geometry (lod.h).
  f.geometry =
      buildFrameGeometry(model, f.layout, lf.axis, lf.clip_min.y, lf.clip_max.y, kMinEventPx);
  // One scale for every link lane: the busiest link in view at this zoom's resolution (the
  // resolution follows the zoom down to single messages, and so does the scale).
  lf.link_top = f.geometry.linkTop() > 0 ? f.geometry.linkTop() : std::max(1.0, model.link_scale);
  for (const LaneLayout& l : f.layout) f.total_h = std::max(f.total_h, l.y + l.height - top.y);
  return f;
}

// The lanes' layout from the cursor down; a lane asked for with scrollToLane is unfolded
// (its host group first) and scrolled to.
std::vector<LaneLayout> TimelineView::layoutAndScroll(const TimelineModel& model, float top) {
  const LayoutOptions lopt{ImGui::GetTextLineHeight() + 4, 40.0f * ImGui::GetFontSize() / 13.0f, 4.0f};
  std::vector<LaneLayout> layout = layoutLanes(model, flags_, top, lopt);
  if (scroll_to_lane_ < 0 || static_cast<size_t>(scroll_to_lane_) >= model.lanes.size())
    return layout;
  // A rank in a folded host group: unfold the group first, so the lane is there to scroll to.
  bool unfolded = false;
  const Lane& target = model.lanes[static_cast<size_t>(scroll_to_lane_)];
  for (size_t i = 0; i < model.lanes.size() && target.kind == LaneKind::kRank && target.host >= 0;
       ++i) {
    if (model.lanes[i].kind == LaneKind::kHost && model.lanes[i].host == target.host &&
        flags_[i].collapsed) {
      flags_[i].collapsed = false;
      unfolded = true;
    }
  }
  // (After unfolding, the scroll waits a frame: ImGui limits it to the last frame's content.)
  if (unfolded) return layoutLanes(model, flags_, top, lopt);
  if (static_cast<size_t>(scroll_to_lane_) < layout.size()) {
    flags_[static_cast<size_t>(scroll_to_lane_)].hidden = false;
    ImGui::SetScrollY(ImGui::GetScrollY() + layout[static_cast<size_t>(scroll_to_lane_)].y - top -
                      ImGui::GetScrollY());
    scroll_to_lane_ = -1;
  }
  return layout;
}

// Every lane in view by its kind's class: first the names of all, then the contents of all
// (rank lanes' rows, link lanes' counters, in lane order as the geometry lists them).
void TimelineView::drawLanes(const Frame& f) {
  const TimelineModel& model = *f.lanes.model;
  for (size_t i = 0; i < model.lanes.size(); ++i) {
    const LaneLayout& l = f.layout[i];
    if (l.height <= 0 || l.y > f.lanes.clip_max.y || l.y + l.height < f.lanes.clip_min.y)
      continue;  // hidden / culled
    timelineLane(model.lanes[i].kind).drawName(f.lanes, model.lanes[i], l, flags_[i].pinned);
  }
  targets_.clear();
  const std::vector<RowGeometry>& rows = f.geometry.rows;
  size_t next_counter = 0;
  for (size_t r = 0; r < rows.size() || next_counter < f.geometry.counters.size();) {
    LaneGeometry g;
    if (r < rows.size()) {  // a rank lane's rows, consecutive in the geometry
      size_t end = r;
      while (end < rows.size() && rows[end].lane == rows[r].lane) ++end;
      g.lane = rows[r].lane;
      g.rows = std::span<const RowGeometry>(rows.data() + r, end - r);
      r = end;
    } else {
      g.counter = &f.geometry.counters[next_counter++];
      g.lane = g.counter->lane;
    }
    timelineLane(model.lanes[static_cast<size_t>(g.lane)].kind).drawContents(f.lanes, g, &targets_);
  }
}

// The selected range: a band over every lane.
void TimelineView::drawRangeSelection(const Frame& f) const {
  if (!range_selection_) return;
  const LaneFrame& lf = f.lanes;
  const float x0 = std::max(lf.plot_x, lf.axis.toX(range_selection_->t0));
  const float x1 = std::min(lf.plot_x + lf.plot_w, lf.axis.toX(range_selection_->t1));
  if (x1 <= x0) return;
  lf.dl->AddRectFilled(ImVec2(x0, lf.clip_min.y), ImVec2(x1, lf.clip_max.y),
                       ImGui::GetColorU32(ImGuiCol_TextSelectedBg));
  lf.dl->AddLine(ImVec2(x0, lf.clip_min.y), ImVec2(x0, lf.clip_max.y), lf.mark);
  lf.dl->AddLine(ImVec2(x1, lf.clip_min.y), ImVec2(x1, lf.clip_max.y), lf.mark);
}

// The mouse over the plot: the hover line, wheel zoom, the start of a gesture, and the lane
// under the cursor answers for itself (tooltips). Returns what is under the cursor.
Hit TimelineView::hoverLanes(const Frame& f, ViewState* view) {
  const LaneFrame& lf = f.lanes;
  const TimelineModel& model = *lf.model;
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 m = io.MousePos;
  hover_ = TimelineHover{};
  Hit hit;
  if (!f.hovered_area) return hit;
  const int lane = laneAt(f.layout, m.y);
  if (lane >= 0) {
    const size_t i = static_cast<size_t>(lane);
    hit = timelineLane(model.lanes[i].kind)
              .hitTest(lf, model.lanes[i], lane, f.layout[i],
                       std::clamp(m.x, lf.plot_x, lf.plot_x + lf.plot_w), m.y);
  }
  if (hit.lane >= 0) hover_.lane = model.lanes[static_cast<size_t>(hit.lane)].name;
  if (m.x < lf.plot_x || m.x > lf.plot_x + lf.plot_w) return hit;
  hover_.time_ns = lf.axis.toTime(m.x);
  lf.dl->AddLine(ImVec2(m.x, lf.clip_min.y), ImVec2(m.x, lf.clip_max.y),
                 ImGui::GetColorU32(ImGuiCol_Text, 0.5f));
  if (io.MouseWheel != 0) {
    view->zoomAt((m.x - lf.plot_x) / lf.plot_w, std::pow(0.8, io.MouseWheel));
    view->commit();
  }
  if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    drag_ = io.KeyShift ? Drag::kSelectRange : Drag::kPan;
    drag_start_ns_ = lf.axis.toTime(m.x) - f.offset_ns;
    dragged_ = false;
  } else if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
    drag_ = Drag::kZoomRange;
    drag_start_ns_ = lf.axis.toTime(m.x) - f.offset_ns;
    dragged_ = false;
  }
  if (hit.lane >= 0) {
    const size_t i = static_cast<size_t>(hit.lane);
    const LanePointer p{m, hit, drag_ != Drag::kNone, dragged_};
    timelineLane(model.lanes[i].kind).hover(lf, model.lanes[i], f.layout[i], p, view, &hover_);
  }
  return hit;
}

// A gesture that began in this plot continues while the button is held, wherever the mouse is:
// drag pans, right-drag zooms to a range, shift-drag selects one, a click selects a collective.
void TimelineView::followGesture(const Frame& f, ViewState* view, const Hit& hit) {
  if (drag_ == Drag::kNone) return;
  const LaneFrame& lf = f.lanes;
  ImGuiIO& io = ImGui::GetIO();
  const int64_t off = f.offset_ns;
  const ImGuiMouseButton button =
      drag_ == Drag::kZoomRange ? ImGuiMouseButton_Right : ImGuiMouseButton_Left;
  if (ImGui::IsMouseDragging(button, 3.0f)) dragged_ = true;
  const int64_t now_ns =
      lf.axis.toTime(std::clamp(io.MousePos.x, lf.plot_x, lf.plot_x + lf.plot_w)) - off;
  if (dragged_ && drag_ == Drag::kPan) view->panPixels(io.MouseDelta.x, lf.plot_w);
  if (dragged_ && drag_ != Drag::kPan) {
    const float x0 = lf.axis.toX(std::min(drag_start_ns_, now_ns) + off);
    const float x1 = lf.axis.toX(std::max(drag_start_ns_, now_ns) + off);
    lf.dl->AddRectFilled(ImVec2(x0, lf.clip_min.y), ImVec2(x1, lf.clip_max.y),
                         ImGui::GetColorU32(ImGuiCol_TextSelectedBg));
  }
  if (!ImGui::IsMouseReleased(button)) return;
  const TimeRange r{std::min(drag_start_ns_, now_ns), std::max(drag_start_ns_, now_ns)};
  if (!dragged_) {
    if (drag_ == Drag::kPan && hit.event >= 0 && hit.count == 1) {
      selected_ = lf.model->lanes[static_cast<size_t>(hit.lane)]
                      .rows[static_cast<size_t>(hit.row)]
                      .events[static_cast<size_t>(hit.event)]
                      .collective;
      clicked_ = selected_;
    }
  } else if (drag_ == Drag::kPan) {
    view->commit();
  } else if (drag_ == Drag::kZoomRange && r.t1 > r.t0) {
    view->setRange(r);
    view->commit();
  } else if (drag_ == Drag::kSelectRange && r.t1 > r.t0) {
    range_selection_ = TimeRange{r.t0 + off, r.t1 + off};
  }
  drag_ = Drag::kNone;
  dragged_ = false;
}

void TimelineView::releaseFolded(const TimelineModel& model, const std::vector<LaneLayout>& layout) {
  if (shown_.size() != model.lanes.size()) shown_.assign(model.lanes.size(), 0);
  for (size_t i = 0; i < model.lanes.size() && i < layout.size(); ++i) {
    const bool shown = layout[i].height > 0 && !layout[i].collapsed;
    // On the change only: another view of the same model (compare mode) may show the lane.
    if (shown_[i] && !shown) model.releaseLane(i);
    shown_[i] = shown ? 1 : 0;
  }
}

// Lane names: click folds, right-click opens hide / pin.
void TimelineView::laneNameInput(const Frame& f, const Hit& hit) {
  const ImVec2 m = ImGui::GetIO().MousePos;
  if (f.hovered_area && m.x < f.lanes.plot_x && hit.lane >= 0 &&
      m.y < f.layout[static_cast<size_t>(hit.lane)].y +
                f.layout[static_cast<size_t>(hit.lane)].header) {
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      flags_[static_cast<size_t>(hit.lane)].collapsed = !flags_[static_cast<size_t>(hit.lane)].collapsed;
    } else if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
      menu_lane_ = hit.lane;
      ImGui::OpenPopup("lane menu");
    }
  }
  if (!ImGui::BeginPopup("lane menu")) return;
  if (menu_lane_ >= 0 && static_cast<size_t>(menu_lane_) < flags_.size()) {
    LaneFlags& fl = flags_[static_cast<size_t>(menu_lane_)];
    ImGui::TextDisabled("%s", f.lanes.model->lanes[static_cast<size_t>(menu_lane_)].name.c_str());
    if (ImGui::MenuItem(fl.pinned ? "Unpin" : "Pin to the top")) fl.pinned = !fl.pinned;
    if (ImGui::MenuItem("Hide")) fl.hidden = true;
    if (ImGui::MenuItem(fl.collapsed ? "Unfold" : "Fold")) fl.collapsed = !fl.collapsed;
  }
  ImGui::EndPopup();
}

}  // namespace ringside::gui
