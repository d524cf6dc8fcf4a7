#include "report/svg.h"

#include <algorithm>
#include <cmath>

#include "ringside/format/text.h"
#include "ringside/format/units.h"

namespace ringside::cli::svg {

std::string esc(std::string_view text) {
  // Control characters from the trace too (an HTML file may well be printed to a terminal).
  const std::string shown = format::printableText(text);
  std::string out;
  for (char c : shown) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string n(double v) { return format::fixed(std::isfinite(v) ? v : 0.0, 1); }

std::string heat(double f) {
  f = std::clamp(std::isfinite(f) ? f : 0.0, 0.0, 1.0);
  // white -> #fdd835 (yellow) -> #f57c00 (orange) -> #8b0000 (dark red)
  struct C { double r, g, b; };
  const C stops[] = {{255, 255, 255}, {253, 216, 53}, {245, 124, 0}, {139, 0, 0}};
  double x = f * 3;
  int i = std::min(2, static_cast<int>(x));
  double t = x - i;
  auto mix = [&](double a, double b) { return static_cast<int>(a + (b - a) * t + 0.5); };
  return format::printf("#%02x%02x%02x", mix(stops[i].r, stops[i + 1].r),
                        mix(stops[i].g, stops[i + 1].g), mix(stops[i].b, stops[i + 1].b));
}

std::string series(size_t i) {
  static const char* const kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                        "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return kColors[i % (sizeof kColors / sizeof kColors[0])];
}

}  // namespace ringside::cli::svg
