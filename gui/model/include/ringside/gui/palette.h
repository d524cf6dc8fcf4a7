// gui/palette.h — the viewer's fixed colours, as plain RGB so tests can check pixels.
//
// Every view takes its colours from here, so the same state gives the same picture:
// a hue per rank (the timeline's golden-ratio steps), one ramp for load and heat
// (topology edges, traffic matrix), one colour for idle links. No ImGui here.
#pragma once

#include <cstdint>

namespace ringside::gui {

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// Rank r: hue r * 0.618034 (mod 1), saturation 0.6, value 0.85 (as the timeline's lanes).
Rgb rankRgb(int rank);

// A link that exists but carried no bytes (analyzer::IdleLink): drawn dashed in this grey.
inline constexpr Rgb kIdleRgb{158, 158, 158};

// The load ramp for 0..1 (clamped): dark blue, cyan, green, yellow, red. Every colour on it
// is saturated, so none is mistaken for kIdleRgb.
Rgb loadRgb(double fraction);

// HSV (all 0..1) to RGB, rounded like Python's colorsys * 255.
Rgb hsvRgb(double h, double s, double v);

}  // namespace ringside::gui
