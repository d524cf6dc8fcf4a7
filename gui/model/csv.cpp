#include "ringside/gui/csv.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ringside::gui {

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
