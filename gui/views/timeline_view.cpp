#include "timeline_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ringside::gui {
namespace {

constexpr float kLabelWidth = 120.0f;
constexpr float kRulerHeight = 24.0f;
constexpr float kMinEventPx = 3.0f;

// One hue per rank (golden-ratio steps), so neighbouring ranks never look alike.
ImU32 rankColor(int rank, float alpha = 1.0f) {
  float h = std::fmod(static_cast<float>(rank) * 0.618034f, 1.0f);
  float r = 0, g = 0, b = 0;
  ImGui::ColorConvertHSVtoRGB(h, 0.6f, 0.85f, r, g, b);
  return ImGui::GetColorU32(ImVec4(r, g, b, alpha));
}

ImU32 labelColor(int label, float value) {
  float h = std::fmod(0.55f + static_cast<float>(label) * 0.38197f, 1.0f);
  float r = 0, g = 0, b = 0;
  ImGui::ColorConvertHSVtoRGB(h, 0.45f, value, r, g, b);
  return ImGui::GetColorU32(ImVec4(r, g, b, 1.0f));
}

// `digits` significant digits (0: no decimals), then the unit.
std::string fmt(int digits, double v, const char* unit) {
  char buf[64];
  if (digits == 0) {
    std::snprintf(buf, sizeof buf, "%.0f %s", v, unit);
  } else {
    std::snprintf(buf, sizeof buf, "%.*g %s", digits, v, unit);
  }
  return buf;
}

// Tick step: 1, 2 or 5 x 10^k ns, about `target_px` apart.
double tickStep(double ns_per_px, float target_px) {
  double raw = ns_per_px * target_px;
  double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (p * m >= raw) return p * m;
  }
  return p * 10;
}

void drawRuler(ImDrawList* dl, const TimeAxis& axis, int64_t origin, ImVec2 at, float width) {
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 line = ImGui::GetColorU32(ImGuiCol_Border);
  dl->AddRectFilled(at, ImVec2(at.x + width, at.y + kRulerHeight), ImGui::GetColorU32(ImGuiCol_FrameBg));
  const double step = tickStep(axis.nsPerPixel(), 110.0f);
  double first = std::ceil(static_cast<double>(axis.t0 - origin) / step) * step;
  for (double t = first; t <= static_cast<double>(axis.t1 - origin); t += step) {
    float x = axis.toX(origin + static_cast<int64_t>(t));
    dl->AddLine(ImVec2(x, at.y + kRulerHeight - 8), ImVec2(x, at.y + kRulerHeight), line);
    dl->AddText(ImVec2(x + 3, at.y + 3), text, formatDuration(t).c_str());
  }
  dl->AddText(ImVec2(at.x - kLabelWidth + 6, at.y + 3), text, "time");
}

}  // namespace

std::string formatDuration(double ns) {
  double a = std::fabs(ns);
  if (a == 0) return "0";
  if (a < 1e3) return fmt(0, ns, "ns");
  if (a < 1e6) return fmt(4, ns / 1e3, "us");
  if (a < 1e9) return fmt(4, ns / 1e6, "ms");
  return fmt(4, ns / 1e9, "s");
}

std::string formatRate(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return fmt(3, bytes_per_s / 1e9, "GB/s");
  if (bytes_per_s >= 1e6) return fmt(3, bytes_per_s / 1e6, "MB/s");
  if (bytes_per_s >= 1e3) return fmt(3, bytes_per_s / 1e3, "kB/s");
  return fmt(0, bytes_per_s, "B/s");
}

std::string formatBytes(double bytes) {
  if (bytes >= 1 << 30) return fmt(3, bytes / (1 << 30), "GiB");
  if (bytes >= 1 << 20) return fmt(3, bytes / (1 << 20), "MiB");
  if (bytes >= 1 << 10) return fmt(3, bytes / (1 << 10), "KiB");
  return fmt(0, bytes, "B");
}

void TimelineView::reset(const TimelineModel& model) {
  collapsed_.assign(model.lanes.size(), false);
  selected_ = -1;
}

