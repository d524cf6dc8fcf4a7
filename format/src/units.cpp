#include "ringside/format/units.h"

#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <iterator>

namespace ringside::format {

std::string printf(const char* fmt, ...) {
  char small[256];
  va_list args;
  va_start(args, fmt);
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(small, sizeof small, fmt, args);
  va_end(args);
  std::string out;
  if (n < 0) {
    va_end(again);
    return out;
  }
  if (static_cast<size_t>(n) < sizeof small) {
    out.assign(small, static_cast<size_t>(n));
  } else {
    out.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, again);
    out.resize(static_cast<size_t>(n));
  }
  va_end(again);
  return out;
}

std::string fixed(double value, int digits) { return printf("%.*f", digits, value); }

std::string bytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return printf(value >= 100 ? "%.0f %s" : "%.1f %s", value, kUnits[unit]);
}

std::string bytesWhole(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + " " + kUnits[unit];
}

std::string bytesWholeOrTenths(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  uint64_t whole = bytes;
  while (unit < 4 && whole >= 1024 && whole % 1024 == 0) {
    whole /= 1024;
    ++unit;
  }
  if (whole < 1024 || unit == 4) {
    return printf("%llu %s", static_cast<unsigned long long>(whole), kUnits[unit]);
  }
  // Not a whole number of the next unit: one decimal of the largest unit below it.
  double value = static_cast<double>(bytes);
  unit = 0;
  while (unit < 4 && value >= 1024) {
    value /= 1024;
    ++unit;
  }
  return printf("%.1f %s", value, kUnits[unit]);
}

namespace {

// "%.*g unit", or "%.0f unit" when digits is 0.
std::string significant(int digits, double value, const char* unit) {
  // %g switches to an exponent at 10^digits and above: whole numbers there ("1234 GB/s").
  if (digits == 0 || std::fabs(value) >= std::pow(10.0, digits)) return printf("%.0f %s", value, unit);
  return printf("%.*g %s", digits, value, unit);
}

}  // namespace

std::string bytesSignificant(double bytes, int digits) {
  if (bytes >= 1 << 30) return significant(digits, bytes / (1 << 30), "GiB");
  if (bytes >= 1 << 20) return significant(digits, bytes / (1 << 20), "MiB");
  if (bytes >= 1 << 10) return significant(digits, bytes / (1 << 10), "KiB");
  return significant(0, bytes, "B");
}

std::string duration(int64_t ns) {
  if (ns < 0) return "-";
  if (ns < 1000) return printf("%" PRId64 " ns", ns);
  double v = static_cast<double>(ns);
  if (ns < 1000000) return printf(v < 1e5 ? "%.1f us" : "%.0f us", v / 1e3);
  if (ns < 1000000000) return printf(v < 1e8 ? "%.2f ms" : "%.1f ms", v / 1e6);
  if (ns < 60 * int64_t{1000000000}) return printf("%.2f s", v / 1e9);
  int64_t s = ns / 1000000000;
  if (s < 3600) return printf("%" PRId64 "m%02" PRId64 "s", s / 60, s % 60);
  return printf("%" PRId64 "h%02" PRId64 "m", s / 3600, (s % 3600) / 60);
}

std::string durationFixed(int64_t ns) {
  if (ns >= 1000000000) return fixed(static_cast<double>(ns) / 1e9) + " s";
  if (ns >= 1000000) return fixed(static_cast<double>(ns) / 1e6) + " ms";
  if (ns >= 1000) return fixed(static_cast<double>(ns) / 1e3) + " us";
  return std::to_string(ns) + " ns";
}

std::string durationSignificant(double ns, int digits) {
  double a = std::fabs(ns);
  if (a == 0) return "0";
  if (a < 1e3) return significant(0, ns, "ns");
  if (a < 1e6) return significant(digits, ns / 1e3, "us");
  if (a < 1e9) return significant(digits, ns / 1e6, "ms");
  return significant(digits, ns / 1e9, "s");
}

std::string microsFromNanos(int64_t ns) {
  bool negative = ns < 0;
  uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
  std::string frac = std::to_string(magnitude % 1000);
  frac.insert(0, 3 - frac.size(), '0');
  return (negative ? "-" : "") + std::to_string(magnitude / 1000) + "." + frac;
}

std::string rate(double bytes_per_second, int digits) {
  if (bytes_per_second >= 1e9) return significant(digits, bytes_per_second / 1e9, "GB/s");
  if (bytes_per_second >= 1e6) return significant(digits, bytes_per_second / 1e6, "MB/s");
  if (bytes_per_second >= 1e3) return significant(digits, bytes_per_second / 1e3, "kB/s");
  return significant(0, bytes_per_second, "B/s");
}

std::string count(int64_t count) {
  // The magnitude unsigned: -INT64_MIN does not fit an int64_t.
  uint64_t magnitude = count < 0 ? 0 - static_cast<uint64_t>(count) : static_cast<uint64_t>(count);
  std::string digits = std::to_string(magnitude);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return count < 0 ? "-" + out : out;
}

std::string join(const std::vector<int>& values, std::string_view separator) {
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += separator;
    out += std::to_string(values[i]);
  }
  return out;
}

}  // namespace ringside::format
