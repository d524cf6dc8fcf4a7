#include "topology_view.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ringside/format/units.h"
#include "ringside/gui/palette.h"

namespace ringside::gui {
namespace {

constexpr float kLegendWidth = 300.0f;
constexpr float kUsedThickness = 3.0f;
constexpr float kIdleThickness = 3.0f;
constexpr float kDash = 7.0f, kGap = 5.0f;

ImU32 col(Rgb c, int alpha = 255) { return IM_COL32(c.r, c.g, c.b, alpha); }

void dashedLine(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 color, float thickness) {
  const float dx = b.x - a.x, dy = b.y - a.y, len = std::hypot(dx, dy);
  if (len <= 0) return;
  const float ux = dx / len, uy = dy / len;
  for (float t = 0; t < len; t += kDash + kGap) {
    const float e = std::min(len, t + kDash);
    dl->AddLine(ImVec2(a.x + ux * t, a.y + uy * t), ImVec2(a.x + ux * e, a.y + uy * e), color, thickness);
  }
}

void arrow(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 color, float thickness) {
  const float dx = b.x - a.x, dy = b.y - a.y, len = std::max(1.0f, std::hypot(dx, dy));
  const float ux = dx / len, uy = dy / len, head = 9.0f;
  const ImVec2 base(b.x - ux * head, b.y - uy * head);
  dl->AddLine(a, base, color, thickness);
  dl->AddTriangleFilled(b, ImVec2(base.x - uy * head * 0.5f, base.y + ux * head * 0.5f),
                        ImVec2(base.x + uy * head * 0.5f, base.y - ux * head * 0.5f), color);
}

// The load ramp as a horizontal bar, 0 on the left.
void rampBar(ImDrawList* dl, ImVec2 at, float w, float h) {
  constexpr int kSteps = 32;
  for (int i = 0; i < kSteps; ++i) {
    float x0 = at.x + w * static_cast<float>(i) / kSteps, x1 = at.x + w * static_cast<float>(i + 1) / kSteps;
    dl->AddRectFilled(ImVec2(x0, at.y), ImVec2(x1 + 0.5f, at.y + h),
                      col(loadRgb((static_cast<double>(i) + 0.5) / kSteps)));
  }
}

// The rank as victim (waited for late ranks) and as culprit (caused the others' waiting).
void rankBlameLines(const analyzer::Analysis& a, int rank) {
  int64_t total = 0;
  const analyzer::RankStats* mine = nullptr;
  for (const analyzer::RankStats& r : a.ranks) {
    total += r.caused_wait_ns;
    if (r.rank == rank) mine = &r;
  }
  if (mine == nullptr) return;
  ImGui::Text("waited %s for late ranks", format::duration(mine->wait_ns).c_str());
  if (mine->caused_wait_ns > 0 && total > 0) {
    ImGui::Text("caused %s of the waiting (%.0f%%)", format::duration(mine->caused_wait_ns).c_str(),
                100.0 * static_cast<double>(mine->caused_wait_ns) / static_cast<double>(total));
  }
}

}  // namespace

void TopologyView::reset(const TimelineModel& model, const analyzer::Topology* topology) {
  layout_ = layoutRanks(graphRanks(model.analysis), topology);
  edges_ = graphEdges(model.analysis);
  geometry_ = {};
  loads_.clear();
  drawn_ = false;
  scrub_ = playing_ = false;
  position_ = 0;
}

void TopologyView::draw(const TimelineModel& model, ViewState* view, int selected,
                        const std::optional<TimeRange>& range_selection, ImVec2 size) {
  ImGui::BeginChild("topology", size, false, ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
  const Window w = drawScrubber(model, view, selected, range_selection);
  loads_ = edgeLoads(model.analysis, edges_, w.t0, w.t1, idle_group_, &scale_gbps_);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const ImVec2 graph(std::max(50.0f, avail.x - kLegendWidth), std::max(50.0f, avail.y));
  geometry_ = graphGeometry(layout_, edges_, {origin.x, origin.y}, {graph.x, graph.y});
  drawn_ = true;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  drawEdges(dl, view->hoveredLink());
  drawNodes(dl, model.analysis);
  drawGroups(dl, ImVec2(origin.x + graph.x / 2, origin.y + graph.y / 2));
  drawLegend(dl, model.analysis, ImVec2(origin.x + graph.x + 10, origin.y + 4));
  hoverGraph(model.analysis, view, graph);
  ImGui::EndChild();
}

// The scrubber's controls and the line naming the window the colours follow: the scrubber's,
// else the selected range, else the view range (the whole trace by default). Returns the window.
Window TopologyView::drawScrubber(const TimelineModel& model, ViewState* view, int selected,
                                  const std::optional<TimeRange>& range_selection) {
  const analyzer::Analysis& a = model.analysis;
  const TimeRange base = range_selection ? *range_selection : view->range();
  const char* base_name = range_selection ? "selected range" : "view range";
  int64_t span0 = base.t0, span1 = base.t1;
  std::string span_name = base_name;
  idle_group_.clear();
  if (selected >= 0 && static_cast<size_t>(selected) < a.collectives.size()) {
    const auto& c = a.collectives[static_cast<size_t>(selected)];
    idle_group_ = c.op + " " + c.library;
    span0 = c.first_start_ns;
    span1 = std::max(c.last_end_ns, c.first_start_ns + 1);
    span_name = c.op + " " + c.comm + " seq " + std::to_string(c.seq);
  }
  ImGui::Checkbox("scrubber", &scrub_);
  ImGui::SameLine();
  if (ImGui::Button(playing_ ? "Pause" : "Play")) {
    playing_ = !playing_;
    scrub_ = true;
    if (playing_ && position_ >= 1.0f) position_ = 0;
  }
  ImGui::SameLine();
  ImGui::SetNextItemWidth(220);
  if (ImGui::SliderFloat("position", &position_, 0.0f, 1.0f, "%.2f")) scrub_ = true;
  ImGui::SameLine();
  ImGui::SetNextItemWidth(120);
  ImGui::SliderFloat("window", &width_, 0.01f, 1.0f, "%.2f");
  if (playing_) {  // one pass over the span in 4 s
    position_ += ImGui::GetIO().DeltaTime / 4.0f;
    if (position_ >= 1.0f) {
      position_ = 1.0f;
      playing_ = false;
    }
  }
  Window w{base.t0, base.t1};
  if (scrub_) w = scrubWindow(span0, span1, position_, width_);
  ImGui::SameLine();
  ImGui::Text("colours: %s .. %s (%s%s)", format::durationSignificant(static_cast<double>(w.t0 - model.start_ns)).c_str(),
              format::durationSignificant(static_cast<double>(w.t1 - model.start_ns)).c_str(), scrub_ ? "scrubbing " : "",
              scrub_ ? span_name.c_str() : base_name);
  return w;
}

// Idle links first (dashed, no arrow), then links with traffic over them; the hovered one
// underlaid.
void TopologyView::drawEdges(ImDrawList* dl, LinkRef hovered) const {
  const ImU32 highlight = IM_COL32(255, 217, 26, 255);
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < edges_.size(); ++i) {
      const GraphEdge& e = edges_[i];
      if (loads_[i].idle != (pass == 0)) continue;
      const Segment& s = geometry_.edges[i];
      const ImVec2 p0(s.a.x, s.a.y), p1(s.b.x, s.b.y);
      if (hovered == LinkRef{e.src, e.dst}) dl->AddLine(p0, p1, highlight, 8.0f);
      if (loads_[i].idle) {
        dashedLine(dl, p0, p1, col(kIdleRgb), kIdleThickness);
      } else {
        arrow(dl, p0, p1, col(loads_[i].color), kUsedThickness);
      }
    }
  }
}