void TimelineView::draw(const TimelineModel& model, ViewState* view) {
  if (collapsed_.size() != model.lanes.size()) collapsed_.resize(model.lanes.size(), false);
  ImGuiIO& io = ImGui::GetIO();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float plot_x = origin.x + kLabelWidth;
  const float plot_w = std::max(10.0f, avail.x - kLabelWidth);
  TimeAxis axis{view->range().t0, view->range().t1, plot_x, plot_w};

  // The ruler stays put; the lanes scroll beneath it.
  drawRuler(ImGui::GetWindowDrawList(), axis, model.start_ns, ImVec2(plot_x, origin.y), plot_w);
  ImGui::Dummy(ImVec2(avail.x, kRulerHeight));
  ImGui::BeginChild("lanes", ImVec2(0, 0), false, ImGuiWindowFlags_NoScrollWithMouse);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 top = ImGui::GetCursorScreenPos();
  const LayoutOptions lopt{ImGui::GetTextLineHeight() + 4, 40.0f, 4.0f};
  std::vector<LaneLayout> layout = layoutLanes(model, collapsed_, top.y, lopt);
  const float total_h = layout.empty() ? 0 : layout.back().y + layout.back().height - top.y;
  const ImVec2 clip_min = ImGui::GetWindowPos();
  const ImVec2 clip_max(clip_min.x + ImGui::GetWindowWidth(), clip_min.y + ImGui::GetWindowHeight());
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 lane_bg = ImGui::GetColorU32(ImGuiCol_FrameBg);
  const ImU32 highlight = ImGui::GetColorU32(ImVec4(1.0f, 0.85f, 0.1f, 1.0f));
  const bool hovered_area = ImGui::IsWindowHovered();

  for (size_t i = 0; i < model.lanes.size(); ++i) {
    const Lane& lane = model.lanes[i];
    const LaneLayout& l = layout[i];
    if (l.y > clip_max.y || l.y + l.height < clip_min.y) continue;  // cull off-screen lanes
    dl->AddRectFilled(ImVec2(origin.x, l.y), ImVec2(plot_x + plot_w, l.y + l.height), lane_bg);
    ImU32 swatch = lane.kind == LaneKind::kRank ? rankColor(lane.rank) : rankColor(lane.src, 0.6f);
    dl->AddRectFilled(ImVec2(origin.x, l.y), ImVec2(origin.x + 6, l.y + l.height), swatch);
    std::string name = std::string(l.collapsed ? "+ " : "- ") + lane.name;
    dl->AddText(ImVec2(origin.x + 10, l.y + 2), text, name.c_str());
    if (lane.kind == LaneKind::kRank) {
      for (size_t r = 0; r < lane.rows.size() && !l.collapsed; ++r) {
        const float y0 = l.y + l.header + l.row_height * static_cast<float>(r);
        dl->AddText(ImVec2(origin.x + 18, y0 + 1), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                    lane.rows[r].name.c_str());
        const auto& events = lane.rows[r].events;
        for (const DrawItem& it : lodEvents(lane.rows[r], axis, kMinEventPx)) {
          const TimelineEvent& e = events[static_cast<size_t>(it.first)];
          ImVec2 a(it.x0, y0 + 1), b(it.x1, y0 + l.row_height - 1);
          if (it.count > 1) {
            dl->AddRectFilled(a, b, ImGui::GetColorU32(ImGuiCol_TextDisabled));
            if (it.x1 - it.x0 > 24) {
              dl->AddText(ImVec2(a.x + 2, a.y), text, ("x" + std::to_string(it.count)).c_str());
            }
            continue;
          }
          dl->AddRectFilled(a, b, e.failed ? IM_COL32(220, 50, 50, 255) : labelColor(e.label, r == 0 ? 0.8f : 0.65f));
          if (selected_ >= 0 && e.collective == selected_) dl->AddRect(a, b, highlight, 0, 0, 2.0f);
          const std::string& label = model.labels[static_cast<size_t>(e.label)];
          if (it.x1 - it.x0 > ImGui::CalcTextSize(label.c_str()).x + 4) {
            dl->PushClipRect(a, b, true);
            dl->AddText(ImVec2(a.x + 2, a.y), IM_COL32(20, 20, 20, 255), label.c_str());
            dl->PopClipRect();
          }
        }
      }
    } else if (!l.collapsed) {
      if (view->hoveredLink() == LinkRef{lane.src, lane.dst}) {  // hovered here or in the topology view
        dl->AddRect(ImVec2(origin.x, l.y), ImVec2(plot_x + plot_w, l.y + l.height), highlight, 0, 0, 2.0f);
      }
      const float y0 = l.y + l.header, h = l.height - l.header - 2;
      const double top_value = std::max(1.0, lane.counter.max_value);
      const ImU32 fill = rankColor(lane.src, 0.9f);
      for (const CounterColumn& c : downsampleCounter(lane.counter, axis)) {
        float hi = y0 + h - static_cast<float>(c.max / top_value) * h;
        float lo = y0 + h - static_cast<float>(c.min / top_value) * h;
        dl->AddRectFilled(ImVec2(c.x, hi), ImVec2(c.x + 1, y0 + h), fill);
        dl->AddLine(ImVec2(c.x, lo), ImVec2(c.x + 1, lo), text);  // the min, over the max's bar
      }
      dl->AddText(ImVec2(origin.x + 18, y0 + 1), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  ("peak " + formatRate(lane.counter.max_value)).c_str());
    }
  }
  ImGui::Dummy(ImVec2(avail.x, total_h));

  // Input: wheel zoom at the cursor, drag to pan, click to select or fold a lane.
  const ImVec2 m = io.MousePos;
  const bool in_plot = hovered_area && m.x >= plot_x && m.x <= plot_x + plot_w;
  if (in_plot) {
    dl->AddLine(ImVec2(m.x, clip_min.y), ImVec2(m.x, clip_max.y), ImGui::GetColorU32(ImGuiCol_Text, 0.5f));
    if (io.MouseWheel != 0) {
      view->zoomAt((m.x - plot_x) / plot_w, std::pow(0.8, io.MouseWheel));
      view->commit();
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 3.0f)) {
      view->panPixels(io.MouseDelta.x, plot_w);
      dragging_ = true;
    }
    Hit hit = hitTest(model, layout, axis, m.x, m.y, kMinEventPx);
    if (hit.lane >= 0 && model.lanes[static_cast<size_t>(hit.lane)].kind == LaneKind::kLink) {
      view->hoverLink({model.lanes[static_cast<size_t>(hit.lane)].src, model.lanes[static_cast<size_t>(hit.lane)].dst});
    }
    if (hit.event >= 0) {
      const Lane& lane = model.lanes[static_cast<size_t>(hit.lane)];
      const TimelineEvent& e = lane.rows[static_cast<size_t>(hit.row)].events[static_cast<size_t>(hit.event)];
      ImGui::BeginTooltip();
      if (hit.count > 1) {
        ImGui::Text("%d events (zoom in to see them)", hit.count);
      } else {
        ImGui::Text("%s on %s", model.labels[static_cast<size_t>(e.label)].c_str(), lane.name.c_str());
        ImGui::Text("start %s, duration %s", formatDuration(static_cast<double>(e.start_ns - model.start_ns)).c_str(),
                    formatDuration(static_cast<double>(e.end_ns - e.start_ns)).c_str());
        if (e.collective >= 0) {
          const auto& c = model.analysis.collectives[static_cast<size_t>(e.collective)];
          ImGui::Text("%s seq %lld, %s, %s", c.comm.c_str(), static_cast<long long>(c.seq),
                      formatBytes(static_cast<double>(c.bytes)).c_str(), c.library.c_str());
        }
      }
      ImGui::EndTooltip();
    }
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
      if (dragging_) {
        view->commit();
      } else if (hit.event >= 0 && hit.count == 1) {
        selected_ = model.lanes[static_cast<size_t>(hit.lane)].rows[static_cast<size_t>(hit.row)]
                        .events[static_cast<size_t>(hit.event)].collective;
      }
      dragging_ = false;
    }
  } else if (hovered_area && m.x < plot_x && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
    Hit hit = hitTest(model, layout, axis, plot_x, m.y, kMinEventPx);
    if (hit.lane >= 0 && m.y < layout[static_cast<size_t>(hit.lane)].y + layout[static_cast<size_t>(hit.lane)].header) {
      collapsed_[static_cast<size_t>(hit.lane)] = !collapsed_[static_cast<size_t>(hit.lane)];
    }
  }
  ImGui::EndChild();
}

}  // namespace ringside::gui
