// reference/half.h — IEEE binary16 (f16) and bfloat16 (bf16) conversions.
//
// Written here rather than taken from a library so that the reference
// all-reduce has no dependency. Both directions are exact where the value is
// representable; float -> 16 bits rounds to nearest, ties to even, and keeps
// NaN a (quiet) NaN and infinities infinite. Public so that `ringside bench`
// encodes its inputs with the very conversions the reduction uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace ringside::reference::detail {

inline uint32_t floatBits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

inline float bitsFloat(uint32_t x) {
  float f;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace ringside::reference::detail

namespace ringside::reference {

inline float halfToFloat(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -v : v;
  }
  // inf, NaN (payload kept)
  if (exp == 31) return detail::bitsFloat(sign | 0x7f800000u | (mant << 13));
  return detail::bitsFloat(sign | ((exp + 112) << 23) | (mant << 13));  // rebias 15 -> 127
}

inline uint16_t floatToHalf(float f) {
  const uint32_t x = detail::floatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u)
    return static_cast<uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));  // NaN stays NaN
  if (ax >= 0x477ff000u)
    return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf (and inf)
  if (ax >= 0x38800000u) {                         // normal half: 2^-14 <= |f|
    uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffffu) >> 13);
    const uint32_t rest = ax & 0x1fffu;  // the 13 bits dropped
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0))
      ++h;  // a carry may bump the exponent: right
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half: round(|f| * 2^24) to an integer, ties to even.
  const uint32_t e = ax >> 23;
  if (e < 102) return static_cast<uint16_t>(sign);  // |f| < 2^-25 rounds to zero
  const uint32_t m = (ax & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126 - e;  // 14..24
  uint32_t r = m >> shift;
  const uint32_t rest = m & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (r & 1u) != 0)) ++r;  // may become the smallest normal: right
  return static_cast<uint16_t>(sign | r);
}

inline float bf16ToFloat(uint16_t b) { return detail::bitsFloat(static_cast<uint32_t>(b) << 16); }

inline uint16_t floatToBf16(float f) {
  uint32_t x = detail::floatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even on the 16 dropped bits
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace ringside::reference
