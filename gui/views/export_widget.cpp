#include "export_widget.h"

#include <imgui.h>

#include <cstring>
#include <vector>

#include "ringside/gui/csv.h"

namespace ringside::gui {

void CsvExportWidget::draw(const char* id, const std::function<std::string()>& make) {
  ImGui::PushID(id);
  std::vector<char> buf(1024, '\0');
  std::memcpy(buf.data(), path_.data(), std::min(path_.size(), buf.size() - 1));
  ImGui::TextUnformatted("CSV file");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(320);
  if (ImGui::InputText("##path", buf.data(), buf.size())) path_ = buf.data();
  ImGui::SameLine();
  if (ImGui::Button("Export CSV")) {
    std::string error;
    const std::string text = make();
    failed_ = !writeTextFile(path_, text, &error);
    status_ = failed_ ? error : "wrote " + path_ + " (" + std::to_string(text.size()) + " bytes)";
  }
  if (!status_.empty()) {
    ImGui::SameLine();
    if (failed_) {
      ImGui::TextColored(ImVec4(1, 0.35f, 0.3f, 1), "%s", status_.c_str());
    } else {
      ImGui::TextDisabled("%s", status_.c_str());
    }
  }
  ImGui::PopID();
}

}  // namespace ringside::gui
