#include "ringside/gui/csv.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ringside::gui {

std::string csvField(const std::string& s) {
  bool quote = s.find_first_of(",\"\r\n") != std::string::npos ||
               (!s.empty() && (s.front() == ' ' || s.back() == ' ' || s.front() == '\t' || s.back() == '\t'));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string csvLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += ',';
    out += csvField(fields[i]);
  }
  return out + "\n";
}

bool writeTextFile(const std::string& path, const std::string& text, std::string* error) {
  if (path.empty()) {
    *error = "no file name given";
    return false;
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int saved = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok) *error = "cannot write " + path + ": " + std::strerror(saved ? saved : errno);
  return ok;
}

}  // namespace ringside::gui
