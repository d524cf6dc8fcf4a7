// align/src/fit.cpp — the mapping that meets a domain's bounds with the most slack.
#include <algorithm>
#include <cmath>
#include <limits>

#include "internal.h"

namespace ringside::align::detail {
namespace {

constexpr double kMaxRate = 1e-3;        // 1000 ppm: beyond any clock NTP would keep
constexpr int kSearchSteps = 90;         // golden-section steps: 2e-3 * 0.618^90 ~ 1e-22
constexpr double kNearBestNs = 1000.0;   // slack always given up to keep the drift small
constexpr double kNearBestShare = 0.5;   // and this share of the best slack
constexpr int kMaxDepth = 3;             // pieces: at most 2^3
constexpr size_t kMinPointsToSplit = 64;

double rel(int64_t t, int64_t ref) { return static_cast<double>(t) - static_cast<double>(ref); }

struct Window {
  double lo;  // max over lower bounds of v - r t'
  double hi;  // min over upper bounds of v - r t'
  double slack() const { return (hi - lo) / 2; }
  double middle() const { return (hi + lo) / 2; }
};

Window window(const std::vector<Point>& lower, const std::vector<Point>& upper, double rate,
              int64_t ref) {
  Window w{-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  for (const Point& p : lower) w.lo = std::max(w.lo, p.v - rate * rel(p.t, ref));
  for (const Point& p : upper) w.hi = std::min(w.hi, p.v - rate * rel(p.t, ref));
  return w;
}

struct Line {
  double offset, rate, slack;
};

// Both sides present: maximize the slack over the rate (a concave function of it), then take the
// rate nearest 0 whose slack is within max(kNearBestNs, kNearBestShare x best) of the best: bounds
// over a short time leave the drift loose (a wide window allows any slope), and clocks NTP keeps
// run within a few ppm of each other; over a long run the window pins the drift down.
Line fitLine(const std::vector<Point>& lower, const std::vector<Point>& upper, int64_t ref) {
  auto slackAt = [&](double r) { return window(lower, upper, r, ref).slack(); };
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double a = -kMaxRate, b = kMaxRate;
  double c = b - phi * (b - a), d = a + phi * (b - a);
  double sc = slackAt(c), sd = slackAt(d);
  for (int i = 0; i < kSearchSteps; ++i) {
    if (sc < sd) {
      a = c;
      c = d;
      sc = sd;
      d = a + phi * (b - a);
      sd = slackAt(d);
    } else {
      b = d;
      d = c;
      sd = sc;
      c = b - phi * (b - a);
      sc = slackAt(c);
    }
  }
  double best_rate = (a + b) / 2;
  const double best = slackAt(best_rate);
  const double good_enough = best - std::max(kNearBestNs, kNearBestShare * std::fabs(best));
  double rate = best_rate;
  if (slackAt(0) >= good_enough) {
    rate = 0;
  } else {
    // Between 0 and the best rate the slack rises: the point nearest 0 still good enough.
    double bad = 0, good = best_rate;
    for (int i = 0; i < 60; ++i) {
      const double mid = (bad + good) / 2;
      (slackAt(mid) >= good_enough ? good : bad) = mid;
    }
    rate = good;
  }
  const Window w = window(lower, upper, rate, ref);
  return {w.middle(), rate, w.slack()};
}

int64_t firstTime(const std::vector<Point>& lower, const std::vector<Point>& upper) {
  int64_t t = INT64_MAX;
  for (const Point& p : lower) t = std::min(t, p.t);
  for (const Point& p : upper) t = std::min(t, p.t);
  return t;
}

Fit fitTwoSided(const std::vector<Point>& lower, const std::vector<Point>& upper, int depth) {
  const int64_t ref = firstTime(lower, upper);
  const Line line = fitLine(lower, upper, ref);
  Fit fit;
  fit.two_sided = true;
  fit.map.pieces = {Piece{INT64_MIN, ref, line.offset, line.rate}};
  fit.slack = line.slack;
  const size_t n = lower.size() + upper.size();
  // One line cannot meet them (the clock's rate changed, e.g. NTP slewing it): split at the
  // median time and fit each half, when both halves keep bounds on both sides.
  if (line.slack < 0 && depth < kMaxDepth && n >= kMinPointsToSplit) {
    std::vector<int64_t> times;
    times.reserve(n);
    for (const Point& p : lower) times.push_back(p.t);
    for (const Point& p : upper) times.push_back(p.t);
    std::nth_element(times.begin(), times.begin() + static_cast<long>(n / 2), times.end());
    const int64_t split = times[n / 2];
    std::vector<Point> l1, l2, u1, u2;
    for (const Point& p : lower) (p.t < split ? l1 : l2).push_back(p);
    for (const Point& p : upper) (p.t < split ? u1 : u2).push_back(p);
    if (!l1.empty() && !l2.empty() && !u1.empty() && !u2.empty()) {
      Fit first = fitTwoSided(l1, u1, depth + 1);
      Fit second = fitTwoSided(l2, u2, depth + 1);
      if (std::min(first.slack, second.slack) > line.slack) {
        second.map.pieces.front().lo = split;
        first.map.pieces.insert(first.map.pieces.end(), second.map.pieces.begin(),
                                second.map.pieces.end());
        fit.map = std::move(first.map);
        fit.slack = std::min(first.slack, second.slack);
      }
    }
  }
  return fit;
}

}  // namespace

int64_t countViolated(const std::vector<Point>& lower, const std::vector<Point>& upper,
                      const Mapping& m) {
  int64_t n = 0;
  for (const Point& p : lower) n += m.at(p.t) < p.v - 0.5 ? 1 : 0;
  for (const Point& p : upper) n += m.at(p.t) > p.v + 0.5 ? 1 : 0;
  return n;
}

Fit fitMapping(std::vector<Point> lower, std::vector<Point> upper, double prior) {
  Fit fit;
  if (lower.empty() || upper.empty()) {
    // One side only (or none): no window to centre in. Keep the prior (the wall-clock estimate)
    // where it meets the bounds, else move it just enough.
    const Window w = window(lower, upper, 0, 0);
    double offset = prior;
    if (!lower.empty()) offset = std::max(offset, w.lo);
    if (!upper.empty()) offset = std::min(offset, w.hi);
    fit.map.pieces = {Piece{INT64_MIN, 0, offset, 0}};
    fit.slack = 0;
    return fit;
  }
  fit = fitTwoSided(lower, upper, 0);
  fit.violated = countViolated(lower, upper, fit.map);
  return fit;
}

}  // namespace ringside::align::detail
