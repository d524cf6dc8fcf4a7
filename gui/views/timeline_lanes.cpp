#include "timeline_lanes.h"

#include <algorithm>
#include <string>

#include "ringside/format/units.h"
#include "ringside/gui/inspect.h"
#include "ringside/gui/palette.h"
#include "timeline_view.h"

namespace ringside::gui {
namespace {

// The rank's colour from palette.h (the topology view's nodes have the same), with `alpha`
// applied as ImGui applies it.
ImU32 rankColor(int rank, float alpha = 1.0f) {
  const Rgb c = rankRgb(rank);
  return ImGui::GetColorU32(ImVec4(c.r / 255.0f, c.g / 255.0f, c.b / 255.0f, alpha));
}

ImU32 toU32(const RgbF& c, float alpha = 1.0f) {
  return ImGui::GetColorU32(ImVec4(c.r, c.g, c.b, alpha));
}

std::string duration(int64_t ns) { return format::durationSignificant(static_cast<double>(ns)); }

// A rank: its collectives (as many rows as its overlapping calls need), then their phases.
class RankLane final : public TimelineLane {
 public:
  void drawContents(const LaneFrame& f, const LaneGeometry& g,
                    std::vector<TimelineTarget>* targets) const override {
    for (const RowGeometry& rg : g.rows) drawRow(f, rg, targets);
  }
  void hover(const LaneFrame& f, const Lane& lane, const LaneLayout&, const LanePointer& p,
             ViewState*, TimelineHover* out) const override {
    const Hit& hit = p.hit;
    if (hit.event < 0) return;
    const TimelineModel& model = *f.model;
    const TimelineEvent& e =
        lane.rows[static_cast<size_t>(hit.row)].events[static_cast<size_t>(hit.event)];
    if (hit.count == 1) out->collective = e.collective;
    if (p.gesture && p.moved) return;
    ImGui::BeginTooltip();
    if (hit.count > 1) {
      ImGui::Text("%d events (zoom in to see them)", hit.count);
    } else {
      ImGui::Text("%s on %s", model.labels[static_cast<size_t>(e.label)].c_str(),
                  lane.name.c_str());
      ImGui::Text("start %s, duration %s", duration(e.start_ns - model.start_ns).c_str(),
                  duration(e.end_ns - e.start_ns).c_str());
      if (e.collective >= 0) {
        const auto& c = model.analysis.collectives[static_cast<size_t>(e.collective)];
        ImGui::Text(
            "#%d  %s seq %lld, %s, %s", e.collective, c.comm.c_str(), static_cast<long long>(c.seq),
            format::bytesSignificant(static_cast<double>(c.bytes)).c_str(), c.library.c_str());
      }
    }
    ImGui::EndTooltip();
  }

  Hit hitTest(const LaneFrame& f, const Lane& lane, int index, const LaneLayout& l, float x,
              float y) const override {
    return hitRankLane(lane, index, l, f.axis, x, y, f.min_event_px);
  }

 protected:
  ImU32 swatch(const Lane& lane) const override { return rankColor(lane.rank); }
  void drawLabels(const LaneFrame& f, const Lane& lane, const LaneLayout& l) const override {
    if (l.collapsed) return;
    for (size_t r = 0; r < lane.rows.size();
         ++r) {  // "collectives", "collectives 2", "phases", ...
      const float y0 = l.y + l.header + l.row_height * static_cast<float>(r);
      f.dl->AddText(ImVec2(f.label_x + 18, y0 + 1), f.dim, lane.rows[r].name.c_str());
    }
  }

