#include "timeline_view.h"

#include "ringside/format/units.h"
#include "ringside/gui/inspect.h"
#include "ringside/gui/palette.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>

namespace ringside::gui {
namespace {

constexpr float kLabelWidth = 120.0f;
constexpr float kMinEventPx = 3.0f;
constexpr int kFoldHostsAbove = 48;  // rank lanes; more and host groups start folded

// The rank's colour from palette.h (the topology view's nodes have the same), with `alpha`
// applied as ImGui applies it.
ImU32 rankColor(int rank, float alpha = 1.0f) {
  const Rgb c = rankRgb(rank);
  return ImGui::GetColorU32(ImVec4(c.r / 255.0f, c.g / 255.0f, c.b / 255.0f, alpha));
}

ImU32 toU32(const RgbF& c, float alpha = 1.0f) { return ImGui::GetColorU32(ImVec4(c.r, c.g, c.b, alpha)); }

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
    dl->AddText(ImVec2(x + 3, at.y + 3), text, format::durationSignificant(t).c_str());
  }
}

}  // namespace

void TimelineView::reset(const TimelineModel& model) {
  flags_.assign(model.lanes.size(), LaneFlags{});
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

void TimelineView::draw(const TimelineModel& model, ViewState* view, const TimelineDrawOptions& options) {
  if (flags_.size() != model.lanes.size()) flags_.resize(model.lanes.size());
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_w = kLabelWidth * ImGui::GetFontSize() / 13.0f;
  const float ruler_h = ImGui::GetTextLineHeight() + 10;
  const float plot_x = origin.x + label_w;
  const float plot_w = std::max(10.0f, avail.x - label_w);
  const int64_t off = options.offset_ns;
  TimeAxis axis{view->range().t0 + off, view->range().t1 + off, plot_x, plot_w};

  // The ruler stays put; the lanes scroll beneath it.
  ImDrawList* wdl = ImGui::GetWindowDrawList();
  drawRuler(wdl, axis, model.start_ns, ImVec2(plot_x, origin.y), plot_w, ruler_h);
  wdl->AddText(ImVec2(origin.x + 4, origin.y + 3), ImGui::GetColorU32(ImGuiCol_Text),
               options.title != nullptr ? options.title : "time");
  ImGui::Dummy(ImVec2(avail.x, ruler_h));
  ImGui::BeginChild(options.id, ImVec2(0, options.height), false, ImGuiWindowFlags_NoScrollWithMouse);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const LayoutOptions lopt{ImGui::GetTextLineHeight() + 4, 40.0f * ImGui::GetFontSize() / 13.0f, 4.0f};
  std::vector<LaneLayout> layout = layoutLanes(model, flags_, top.y, lopt);
  bool unfolded = false;
  if (scroll_to_lane_ >= 0 && static_cast<size_t>(scroll_to_lane_) < model.lanes.size()) {
    // A rank in a folded host group: unfold the group first, so the lane is there to scroll to.
    const Lane& target = model.lanes[static_cast<size_t>(scroll_to_lane_)];
    for (size_t i = 0; i < model.lanes.size() && target.kind == LaneKind::kRank && target.host >= 0; ++i) {
      if (model.lanes[i].kind == LaneKind::kHost && model.lanes[i].host == target.host && flags_[i].collapsed) {
        flags_[i].collapsed = false;
        unfolded = true;
      }
    }
    if (unfolded) layout = layoutLanes(model, flags_, top.y, lopt);
  }
  float total_h = 0;
  for (const LaneLayout& l : layout) total_h = std::max(total_h, l.y + l.height - top.y);
  // (After unfolding, the scroll waits a frame: ImGui limits it to the last frame's content.)
  if (!unfolded && scroll_to_lane_ >= 0 && static_cast<size_t>(scroll_to_lane_) < layout.size()) {
    flags_[static_cast<size_t>(scroll_to_lane_)].hidden = false;
    ImGui::SetScrollY(ImGui::GetScrollY() + layout[static_cast<size_t>(scroll_to_lane_)].y - top.y -
                      ImGui::GetScrollY());
    scroll_to_lane_ = -1;
  }
  const ImVec2 clip_min = ImGui::GetWindowPos();
  const ImVec2 clip_max(clip_min.x + ImGui::GetWindowWidth(), clip_min.y + ImGui::GetWindowHeight());
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const ImU32 lane_bg = ImGui::GetColorU32(ImGuiCol_FrameBg);
  const ImU32 highlight = options.dark ? IM_COL32(255, 217, 26, 255) : IM_COL32(200, 120, 0, 255);
  const ImU32 mark = options.dark ? IM_COL32(80, 220, 255, 255) : IM_COL32(0, 90, 200, 255);
  const ImU32 on_event = IM_COL32(20, 20, 20, 255);
  const bool hovered_area = ImGui::IsWindowHovered();

  // Events and counters: exactly the frame geometry (lod.h).
  const FrameGeometry geometry = buildFrameGeometry(model, layout, axis, clip_min.y, clip_max.y, kMinEventPx);
  // One scale for every link lane: the busiest link in view at this zoom's resolution (the
  // resolution follows the zoom down to single messages, and so does the scale).
  const double link_top = geometry.linkTop() > 0 ? geometry.linkTop() : std::max(1.0, model.link_scale);

  // Lane backgrounds and names.
  for (size_t i = 0; i < model.lanes.size(); ++i) {
    const Lane& lane = model.lanes[i];
    const LaneLayout& l = layout[i];
    if (l.height <= 0 || l.y > clip_max.y || l.y + l.height < clip_min.y) continue;  // hidden / culled
    dl->AddRectFilled(ImVec2(origin.x, l.y), ImVec2(plot_x + plot_w, l.y + l.height), lane_bg);
    ImU32 swatch = lane.kind == LaneKind::kRank   ? rankColor(lane.rank)
                   : lane.kind == LaneKind::kHost ? dim
                                                  : rankColor(lane.src, 0.6f);
    dl->AddRectFilled(ImVec2(origin.x, l.y), ImVec2(origin.x + 6, l.y + l.height), swatch);
    std::string name = std::string(l.collapsed ? "+ " : "- ") + lane.name + (flags_[i].pinned ? "  [pin]" : "");
    dl->AddText(ImVec2(origin.x + 10, l.y + 2), text, name.c_str());
    if (lane.kind == LaneKind::kRank && !l.collapsed) {
      for (size_t r = 0; r < lane.rows.size(); ++r) {
        const float y0 = l.y + l.header + l.row_height * static_cast<float>(r);
        dl->AddText(ImVec2(origin.x + 18, y0 + 1), dim, lane.rows[r].name.c_str());
      }
    } else if (lane.kind == LaneKind::kLink && !l.collapsed) {
      if (view->hoveredLink() == LinkRef{lane.src, lane.dst}) {  // hovered here or in the topology view
        dl->AddRect(ImVec2(origin.x, l.y), ImVec2(plot_x + plot_w, l.y + l.height), highlight, 0, 0, 2.0f);
      }
      dl->AddText(ImVec2(origin.x + 18, l.y + l.header + 1), dim,
                  ("peak " + format::rate(lane.counter.max_value)).c_str());
      // Every link lane has one scale: say what its top is and how fine the picture is.
      if (l.height - l.header >= 2 * l.row_height) {
        dl->AddText(ImVec2(origin.x + 18, l.y + l.header + l.row_height), dim,
                    ("top " + format::rate(link_top) + ", " + linkLevelName(linkLevel(lane, axis))).c_str());
      }
    }
  }

  targets_.clear();
  for (const RowGeometry& rg : geometry.rows) {
    const Lane& lane = model.lanes[static_cast<size_t>(rg.lane)];
    const auto& events = lane.rows[static_cast<size_t>(rg.row)].events;
    for (const DrawItem& it : rg.items) {
      const TimelineEvent& e = events[static_cast<size_t>(it.first)];
      ImVec2 a(it.x0, rg.y0 + 1), b(it.x1, rg.y1 - 1);
      if (it.count > 1) {
        dl->AddRectFilled(a, b, dim);
        if (it.x1 - it.x0 > 24) {
          dl->AddText(ImVec2(a.x + 2, a.y), text, ("x" + std::to_string(it.count)).c_str());
        }
        continue;
      }
      const std::string& label = model.labels[static_cast<size_t>(e.label)];
      RgbF c = nameColor(label, options.dark);
      if (rg.row >= lane.call_rows) c = {c.r * 0.85f, c.g * 0.85f, c.b * 0.85f};
      dl->AddRectFilled(a, b, e.failed ? IM_COL32(220, 50, 50, 255) : toU32(c));
      if (options.marked != nullptr && e.collective >= 0 &&
          std::binary_search(options.marked->begin(), options.marked->end(), e.collective)) {
        dl->AddRect(a, b, mark, 0, 0, 2.0f);
      }
      if (selected_ >= 0 && e.collective == selected_) dl->AddRect(a, b, highlight, 0, 0, 2.5f);
      if (rg.row < lane.call_rows && e.collective >= 0 && it.x1 - it.x0 >= 6 && targets_.size() < 64) {
        targets_.push_back({e.collective, lane.rank, it.x0, it.x1, a.y, b.y});
      }
      if (it.x1 - it.x0 > ImGui::CalcTextSize(label.c_str()).x + 4) {
        dl->PushClipRect(a, b, true);
        dl->AddText(ImVec2(a.x + 2, a.y), on_event, label.c_str());
        dl->PopClipRect();
      }
    }
  }
  for (const CounterGeometry& cg : geometry.counters) {
    const Lane& lane = model.lanes[static_cast<size_t>(cg.lane)];
    const float y0 = cg.y0, h = cg.y1 - cg.y0 - 2;
    const double top_value = link_top;  // shared by every link lane
    const ImU32 fill = rankColor(lane.src, 0.9f);
    for (const CounterColumn& c : cg.columns) {
      float hi = y0 + h - static_cast<float>(c.max / top_value) * h;
      float lo = y0 + h - static_cast<float>(c.min / top_value) * h;
      dl->AddRectFilled(ImVec2(c.x, hi), ImVec2(c.x + 1, y0 + h), fill);
      dl->AddLine(ImVec2(c.x, lo), ImVec2(c.x + 1, lo), text);  // the min, over the max's bar
    }
  }
  // The selected range: a band over every lane.
  if (range_selection_) {
    float x0 = std::max(plot_x, axis.toX(range_selection_->t0));
    float x1 = std::min(plot_x + plot_w, axis.toX(range_selection_->t1));
    if (x1 > x0) {
      dl->AddRectFilled(ImVec2(x0, clip_min.y), ImVec2(x1, clip_max.y), ImGui::GetColorU32(ImGuiCol_TextSelectedBg));
      dl->AddLine(ImVec2(x0, clip_min.y), ImVec2(x0, clip_max.y), mark);
      dl->AddLine(ImVec2(x1, clip_min.y), ImVec2(x1, clip_max.y), mark);
    }
  }
  ImGui::Dummy(ImVec2(avail.x, total_h));

  // Input.
  const ImVec2 m = io.MousePos;
  const bool in_plot = hovered_area && m.x >= plot_x && m.x <= plot_x + plot_w;
  hover_ = TimelineHover{};
  Hit hit;
  if (hovered_area) {
    hit = hitTest(model, layout, axis, std::clamp(m.x, plot_x, plot_x + plot_w), m.y, kMinEventPx);
    if (hit.lane >= 0) hover_.lane = model.lanes[static_cast<size_t>(hit.lane)].name;
  }
  if (in_plot) {
    hover_.time_ns = axis.toTime(m.x);
    dl->AddLine(ImVec2(m.x, clip_min.y), ImVec2(m.x, clip_max.y), ImGui::GetColorU32(ImGuiCol_Text, 0.5f));
    if (io.MouseWheel != 0) {
      view->zoomAt((m.x - plot_x) / plot_w, std::pow(0.8, io.MouseWheel));
      view->commit();
    }
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      drag_ = io.KeyShift ? Drag::kSelectRange : Drag::kPan;
      drag_start_ns_ = axis.toTime(m.x) - off;
      dragged_ = false;
    } else if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
      drag_ = Drag::kZoomRange;
      drag_start_ns_ = axis.toTime(m.x) - off;
      dragged_ = false;
    }
    if (hit.lane >= 0 && model.lanes[static_cast<size_t>(hit.lane)].kind == LaneKind::kLink) {
      const Lane& link = model.lanes[static_cast<size_t>(hit.lane)];
      view->hoverLink({link.src, link.dst});
      if (drag_ == Drag::kNone && m.y >= layout[static_cast<size_t>(hit.lane)].y + layout[static_cast<size_t>(hit.lane)].header) {
        const int64_t a = axis.toTime(m.x), b = axis.toTime(m.x + 1);
        ImGui::BeginTooltip();
        ImGui::Text("%s, at %s (%s per pixel, from %s)", link.name.c_str(),
                    format::durationSignificant(static_cast<double>(a - model.start_ns)).c_str(),
                    format::durationSignificant(axis.nsPerPixel()).c_str(), linkLevelName(linkLevel(link, axis)));
        if (!link.messages.empty()) {
          const MessageSpan span = messagesIn(link, a, b);
          if (span.count == 1) {
            const LinkMessage& one = link.messages[static_cast<size_t>(span.first)];
            ImGui::Text("one message: %s in %s", format::bytesSignificant(static_cast<double>(one.bytes)).c_str(),
                        format::durationSignificant(static_cast<double>(one.end_ns - one.start_ns)).c_str());
          } else {
            ImGui::Text("%lld messages here, %s", static_cast<long long>(span.count),
                        format::bytesSignificant(static_cast<double>(span.bytes)).c_str());
          }
        }
        ImGui::EndTooltip();
      }
    }
    if (hit.event >= 0) {
      const Lane& lane = model.lanes[static_cast<size_t>(hit.lane)];
      const TimelineEvent& e = lane.rows[static_cast<size_t>(hit.row)].events[static_cast<size_t>(hit.event)];
      if (hit.count == 1) hover_.collective = e.collective;
      if (drag_ == Drag::kNone || !dragged_) {
        ImGui::BeginTooltip();
        if (hit.count > 1) {
          ImGui::Text("%d events (zoom in to see them)", hit.count);
        } else {
          ImGui::Text("%s on %s", model.labels[static_cast<size_t>(e.label)].c_str(), lane.name.c_str());
          ImGui::Text("start %s, duration %s", format::durationSignificant(static_cast<double>(e.start_ns - model.start_ns)).c_str(),
                      format::durationSignificant(static_cast<double>(e.end_ns - e.start_ns)).c_str());
          if (e.collective >= 0) {
            const auto& c = model.analysis.collectives[static_cast<size_t>(e.collective)];
            ImGui::Text("#%d  %s seq %lld, %s, %s", e.collective, c.comm.c_str(), static_cast<long long>(c.seq),
                        format::bytesSignificant(static_cast<double>(c.bytes)).c_str(), c.library.c_str());
          }
        }
        ImGui::EndTooltip();
      }
    }
  }
  // A gesture that began in this plot continues while the button is held, wherever the mouse is.
  if (drag_ != Drag::kNone) {
    const ImGuiMouseButton button = drag_ == Drag::kZoomRange ? ImGuiMouseButton_Right : ImGuiMouseButton_Left;
    if (ImGui::IsMouseDragging(button, 3.0f)) dragged_ = true;
    const int64_t now_ns = axis.toTime(std::clamp(m.x, plot_x, plot_x + plot_w)) - off;
    if (dragged_ && drag_ == Drag::kPan) view->panPixels(io.MouseDelta.x, plot_w);
    if (dragged_ && drag_ != Drag::kPan) {
      float x0 = axis.toX(std::min(drag_start_ns_, now_ns) + off), x1 = axis.toX(std::max(drag_start_ns_, now_ns) + off);
      dl->AddRectFilled(ImVec2(x0, clip_min.y), ImVec2(x1, clip_max.y), ImGui::GetColorU32(ImGuiCol_TextSelectedBg));
    }
    if (ImGui::IsMouseReleased(button)) {
      const TimeRange r{std::min(drag_start_ns_, now_ns), std::max(drag_start_ns_, now_ns)};
      if (!dragged_) {
        if (drag_ == Drag::kPan && hit.event >= 0 && hit.count == 1) {
          selected_ = model.lanes[static_cast<size_t>(hit.lane)].rows[static_cast<size_t>(hit.row)]
                          .events[static_cast<size_t>(hit.event)].collective;
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
  }
  // Lane names: click folds, right-click opens hide / pin.
  if (hovered_area && m.x < plot_x && hit.lane >= 0 &&
      m.y < layout[static_cast<size_t>(hit.lane)].y + layout[static_cast<size_t>(hit.lane)].header) {
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
      flags_[static_cast<size_t>(hit.lane)].collapsed = !flags_[static_cast<size_t>(hit.lane)].collapsed;
    } else if (ImGui::IsMouseClicked(ImGuiMouseButton_Right)) {
      menu_lane_ = hit.lane;
      ImGui::OpenPopup("lane menu");
    }
  }
  if (ImGui::BeginPopup("lane menu")) {
    if (menu_lane_ >= 0 && static_cast<size_t>(menu_lane_) < flags_.size()) {
      LaneFlags& f = flags_[static_cast<size_t>(menu_lane_)];
      ImGui::TextDisabled("%s", model.lanes[static_cast<size_t>(menu_lane_)].name.c_str());
      if (ImGui::MenuItem(f.pinned ? "Unpin" : "Pin to the top")) f.pinned = !f.pinned;
      if (ImGui::MenuItem("Hide")) f.hidden = true;
      if (ImGui::MenuItem(f.collapsed ? "Unfold" : "Fold")) f.collapsed = !f.collapsed;
    }
    ImGui::EndPopup();
  }
  ImGui::EndChild();
}

}  // namespace ringside::gui