// A rank: a disc in its lane's colour with its number, outlined red when it was cut off.
void TopologyView::drawNodes(ImDrawList* dl, const analyzer::Analysis& a) const {
  const ImU32 outline = IM_COL32(20, 20, 20, 255);
  for (size_t i = 0; i < layout_.ranks.size(); ++i) {
    const ImVec2 c(geometry_.nodes[i].x, geometry_.nodes[i].y);
    const int rank = layout_.ranks[i];
    const bool cut = std::find(a.cut_off_ranks.begin(), a.cut_off_ranks.end(), rank) != a.cut_off_ranks.end();
    dl->AddCircleFilled(c, geometry_.node_radius, col(rankRgb(rank)), 32);
    dl->AddCircle(c, geometry_.node_radius, cut ? IM_COL32(220, 50, 50, 255) : outline, 32, 2.0f);
    const std::string label = std::to_string(rank);
    const ImVec2 ts = ImGui::CalcTextSize(label.c_str());
    dl->AddText(ImVec2(c.x - ts.x / 2, c.y - ts.y / 2), outline, label.c_str());
  }
}

// Node groups of the topology file: the node's name outside its first rank, away from the
// graph's `centre` (and so from the edges).
void TopologyView::drawGroups(ImDrawList* dl, ImVec2 centre) const {
  for (size_t i = 0; i < layout_.ranks.size(); ++i) {
    if (layout_.groups[i].empty() || (i > 0 && layout_.groups[i] == layout_.groups[i - 1])) continue;
    const Vec2 p = geometry_.nodes[i];
    const float dx = p.x - centre.x, dy = p.y - centre.y, len = std::max(1.0f, std::hypot(dx, dy));
    const ImVec2 ts = ImGui::CalcTextSize(layout_.groups[i].c_str());
    const float out = geometry_.node_radius + 6 + std::max(ts.x, ts.y) / 2;
    dl->AddText(ImVec2(p.x + dx / len * out - ts.x / 2, p.y + dy / len * out - ts.y / 2),
                ImGui::GetColorU32(ImGuiCol_TextDisabled), layout_.groups[i].c_str());
  }
}

