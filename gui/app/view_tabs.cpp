#include "view_tabs.h"

#include <imgui.h>

#include <algorithm>

namespace ringside::gui {

void ViewTabs::reset(const TimelineModel& model, const analyzer::Topology* topology, const std::string& initial,
                     double scrub) {
  topology_.reset(model, topology);
  if (scrub >= 0) topology_.scrubAt(static_cast<float>(scrub));
  matrix_.reset(model);
  stats_.reset(model);
  select_ = initial;
  current_ = initial == "topology" || initial == "matrix" || initial == "stats" ? initial : "timeline";
}

void ViewTabs::draw(const TimelineModel& model, ViewState* view, int selected,
                    const std::optional<TimeRange>& range_selection, const std::function<void()>& draw_timeline) {
  auto tab = [&](const char* label, const char* name) {
    const ImGuiTabItemFlags flags = select_ == name ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
    const bool open = ImGui::BeginTabItem(label, nullptr, flags);
    if (open) current_ = name;
    return open;
  };
  if (ImGui::BeginTabBar("views", ImGuiTabBarFlags_None)) {
    if (tab("Timeline", "timeline")) {
      draw_timeline();
      ImGui::EndTabItem();
    }
    if (tab("Topology", "topology")) {
      const float h = std::max(200.0f, ImGui::GetContentRegionAvail().y * 0.6f);
      topology_.draw(model, view, selected, range_selection, ImVec2(0, h));
      draw_timeline();
      ImGui::EndTabItem();
    }
    if (tab("Traffic matrix", "matrix")) {
      matrix_.draw(model, view);
      ImGui::EndTabItem();
    }
    if (tab("Statistics", "stats")) {
      stats_.draw();
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  select_.clear();
}

std::string viewCsv(const TimelineModel& model, const std::string& view) {
  if (view == "matrix") return matrixCsv(trafficMatrix(model.analysis));
  std::vector<StatsRow> rows = statsRows(model.analysis);
  std::vector<int> all(rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return statsCsv(rows, all);
}

}  // namespace ringside::gui