 private:
  // One row's draw items: a merged block (grey, with its count) or one call or phase in its
  // op's or phase's colour, outlined when marked by the search or selected.
  void drawRow(const LaneFrame& f, const RowGeometry& rg,
               std::vector<TimelineTarget>* targets) const {
    const Lane& lane = f.model->lanes[static_cast<size_t>(rg.lane)];
    const auto& events = lane.rows[static_cast<size_t>(rg.row)].events;
    const bool call_row = rg.row < lane.call_rows;
    for (const DrawItem& it : rg.items) {
      const TimelineEvent& e = events[static_cast<size_t>(it.first)];
      const ImVec2 a(it.x0, rg.y0 + 1), b(it.x1, rg.y1 - 1);
      if (it.count > 1) {
        f.dl->AddRectFilled(a, b, f.dim);
        if (it.x1 - it.x0 > 24)
          f.dl->AddText(ImVec2(a.x + 2, a.y), f.text, ("x" + std::to_string(it.count)).c_str());
        continue;
      }
      const std::string& label = f.model->labels[static_cast<size_t>(e.label)];
      RgbF c = nameColor(label, f.dark);
      if (!call_row) c = {c.r * 0.85f, c.g * 0.85f, c.b * 0.85f};  // phases a shade darker
      f.dl->AddRectFilled(a, b, e.failed ? IM_COL32(220, 50, 50, 255) : toU32(c));
      if (f.marked != nullptr && e.collective >= 0 &&
          std::binary_search(f.marked->begin(), f.marked->end(), e.collective)) {
        f.dl->AddRect(a, b, f.mark, 0, 0, 2.0f);
      }
      if (f.selected >= 0 && e.collective == f.selected)
        f.dl->AddRect(a, b, f.highlight, 0, 0, 2.5f);
      if (call_row && e.collective >= 0 && it.x1 - it.x0 >= 6 && targets->size() < 64) {
        targets->push_back({e.collective, lane.rank, it.x0, it.x1, a.y, b.y});
      }
      if (it.x1 - it.x0 > ImGui::CalcTextSize(label.c_str()).x + 4) {
        f.dl->PushClipRect(a, b, true);
        f.dl->AddText(ImVec2(a.x + 2, a.y), f.on_event, label.c_str());
        f.dl->PopClipRect();
      }
    }
  }
};

// A host's header over its ranks' lanes: a name that folds them, nothing to draw or hover.
class HostLane final : public TimelineLane {
 protected:
  ImU32 swatch(const Lane&) const override { return ImGui::GetColorU32(ImGuiCol_TextDisabled); }
};

// A directed link: its bytes/s over time, the column's maximum as the bar, its minimum as a
// line, on the scale every link lane shares.
class LinkLane final : public TimelineLane {
 public:
  void drawContents(const LaneFrame& f, const LaneGeometry& g,
                    std::vector<TimelineTarget>*) const override {
    if (g.counter == nullptr) return;
    const CounterGeometry& cg = *g.counter;
    const Lane& lane = f.model->lanes[static_cast<size_t>(cg.lane)];
    const float y0 = cg.y0, h = cg.y1 - cg.y0 - 2;
    const ImU32 fill = rankColor(lane.src, 0.9f);
    for (const CounterColumn& c : cg.columns) {
      const float hi = y0 + h - static_cast<float>(c.max / f.link_top) * h;
      const float lo = y0 + h - static_cast<float>(c.min / f.link_top) * h;
      f.dl->AddRectFilled(ImVec2(c.x, hi), ImVec2(c.x + 1, y0 + h), fill);
      f.dl->AddLine(ImVec2(c.x, lo), ImVec2(c.x + 1, lo), f.text);  // the min, over the max's bar
    }
  }
  // Over the counter: the time, the level of detail, and the messages under the cursor.
  void hover(const LaneFrame& f, const Lane& link, const LaneLayout& l, const LanePointer& p,
             ViewState* view, TimelineHover*) const override {
    view->hoverLink({link.src, link.dst});
    if (p.gesture || p.pos.y < l.y + l.header) return;
    const TimeAxis& axis = f.axis;
    const int64_t a = axis.toTime(p.pos.x), b = axis.toTime(p.pos.x + 1);
    ImGui::BeginTooltip();
    ImGui::Text("%s, at %s (%s per pixel, from %s)", link.name.c_str(),
                duration(a - f.model->start_ns).c_str(),
                format::durationSignificant(axis.nsPerPixel()).c_str(),
                linkLevelName(linkLevel(link, axis)));
    if (!link.messages.empty()) {
      const MessageSpan span = messagesIn(link, a, b);
      if (span.count == 1) {
        const LinkMessage& one = link.messages[static_cast<size_t>(span.first)];
        ImGui::Text("one message: %s in %s",
                    format::bytesSignificant(static_cast<double>(one.bytes)).c_str(),
                    duration(one.end_ns - one.start_ns).c_str());
      } else {
        ImGui::Text("%lld messages here, %s", static_cast<long long>(span.count),
                    format::bytesSignificant(static_cast<double>(span.bytes)).c_str());
      }
    }
    ImGui::EndTooltip();
  }

 protected:
  ImU32 swatch(const Lane& lane) const override { return rankColor(lane.src, 0.6f); }
  void drawLabels(const LaneFrame& f, const Lane& lane, const LaneLayout& l) const override {
    if (l.collapsed) return;
    if (f.hovered_link == LinkRef{lane.src, lane.dst}) {
      f.dl->AddRect(ImVec2(f.label_x, l.y), ImVec2(f.plot_x + f.plot_w, l.y + l.height),
                    f.highlight, 0, 0, 2.0f);
    }
    f.dl->AddText(ImVec2(f.label_x + 18, l.y + l.header + 1), f.dim,
                  ("peak " + format::rate(lane.counter.max_value)).c_str());
    // Every link lane has one scale: say what its top is and how fine the picture is.
    if (l.height - l.header >= 2 * l.row_height) {
      f.dl->AddText(
          ImVec2(f.label_x + 18, l.y + l.header + l.row_height), f.dim,
          ("top " + format::rate(f.link_top) + ", " + linkLevelName(linkLevel(lane, f.axis)))
              .c_str());
    }
  }
};

}  // namespace

void TimelineLane::drawName(const LaneFrame& f, const Lane& lane, const LaneLayout& l,
                            bool pinned) const {
  f.dl->AddRectFilled(ImVec2(f.label_x, l.y), ImVec2(f.plot_x + f.plot_w, l.y + l.height),
                      f.lane_bg);
  f.dl->AddRectFilled(ImVec2(f.label_x, l.y), ImVec2(f.label_x + 6, l.y + l.height), swatch(lane));
  const std::string name =
      std::string(l.collapsed ? "+ " : "- ") + lane.name + (pinned ? "  [pin]" : "");
  f.dl->AddText(ImVec2(f.label_x + 10, l.y + 2), f.text, name.c_str());
  drawLabels(f, lane, l);
}

void TimelineLane::drawContents(const LaneFrame&, const LaneGeometry&,
                                std::vector<TimelineTarget>*) const {}

void TimelineLane::hover(const LaneFrame&, const Lane&, const LaneLayout&, const LanePointer&,
                         ViewState*, TimelineHover*) const {}

Hit TimelineLane::hitTest(const LaneFrame&, const Lane&, int index, const LaneLayout&, float,
                          float) const {
  return Hit{index, -1, -1, 0};
}

void TimelineLane::drawLabels(const LaneFrame&, const Lane&, const LaneLayout&) const {}

const TimelineLane& timelineLane(LaneKind kind) {
  static const RankLane rank;
  static const HostLane host;
  static const LinkLane link;
  switch (kind) {
    case LaneKind::kRank: return rank;
    case LaneKind::kHost: return host;
    case LaneKind::kLink: return link;
  }
  return host;
}

}  // namespace ringside::gui