// The legend right of the graph, from `at` down: the load ramp and its top, the kinds of
// edge and node, and the counts (the report's beside the view's).
void TopologyView::drawLegend(ImDrawList* dl, const analyzer::Analysis& a, ImVec2 at) const {
  const float lx = at.x, lw = kLegendWidth - 20;
  float ly = at.y;
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text),
              dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const float line = ImGui::GetTextLineHeightWithSpacing();
  dl->AddText(ImVec2(lx, ly), text, "link load in the window");
  ly += line;
  rampBar(dl, ImVec2(lx, ly), lw, 12);
  ly += 14;
  bool with_capacity = false, without = false;
  for (const GraphEdge& e : edges_) {
    if (e.idle) continue;
    (e.capacity_gbps > 0 ? with_capacity : without) = true;
  }
  dl->AddText(ImVec2(lx, ly), text, "0");
  const std::string top = without ? "p90 of means " + format::rate(scale_gbps_ * 1e9) : "capacity";
  dl->AddText(ImVec2(lx + lw - ImGui::CalcTextSize(top.c_str()).x, ly), text, top.c_str());
  ly += line;
  if (with_capacity && without) {
    dl->AddText(ImVec2(lx, ly), dim, "(capacity where known)");
    ly += line;
  }
  ly += line * 0.5f;
  arrow(dl, ImVec2(lx, ly + 7), ImVec2(lx + 40, ly + 7), col(loadRgb(0.5)), kUsedThickness);
  dl->AddText(ImVec2(lx + 48, ly), text, "link with traffic (colour: load)");
  ly += line;
  dashedLine(dl, ImVec2(lx, ly + 7), ImVec2(lx + 40, ly + 7), col(kIdleRgb), kIdleThickness);
  dl->AddText(ImVec2(lx + 48, ly), text, "idle link (no bytes)");
  if (!idle_group_.empty()) {  // the analyzer's idle links of the selected collective's group
    ly += line;
    dl->AddText(ImVec2(lx + 48, ly), dim, ("in " + idle_group_).c_str());
  }
  ly += line;
  dl->AddCircleFilled(ImVec2(lx + 20, ly + 7), 7, col(rankRgb(0)), 16);
  dl->AddText(ImVec2(lx + 48, ly), text, "rank (its lane's colour)");
  ly += line * 1.5f;
  int idle = 0;
  for (const EdgeLoad& l : loads_) idle += l.idle ? 1 : 0;
  const std::string counts = std::to_string(layout_.ranks.size()) + " ranks, " +
                             std::to_string(edges_.size() - static_cast<size_t>(idle)) +
                             " links used, " + std::to_string(idle) + " idle here";
  dl->AddText(ImVec2(lx, ly), text, counts.c_str());
  // The report's count (its Idle links table) beside it: links idle over the whole trace
  // and during some op, so the two never seem to disagree ("2 idle" vs "8").
  ly += line;
  const std::string report =
      "report: " + std::to_string(a.idle_links.size()) + " idle (trace or an op)";
  dl->AddText(ImVec2(lx, ly), dim, report.c_str());
}

