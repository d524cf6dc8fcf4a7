#include "common/text_wrap.h"

namespace ringside::cli {

size_t columns(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

std::string shorten(const std::string& s, size_t width) {
  if (columns(s) <= width) return s;
  if (width == 0) return "";
  std::string out;
  size_t n = 0;
  for (size_t i = 0; i < s.size() && n + 1 < width; ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80) ++n;
    out.push_back(s[i]);
    // keep the continuation bytes of the last character
    while (i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xC0) == 0x80) out.push_back(s[++i]);
  }
  return out + "~";
}

std::string wrapText(const std::string& text, size_t width, const std::string& first_indent,
                     const std::string& indent) {
  std::string out;
  std::string line = first_indent;
  size_t words_on_line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    if (word.empty()) continue;
    size_t avail = width > columns(indent) ? width - columns(indent) : 1;
    if (columns(word) > avail) word = shorten(word, avail);
    if (words_on_line > 0 && columns(line) + 1 + columns(word) > width) {
      out += line + "\n";
      line = indent;
      words_on_line = 0;
    }
    if (words_on_line > 0) line += " ";
    line += word;
    ++words_on_line;
  }
  out += line + "\n";
  return out;
}

}  // namespace ringside::cli
