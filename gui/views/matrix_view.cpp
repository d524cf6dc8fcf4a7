#include "matrix_view.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

constexpr Rgb kEmptyCell{52, 52, 60};  // fixed, so screenshots do not depend on the theme
ImU32 col(Rgb c) { return IM_COL32(c.r, c.g, c.b, 255); }

}  // namespace

void MatrixView::reset(const TimelineModel& model) { matrix_ = trafficMatrix(model.analysis); }

void MatrixView::draw(const TimelineModel& model, ViewState* view) {
  (void)model;
  const TrafficMatrix& m = matrix_;
  export_.draw("matrix-csv", [&] { return matrixCsv(m); });
  ImGui::Text("bytes sent, row = src rank, column = dst rank; %s in all",
              format::bytesSignificant(static_cast<double>(m.total)).c_str());
  if (m.n == 0) {
    ImGui::TextDisabled("no ranks in this trace");
    return;
  }
  ImGui::BeginChild("matrix", ImVec2(0, 0), false, ImGuiWindowFlags_HorizontalScrollbar);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const float label_w = 60, legend_h = 60;
  Grid g;
  g.cell = std::clamp(
      std::min(avail.x - label_w - 20, avail.y - label_w - legend_h) / static_cast<float>(m.n),
      6.0f, 90.0f);
  g.x0 = origin.x + label_w;
  g.y0 = origin.y + label_w * 0.6f;
  drawAxes(g, origin);
  drawCells(g, view->hoveredLink());
  const float grid = g.cell * static_cast<float>(m.n);
  drawLegend(g, g.y0 + grid + 12, std::min(320.0f, std::max(160.0f, grid)));
  ImGui::InvisibleButton("cells", ImVec2(label_w + grid + 10, label_w * 0.6f + grid + legend_h));
  if (ImGui::IsItemHovered()) hoverCell(g, view);
  ImGui::EndChild();
}

// "dst ->" and "src", and the rank numbers along both edges (every few where cells are narrow).
void MatrixView::drawAxes(const Grid& g, ImVec2 origin) const {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const ImU32 dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const float cell = g.cell, x0 = g.x0, y0 = g.y0;
  const int label_every = std::max(1, static_cast<int>(std::ceil(28.0f / cell)));
  dl->AddText(ImVec2(x0, origin.y), dim, "dst ->");
  dl->AddText(ImVec2(origin.x, y0 - ImGui::GetTextLineHeight() - 2), dim, "src");
  for (int i = 0; i < matrix_.n; i += label_every) {
    const std::string s = std::to_string(i);
    const float w = ImGui::CalcTextSize(s.c_str()).x;
    dl->AddText(ImVec2(x0 + cell * (static_cast<float>(i) + 0.5f) - w / 2,
                       y0 - ImGui::GetTextLineHeight() - 2),
                text, s.c_str());
    dl->AddText(ImVec2(x0 - w - 6,
                       y0 + cell * (static_cast<float>(i) + 0.5f) - ImGui::GetTextLineHeight() / 2),
                text, s.c_str());
  }
}

// A cell per (src, dst) in the heat of its bytes, the hovered link outlined, the bytes written
// in cells wide enough.
void MatrixView::drawCells(const Grid& g, LinkRef hovered) const {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const TrafficMatrix& m = matrix_;
  const float cell = g.cell;
  for (int s = 0; s < m.n; ++s) {
    for (int d = 0; d < m.n; ++d) {
      const ImVec2 a(g.x0 + cell * static_cast<float>(d), g.y0 + cell * static_cast<float>(s));
      const ImVec2 b(a.x + cell - 1, a.y + cell - 1);
      const int64_t v = m.at(s, d);
      dl->AddRectFilled(a, b, col(heatRgb(v, m.max, kEmptyCell)));
      if (hovered == LinkRef{s, d}) dl->AddRect(a, b, IM_COL32(255, 217, 26, 255), 0, 0, 2.0f);
      if (v > 0 && cell >= 56) {
        const std::string t = format::bytesSignificant(static_cast<double>(v));
        const ImVec2 ts = ImGui::CalcTextSize(t.c_str());
        if (ts.x < cell - 4) {
          dl->AddText(ImVec2(a.x + (cell - ts.x) / 2, a.y + (cell - ts.y) / 2),
                      IM_COL32(15, 15, 15, 255), t.c_str());
        }
      }
    }
  }
}

// Legend at `ly`, `lw` wide: the ramp from 1 byte to the largest cell, and the colour of an
// empty cell.
void MatrixView::drawLegend(const Grid& g, float ly, float lw) const {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text);
  const float x0 = g.x0;
  constexpr int kSteps = 32;
  for (int i = 0; i < kSteps; ++i) {
    const float a = x0 + lw * static_cast<float>(i) / kSteps;
    const float b = x0 + lw * static_cast<float>(i + 1) / kSteps;
    dl->AddRectFilled(ImVec2(a, ly), ImVec2(b + 0.5f, ly + 12), col(loadRgb((i + 0.5) / kSteps)));
  }
  dl->AddText(ImVec2(x0, ly + 14), text, "0");
  const std::string top = format::bytesSignificant(static_cast<double>(matrix_.max));
  dl->AddText(ImVec2(x0 + lw - ImGui::CalcTextSize(top.c_str()).x, ly + 14), text, top.c_str());
  dl->AddRectFilled(ImVec2(x0 + lw + 20, ly), ImVec2(x0 + lw + 32, ly + 12), col(kEmptyCell));
  dl->AddText(ImVec2(x0 + lw + 38, ly - 1), text, "no bytes");
}

// The cell under the mouse: its bytes, their share, and both ranks' totals; off the diagonal it
// becomes the hovered link the timeline and topology outline too.
void MatrixView::hoverCell(const Grid& g, ViewState* view) const {
  const TrafficMatrix& m = matrix_;
  const ImVec2 p = ImGui::GetIO().MousePos;
  const int d = static_cast<int>(std::floor((p.x - g.x0) / g.cell));
  const int s = static_cast<int>(std::floor((p.y - g.y0) / g.cell));
  if (p.x < g.x0 || p.y < g.y0 || s < 0 || d < 0 || s >= m.n || d >= m.n) return;
  const int64_t v = m.at(s, d);
  if (s != d) view->hoverLink({s, d});
  ImGui::BeginTooltip();
  ImGui::Text("%d -> %d: %lld bytes (%s)", s, d, static_cast<long long>(v),
              format::bytesSignificant(static_cast<double>(v)).c_str());
  if (m.total > 0) {
    ImGui::Text("%.1f%% of all bytes",
                100.0 * static_cast<double>(v) / static_cast<double>(m.total));
  }
  ImGui::Text(
      "rank %d sent %s, rank %d received %s", s,
      format::bytesSignificant(static_cast<double>(m.row_total[static_cast<size_t>(s)])).c_str(), d,
      format::bytesSignificant(static_cast<double>(m.col_total[static_cast<size_t>(d)])).c_str());
  ImGui::EndTooltip();
}

}  // namespace ringside::gui
