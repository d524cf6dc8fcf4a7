// The recording window's rules (collector/window.h): pure functions, tested on their own.
#include "ringside/collector/window.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "ringside/format/units.h"

namespace ringside::collector {
namespace {

bool parseCount(std::string_view text, int64_t* out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(text.data(), end, *out);
  return ec == std::errc() && p == end && *out >= 0;
}

std::string seconds(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g s", static_cast<double>(ns) / 1e9);
  return buf;
}

}  // namespace

bool windowWanted(const WindowConfig& c, const WindowInputs& in) {
  if (c.steps && in.markers > 0) {
    const int64_t step = in.markers - 1;
    if (step < c.step_begin || step >= c.step_end) return false;
  }
  if (c.time) {
    if (in.elapsed_ns < c.delay_ns) return false;
    if (c.duration_ns != kNoEnd && in.elapsed_ns - c.delay_ns >= c.duration_ns) return false;
  }
  if (!c.trigger_file.empty() && in.touches % 2 == 0) return false;
  return true;
}

bool parseStepRange(std::string_view text, int64_t* begin, int64_t* end) {
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return false;
  std::string_view a = text.substr(0, colon), b = text.substr(colon + 1);
  int64_t first = 0, last = kNoEnd;
  if (a.empty() && b.empty()) return false;
  if (!a.empty() && !parseCount(a, &first)) return false;
  if (!b.empty() && !parseCount(b, &last)) return false;
  if (last <= first) return false;
  *begin = first;
  *end = last;
  return true;
}

bool parseDetail(std::string_view text, Detail* out) {
  for (Detail d : {Detail::kAuto, Detail::kCalls, Detail::kLinks, Detail::kMessages}) {
    if (text == detailName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

const char* detailName(Detail d) {
  switch (d) {
    case Detail::kCalls: return "calls";
    case Detail::kLinks: return "links";
    case Detail::kMessages: return "messages";
    case Detail::kAuto: break;
  }
  return "auto";
}

bool parseSecondsNs(std::string_view text, int64_t* ns) {
  // format/'s duration grammar, bare numbers in seconds; at most 9e9 s, as before.
  double v = 0;
  if (!format::parseDuration(text, format::BareDuration::kSeconds, &v) || !(v < 9e18)) return false;
  *ns = static_cast<int64_t>(std::llround(v));
  return true;
}

std::string describeWindow(const WindowConfig& c) {
  std::string out;
  auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (c.steps) {
    add("steps " + std::to_string(c.step_begin) + ":" +
        (c.step_end == kNoEnd ? std::string() : std::to_string(c.step_end)) +
        " (and the calls before the first step marker)");
  }
  if (c.time) {
    add(c.duration_ns == kNoEnd
            ? "from " + seconds(c.delay_ns) + " after start"
            : seconds(c.delay_ns) + " to " + seconds(c.delay_ns + c.duration_ns) + " after start");
  }
  if (!c.trigger_file.empty()) add("trigger file " + c.trigger_file);
  return out.empty() ? "everything" : out;
}

}  // namespace ringside::collector
