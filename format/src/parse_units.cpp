// format/parse_units.cpp — reading sizes, durations and rates back (units.h): the one grammar
// behind every verb's options, the topology file, RINGSIDE_* variables and the viewer.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "ringside/format/units.h"

namespace ringside::format {
namespace {

struct Unit {
  std::string_view name;
  double scale;
};

// Sizes: binary multiples, as bytes() writes them ("1.5 KiB"); letters in any case.
constexpr Unit kSizeUnits[] = {
    {"", 1},         {"b", 1},
    {"k", 0x1p10},   {"kb", 0x1p10}, {"kib", 0x1p10},
    {"m", 0x1p20},   {"mb", 0x1p20}, {"mib", 0x1p20},
    {"g", 0x1p30},   {"gb", 0x1p30}, {"gib", 0x1p30},
    {"t", 0x1p40},   {"tb", 0x1p40}, {"tib", 0x1p40},
};

// Durations in nanoseconds, as duration() writes them ("12.3 us", "1.23 s", "2m05s" reads as
// two parts, which this grammar does not take).
constexpr Unit kDurationUnits[] = {
    {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
};

// Rates after the decimal prefix: bytes or bits per second.
constexpr Unit kRateUnits[] = {
    {"B/s", 1}, {"Bps", 1}, {"b/s", 0.125}, {"bit/s", 0.125}, {"bit", 0.125}, {"bps", 0.125},
};
constexpr Unit kRatePrefixes[] = {{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};

// 2^63 ns (about 292 years) and 2^63 bytes: what int64_t holds.
constexpr double kInt64Limit = 0x1p63;

// The number at the front of `text` and what follows it. False for no number, a sign, inf/nan.
bool splitNumber(std::string_view text, double* value, std::string_view* unit) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value, std::chars_format::general);
  if (ec != std::errc() || !std::isfinite(*value) || *value < 0) return false;
  *unit = text.substr(static_cast<size_t>(ptr - text.data()));
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

template <size_t N>
const Unit* findUnit(const Unit (&units)[N], std::string_view name) {
  for (const Unit& u : units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

bool refuse(std::string* error, std::string_view what, std::string_view text, std::string_view forms) {
  if (error != nullptr) *error = "bad " + std::string(what) + " '" + std::string(text) + "' (" + std::string(forms) + ")";
  return false;
}

constexpr std::string_view kSizeForms = "a number of bytes, K, M, G or T suffixes allowed: 4096, 64K, 1.5MiB, 25MB";
constexpr std::string_view kRateForms = "e.g. 100Gbit, 100Gb/s, 10Gbps (bits), 25GB/s, 800MB/s (bytes)";

}  // namespace

bool parseSize(std::string_view text, int64_t* bytes, std::string* error) {
  double value = 0;
  std::string_view unit;
  const Unit* u = nullptr;
  if (!splitNumber(text, &value, &unit) || (u = findUnit(kSizeUnits, lower(unit))) == nullptr) {
    return refuse(error, "size", text, kSizeForms);
  }
  const double scaled = std::round(value * u->scale);
  if (!(scaled < kInt64Limit)) return refuse(error, "size", text, "at most 8 EiB");
  *bytes = static_cast<int64_t>(scaled);
  return true;
}

bool parseDuration(std::string_view text, BareDuration bare, double* ns, std::string* error) {
  double value = 0;
  std::string_view unit;
  const char* forms = bare == BareDuration::kRequired ? "a number and ns, us, ms, s, m or h: 500ns, 10us, 2.5ms"
                      : bare == BareDuration::kSeconds ? "seconds, or a number and ns, us, ms, s, m or h: 30, 2.5s, 500ms"
                                                       : "nanoseconds, or a number and ns, us, ms, s, m or h: 1500, 1.5ms";
  if (!splitNumber(text, &value, &unit)) return refuse(error, "duration", text, forms);
  double scale = -1;
  if (unit.empty()) {
    scale = bare == BareDuration::kSeconds ? 1e9 : bare == BareDuration::kNanoseconds ? 1 : -1;
  } else if (const Unit* u = findUnit(kDurationUnits, unit)) {
    scale = u->scale;
  }
  if (scale < 0) return refuse(error, "duration", text, forms);
  const double scaled = value * scale;
  if (!(scaled < kInt64Limit)) return refuse(error, "duration", text, "at most about 292 years");
  *ns = scaled;
  return true;
}

bool parseRate(std::string_view text, double* bytes_per_second, std::string* error) {
  double value = 0;
  std::string_view unit;
  if (!splitNumber(text, &value, &unit)) return refuse(error, "rate", text, kRateForms);
  double scale = 1;
  if (!unit.empty()) {
    if (const Unit* p = findUnit(kRatePrefixes, unit.substr(0, 1))) {
      scale = p->scale;
      unit.remove_prefix(1);
    }
  }
  const Unit* u = findUnit(kRateUnits, unit);
  if (u == nullptr) return refuse(error, "rate", text, kRateForms);
  const double rate = value * scale * u->scale;
  if (!std::isfinite(rate)) return refuse(error, "rate", text, kRateForms);
  *bytes_per_second = rate;
  return true;
}

}  // namespace ringside::format
