#include "overview_view.h"

#include <imgui.h>

#include <algorithm>
#include <string>

namespace ringside::gui {
namespace {

constexpr float kLabelWidth = 120.0f;  // as the timeline's lane names, so both share one x axis
constexpr int kMaxRowPx = 8;

}  // namespace

OverviewAction OverviewView::draw(const TimelineModel& model, const ViewState& view, bool dark, ImageFn image,
                                  void* context) {
  OverviewAction action;
  const Overview& o = model.overview;
  place_ = OverviewPlace{};
  if (o.rows <= 0 || o.bins <= 0 || !model.analysed) return action;
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float avail_w = ImGui::GetContentRegionAvail().x;
  const float label_w = kLabelWidth * ImGui::GetFontSize() / 13.0f;
  const int plot_w = std::max(10, static_cast<int>(avail_w - label_w));
  const float row_px = std::clamp(96.0f / static_cast<float>(o.rows), 1.0f, static_cast<float>(kMaxRowPx));
  const float height = std::max(24.0f, row_px * static_cast<float>(o.rows));
  if (plot_w != width_ || dark != dark_ || &model != model_ || rgba_.empty()) {
    rgba_ = overviewRgba(o, plot_w, dark);
    width_ = plot_w;
    dark_ = dark;
    model_ = &model;
    ++version_;
  }
  drawTitle(o, origin);
  void* tex = image != nullptr ? image(context, rgba_, width_, o.rows, version_) : nullptr;
  const ImVec2 a(origin.x + label_w, origin.y + 2), size(static_cast<float>(plot_w), height);
  drawStrip(model, view, tex, a, size);
  hoverStrip(model, view, a, size, &action);
  ImGui::SetCursorScreenPos(ImVec2(origin.x, a.y + height + 4));
  drawLegend(o, origin.x + avail_w, &action);
  return action;
}

// Left of the strip: its title, the ranks it covers and, when rows group ranks, how many a row,
// each on its own line (one line "ranks x time (grouped)" ran under the strip).
void OverviewView::drawTitle(const Overview& o, ImVec2 origin) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImU32 text = ImGui::GetColorU32(ImGuiCol_Text), dim = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  const int most = o.most_ranks_in_row;
  const float line = ImGui::GetTextLineHeight();
  dl->AddText(ImVec2(origin.x + 4, origin.y), text, "ranks x time");
  dl->AddText(ImVec2(origin.x + 4, origin.y + line), dim,
              ("rank " + std::to_string(o.first_rank.front()) + ".." + std::to_string(o.last_rank.back())).c_str());
  if (most > 1) {
    dl->AddText(ImVec2(origin.x + 4, origin.y + 2 * line), dim, (std::to_string(most) + " a row, mean").c_str());
  }
}

// The strip (`size` from `a`): the image (or a plain box without one), the timeline's range
// outlined, the latest-arriving rank marked at the left edge of its row.
void OverviewView::drawStrip(const TimelineModel& model, const ViewState& view, void* tex, ImVec2 a,
                             ImVec2 size) {
  const Overview& o = model.overview;
  const ImVec2 b(a.x + size.x, a.y + size.y);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  if (tex != nullptr) {
    dl->AddImage(tex, a, b);
  } else {
    dl->AddRectFilled(a, b, ImGui::GetColorU32(ImGuiCol_FrameBg));
  }
  place_ = {a.x, a.y, b.x, b.y, o.rows};
  const double span = static_cast<double>(std::max<int64_t>(1, model.end_ns - model.start_ns));
  auto x_of = [&](int64_t t) {
    return a.x + static_cast<float>(static_cast<double>(t - model.start_ns) / span) * size.x;
  };
  const float rx0 = std::clamp(x_of(view.range().t0), a.x, b.x), rx1 = std::clamp(x_of(view.range().t1), a.x, b.x);
  // Just outside the strip, so the box never hides the first and last rows.
  dl->AddRect(ImVec2(rx0 - 1, a.y - 2), ImVec2(std::max(rx1, rx0 + 2) + 1, b.y + 2),
              ImGui::GetColorU32(ImGuiCol_Text), 0, 0, 1.0f);
  if (o.latest_rank < 0) return;
  for (int r = 0; r < o.rows; ++r) {
    if (o.first_rank[static_cast<size_t>(r)] <= o.latest_rank &&
        o.latest_rank <= o.last_rank[static_cast<size_t>(r)]) {
      const float y = a.y + (static_cast<float>(r) + 0.5f) * size.y / static_cast<float>(o.rows);
      dl->AddTriangleFilled(ImVec2(a.x - 9, y - 5), ImVec2(a.x - 9, y + 5), ImVec2(a.x - 1, y),
                            IM_COL32(255, 60, 60, 255));
      break;
    }
  }
}

