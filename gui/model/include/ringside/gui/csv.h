// gui/csv.h — writing the viewer's CSV tables to a file. The CSV syntax itself (RFC 4180,
// lines ending in \n) is ringside/format/csv.h's csvField/csvLine.
// Errors: writeTextFile() returns false + one line in *error.
#pragma once

#include <string>

namespace ringside::gui {

bool writeTextFile(const std::string& path, const std::string& text, std::string* error);

}  // namespace ringside::gui
