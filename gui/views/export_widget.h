// gui/export_widget.h — the "CSV file [....] [Export CSV]" row under a table: the user
// types a file name, the button writes the table's CSV there and says what happened.
#pragma once

#include <functional>
#include <string>

namespace ringside::gui {

class CsvExportWidget {
 public:
  explicit CsvExportWidget(std::string default_name) : path_(std::move(default_name)) {}
  // `make` is called only when the button is pressed.
  void draw(const char* id, const std::function<std::string()>& make);

 private:
  std::string path_;
  std::string status_;
  bool failed_ = false;
};

}  // namespace ringside::gui