// The mouse over the strip (`size` from `a`): the row's ranks and shares under the cursor; a
// click centres the timeline there and scrolls to the row's first rank.
void OverviewView::hoverStrip(const TimelineModel& model, const ViewState& view, ImVec2 a,
                              ImVec2 size, OverviewAction* action) {
  const Overview& o = model.overview;
  const float plot_w = size.x, height = size.y;
  ImGui::SetCursorScreenPos(a);
  ImGui::InvisibleButton("overview", size);
  if (!ImGui::IsItemHovered()) return;
  const double span = static_cast<double>(std::max<int64_t>(1, model.end_ns - model.start_ns));
  const ImVec2 m = ImGui::GetIO().MousePos;
  const int row = std::clamp(static_cast<int>((m.y - a.y) / height * static_cast<float>(o.rows)), 0,
                             o.rows - 1);
  const int bin = std::clamp(static_cast<int>((m.x - a.x) / plot_w * static_cast<float>(o.bins)), 0,
                             o.bins - 1);
  const int64_t t =
      model.start_ns + static_cast<int64_t>(static_cast<double>(m.x - a.x) / plot_w * span);
  ImGui::BeginTooltip();
  const int r0 = o.first_rank[static_cast<size_t>(row)], r1 = o.last_rank[static_cast<size_t>(row)];
  if (r0 == r1) {
    ImGui::Text("rank %d", r0);
  } else {
    ImGui::Text("ranks %d..%d (mean)", r0, r1);
  }
  ImGui::Text("waiting %.0f %%, moving data %.0f %%, outside collectives %.0f %%",
              100.0 * o.waitAt(row, bin), 100.0 * o.moveAt(row, bin),
              100.0 * std::max(0.0f, 1.0f - o.waitAt(row, bin) - o.moveAt(row, bin)));
  ImGui::TextDisabled("click: show this time and rank below");
  ImGui::EndTooltip();
  if (ImGui::IsItemClicked()) {
    const int64_t w = view.range().t1 - view.range().t0;
    action->range = TimeRange{t - w / 2, t - w / 2 + w};
    action->rank = r0;
  }
}

// The legend and the jump to the latest rank, on one line under the strip. Each piece goes on
// the line while it fits (up to `right`), else on the next one (a narrow window wraps).
void OverviewView::drawLegend(const Overview& o, float right, OverviewAction* action) {
  bool first = true;
  auto place = [&](const char* piece, float extra = 0) {
    if (!first) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + ImGui::CalcTextSize(piece).x + extra > right) ImGui::NewLine();
    }
    first = false;
  };
  place("waiting for others");
  ImGui::TextColored(ImVec4(0.96f, 0.55f, 0.12f, 1), "waiting for others");
  place("moving data");
  ImGui::TextColored(ImVec4(0.25f, 0.5f, 0.95f, 1), "moving data");
  place("background: outside collectives");
  ImGui::TextDisabled("background: outside collectives");
  if (o.latest_rank >= 0) {
    const std::string label = "latest to arrive: rank " + std::to_string(o.latest_rank) + " (" +
                              std::to_string(o.latest_count) + "x)";
    place(label.c_str(), 2 * ImGui::GetStyle().FramePadding.x);
    if (ImGui::SmallButton(label.c_str())) action->rank = o.latest_rank;
  }
}

}  // namespace ringside::gui