// The mouse over the graph: a node (its rank and machine) or else an edge (its bytes, load and
// capacity; it becomes the hovered link the timeline outlines too).
void TopologyView::hoverGraph(const analyzer::Analysis& a, ViewState* view,
                              ImVec2 graph) const {
  ImGui::InvisibleButton("graph", graph);
  if (!ImGui::IsItemHovered()) return;
  const ImVec2 m = ImGui::GetIO().MousePos;
  const int node = nodeAt(geometry_, {m.x, m.y});
  const int edge = node >= 0 ? -1 : edgeAt(geometry_, {m.x, m.y}, 5.0f);
  if (node >= 0) {
    const size_t i = static_cast<size_t>(node);
    ImGui::BeginTooltip();
    ImGui::Text("rank %d%s%s", layout_.ranks[i], layout_.groups[i].empty() ? "" : " on ",
                layout_.groups[i].c_str());
    rankBlameLines(a, layout_.ranks[i]);
    ImGui::EndTooltip();
  } else if (edge >= 0) {
    const GraphEdge& e = edges_[static_cast<size_t>(edge)];
    view->hoverLink({e.src, e.dst});
    ImGui::BeginTooltip();
    ImGui::Text("%d -> %d", e.src, e.dst);
    if (e.idle) {
      ImGui::TextUnformatted("idle: no bytes in the whole trace");
    } else if (loads_[static_cast<size_t>(edge)].idle) {
      ImGui::Text("idle during %s (%s over the trace)", idle_group_.c_str(),
                  format::bytesSignificant(static_cast<double>(e.bytes)).c_str());
    } else {
      const EdgeLoad& l = loads_[static_cast<size_t>(edge)];
      ImGui::Text("%s over the trace",
                  format::bytesSignificant(static_cast<double>(e.bytes)).c_str());
      ImGui::Text("%s in the window (%.0f%% of %s)", format::rate(l.gbps * 1e9).c_str(),
                  l.fraction * 100, e.capacity_gbps > 0 ? "capacity" : "the busiest link's peak");
    }
    if (e.capacity_gbps > 0)
      ImGui::Text("capacity %s", format::rate(e.capacity_gbps * 1e9).c_str());
    for (const std::string& g : e.idle_during) ImGui::Text("idle during %s", g.c_str());
    ImGui::EndTooltip();
  }
}

std::string TopologyView::layoutJson() const {
  return drawn_ ? geometryJson(layout_, edges_, loads_, geometry_) : std::string();
}

}  // namespace ringside::gui
