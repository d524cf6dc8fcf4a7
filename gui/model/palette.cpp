#include "ringside/gui/palette.h"

#include <algorithm>
#include <cmath>

namespace ringside::gui {
namespace {

uint8_t byte(double v) { return static_cast<uint8_t>(std::lround(std::clamp(v, 0.0, 1.0) * 255.0)); }

}  // namespace

Rgb hsvRgb(double h, double s, double v) {
  h = std::fmod(h, 1.0);
  if (h < 0) h += 1.0;
  const double f6 = h * 6.0;
  const int i = static_cast<int>(f6) % 6;
  const double f = f6 - std::floor(f6);
  const double p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  double r = v, g = t, b = p;
  switch (i) {
    case 0: r = v; g = t; b = p; break;
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = t; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = t; g = p; b = v; break;
    default: r = v; g = p; b = q; break;
  }
  return {byte(r), byte(g), byte(b)};
}

Rgb rankRgb(int rank) { return hsvRgb(std::fmod(static_cast<double>(rank) * 0.618034, 1.0), 0.6, 0.85); }

Rgb loadRgb(double fraction) {
  static constexpr Rgb kStops[] = {{40, 70, 170}, {20, 150, 210}, {40, 185, 80}, {235, 200, 30}, {225, 45, 35}};
  constexpr int kLast = static_cast<int>(sizeof kStops / sizeof kStops[0]) - 1;
  if (!(fraction > 0)) return kStops[0];  // also NaN
  if (fraction >= 1) return kStops[kLast];
  const double at = fraction * kLast;
  const int i = static_cast<int>(at);
  const double f = at - i;
  auto mix = [f](uint8_t a, uint8_t b) {
    return static_cast<uint8_t>(std::lround(a + (static_cast<double>(b) - a) * f));
  };
  return {mix(kStops[i].r, kStops[i + 1].r), mix(kStops[i].g, kStops[i + 1].g),
          mix(kStops[i].b, kStops[i + 1].b)};
}

}  // namespace ringside::gui
