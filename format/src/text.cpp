#include "ringside/format/text.h"

#include <cstdint>

#include "utf8.h"

namespace ringside::format {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void appendByteEscape(unsigned char c, std::string* out) {
  out->append("\\x");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 0xF]);
}

void appendCodePointEscape(uint32_t cp, std::string* out) {
  out->append("\\u");
  for (int shift = 12; shift >= 0; shift -= 4) out->push_back(kHex[(cp >> shift) & 0xF]);
}

// Code points above U+007F that change what a terminal or viewer shows around them.
bool isInvisibleControl(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

enum class Mode { kValue, kText, kMarkdown };

std::string escape(std::string_view text, Mode mode) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c == '\n' || c == '\t') {
        if (mode == Mode::kText) out.push_back(static_cast<char>(c));
        else appendByteEscape(c, &out);
      } else if (c < 0x20 || c == 0x7F) {
        appendByteEscape(c, &out);
      } else if (mode == Mode::kMarkdown && c == '<') {
        out.append("&lt;");
      } else if (mode == Mode::kMarkdown && c == '&') {
        out.append("&amp;");
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    const size_t n = detail::utf8Length(text, i);
    if (n == 0) {  // a lone byte: 0x9B alone is CSI to an 8-bit terminal
      appendByteEscape(c, &out);
      ++i;
      continue;
    }
    const uint32_t cp = detail::utf8CodePoint(text, i, n);
    if (isInvisibleControl(cp)) appendCodePointEscape(cp, &out);
    else out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) { return escape(text, Mode::kValue); }

std::string printableText(std::string_view text) { return escape(text, Mode::kText); }

std::string markdownText(std::string_view text) { return escape(text, Mode::kMarkdown); }

}  // namespace ringside::format
