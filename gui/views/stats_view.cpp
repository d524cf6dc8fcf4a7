#include "stats_view.h"

#include <imgui.h>

#include <cstring>

#include "ringside/format/units.h"

namespace ringside::gui {

void StatsView::reset(const TimelineModel& model) {
  rows_ = statsRows(model.analysis);
  shown_ = filterStats(rows_, filter_);
}

void StatsView::draw() {
  char buf[256] = {};
  std::strncpy(buf, filter_.c_str(), sizeof buf - 1);
  ImGui::TextUnformatted("filter");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(220);
  bool refilter = false;
  if (ImGui::InputTextWithHint("##filter", "e.g. allreduce KiB", buf, sizeof buf)) {
    filter_ = buf;
    refilter = true;
  }
  ImGui::SameLine();
  ImGui::TextDisabled("%zu of %zu rows", shown_.size(), rows_.size());
  ImGui::SameLine(0, 30);
  export_.draw("stats-csv", [&] { return csv(); });

  const ImGuiTableFlags flags = ImGuiTableFlags_Sortable | ImGuiTableFlags_Resizable | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersOuter | ImGuiTableFlags_BordersV | ImGuiTableFlags_ScrollY |
                                ImGuiTableFlags_SizingStretchProp;
  if (ImGui::BeginTable("stats", kStatsColumns, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    const char* names[kStatsColumns] = {"op", "library", "size", "count", "total", "mean", "p50", "p99", "busbw GB/s"};
    for (int c = 0; c < kStatsColumns; ++c) {
      ImGui::TableSetupColumn(names[c], c == 0 ? ImGuiTableColumnFlags_DefaultSort : ImGuiTableColumnFlags_None, 0.0f,
                              static_cast<ImGuiID>(c));
    }
    ImGui::TableHeadersRow();
    if (ImGuiTableSortSpecs* specs = ImGui::TableGetSortSpecs(); specs && specs->SpecsDirty) {
      if (specs->SpecsCount > 0) {
        const ImGuiTableColumnSortSpecs& s = specs->Specs[0];
        sortStats(&rows_, static_cast<StatsColumn>(s.ColumnUserID), s.SortDirection != ImGuiSortDirection_Descending);
      }
      specs->SpecsDirty = false;
      refilter = true;
    }
    if (refilter) shown_ = filterStats(rows_, filter_);
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(shown_.size()));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const StatsRow& r = rows_[static_cast<size_t>(shown_[static_cast<size_t>(i)])];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.op.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(r.library.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(sizeLabel(r).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(r.count));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(format::durationSignificant(static_cast<double>(r.total_ns)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(format::durationSignificant(r.mean_ns).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(format::durationSignificant(static_cast<double>(r.p50_ns)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(format::durationSignificant(static_cast<double>(r.p99_ns)).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%.3g", r.busbw_gbps);
      }
    }
    ImGui::EndTable();
  }
}

}  // namespace ringside::gui
