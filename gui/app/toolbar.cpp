#include "toolbar.h"

#include <imgui.h>

#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

void drawStatusLine(const TimelineModel& model, const ViewState& view) {
  const auto& a = model.analysis;
  ImGui::Text(
      "%s  |  %d ranks, %zu collectives, %zu links  |  view %s .. %s  |  ? for keys",
      model.path.c_str(), a.world_size, a.collectives.size(), a.links.size(),
      format::durationSignificant(static_cast<double>(view.range().t0 - model.start_ns)).c_str(),
      format::durationSignificant(static_cast<double>(view.range().t1 - model.start_ns)).c_str());
}

void drawSearch(const ToolbarContext& c) {
  SearchBox& s = c.search;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 18);
  if (s.focus) {
    ImGui::SetKeyboardFocusHere();
    s.focus = false;
  }
  const bool entered = ImGui::InputTextWithHint("##search", "search: op:allreduce size>1M rank:2", s.text,
                                                sizeof s.text, ImGuiInputTextFlags_EnterReturnsTrue);
  s.active = ImGui::IsItemActive();
  if (entered) {
    s.run(c.model);
    c.step_search(true);
    ImGui::SetKeyboardFocusHere(-1);  // stay in the box: Enter again steps on
  } else if (ImGui::IsItemEdited()) {
    s.run(c.model);
  }
  ImGui::SameLine();
  if (ImGui::ArrowButton("prev", ImGuiDir_Left)) c.step_search(false);
  ImGui::SameLine();
  if (ImGui::ArrowButton("next", ImGuiDir_Right)) c.step_search(true);
  ImGui::SameLine();
  if (!s.error.empty()) {
    ImGui::TextColored(ImVec4(1, 0.4f, 0.3f, 1), "%s", s.error.c_str());
  } else if (s.text[0] != '\0') {
    ImGui::Text("%d / %zu", s.cursor.position() + 1, s.cursor.matches().size());
  }
}

void drawLanesPopup(const TimelineModel& model, TimelineView& timeline) {
  if (!ImGui::BeginPopup("lanes")) return;
  auto& flags = timeline.laneFlags();
  for (size_t i = 0; i < flags.size() && i < model.lanes.size(); ++i) {
    bool shown = !flags[i].hidden;
    if (ImGui::Checkbox(model.lanes[i].name.c_str(), &shown)) flags[i].hidden = !shown;
    ImGui::SameLine();
    ImGui::PushID(static_cast<int>(i));
    ImGui::Checkbox("pin", &flags[i].pinned);
    ImGui::PopID();
  }
  if (ImGui::Button("show all")) {
    for (auto& f : flags) f.hidden = false;
  }
  ImGui::EndPopup();
}

}  // namespace

void SearchBox::run(const TimelineModel& model) {
  error.clear();
  cursor.set(searchCollectives(model, text, &error));
}

void drawToolbar(const ToolbarContext& c) {
  drawStatusLine(c.model, c.view);
  drawSearch(c);
  ImGui::SameLine();
  if (ImGui::Button("Fit")) {
    c.view.fit();
    c.view.commit();
  }
  ImGui::SameLine();
  if (ImGui::Button("Undo")) c.view.undo();
  ImGui::SameLine();
  if (ImGui::Button("Redo")) c.view.redo();
  ImGui::SameLine();
  if (ImGui::Button("Lanes")) ImGui::OpenPopup("lanes");
  drawLanesPopup(c.model, c.timeline);
  ImGui::SameLine();
  if (ImGui::Button(c.backend.dark() ? "Light" : "Dark")) c.backend.setDark(!c.backend.dark());
  ImGui::SameLine();
  if (ImGui::Button("?")) c.show_help = !c.show_help;
}

}  // namespace ringside::gui
