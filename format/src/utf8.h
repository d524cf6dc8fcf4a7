// format/utf8.h — UTF-8 validation shared by the JSON and text writers (private to format/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringside::format::detail {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if invalid (truncated, a stray
// continuation byte, overlong, a surrogate, above U+10FFFF).
inline size_t utf8Length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  if (n == 2 && c < 0xC2) return 0;                          // overlong
  if (n == 3 && c == 0xE0 && byte(i + 1) < 0xA0) return 0;   // overlong
  if (n == 3 && c == 0xED && byte(i + 1) >= 0xA0) return 0;  // surrogate
  if (n == 4 && (c > 0xF4 || (c == 0xF0 && byte(i + 1) < 0x90) ||
                 (c == 0xF4 && byte(i + 1) >= 0x90)))
    return 0;
  return n;
}

// The code point of the valid sequence of `n` bytes at text[i] (n from utf8Length).
inline uint32_t utf8CodePoint(std::string_view text, size_t i, size_t n) {
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(text[k])); };
  if (n == 1) return byte(i);
  uint32_t cp = byte(i) & (0xFFu >> (n + 1));
  for (size_t k = 1; k < n; ++k) cp = (cp << 6) | (byte(i + k) & 0x3F);
  return cp;
}

}  // namespace ringside::format::detail
