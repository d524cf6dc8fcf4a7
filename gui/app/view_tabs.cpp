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
}

void ViewTabs::draw(const TimelineModel& model, ViewState* view, TimelineView* timeline) {
  auto tab = [&](const char* label, const char* name) {
    const ImGuiTabItemFlags flags = select_ == name ? ImGuiTabItemFlags_SetSelected : ImGuiTabItemFlags_None;
    return ImGui::BeginTabItem(label, nullptr, flags);
  };
  if (ImGui::BeginTabBar("views", ImGuiTabBarFlags_None)) {
    if (tab("Timeline", "timeline")) {
      timeline->draw(model, view);
      ImGui::EndTabItem();
    }
    if (tab("Topology", "topology")) {
      const float h = std::max(200.0f, ImGui::GetContentRegionAvail().y * 0.6f);
      topology_.draw(model, view, timeline->selected(), ImVec2(0, h));
      timeline->draw(model, view);
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
  view->endFrame();
}

std::string viewCsv(const TimelineModel& model, const std::string& view) {
  if (view == "matrix") return matrixCsv(trafficMatrix(model.analysis));
  std::vector<StatsRow> rows = statsRows(model.analysis);
  std::vector<int> all(rows.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  return statsCsv(rows, all);
}

}  // namespace ringside::gui
