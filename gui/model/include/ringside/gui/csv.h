// gui/csv.h — CSV text for the viewer's tables (RFC 4180: comma separated, CRLF-free
// lines ending in \n, a field quoted when it holds a comma, a quote, a line break or
// leading/trailing blanks, quotes doubled inside).
// Errors: writeTextFile() returns false + one line in *error.
#pragma once

#include <string>
#include <vector>

namespace ringside::gui {

std::string csvField(const std::string& s);
std::string csvLine(const std::vector<std::string>& fields);  // ends in "\n"
bool writeTextFile(const std::string& path, const std::string& text, std::string* error);

}  // namespace ringside::gui
