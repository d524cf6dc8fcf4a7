// align/src/offsets.cpp — joint offsets: every bound between two domains at once.
//
// The per-domain fits (align.cpp) place each domain against the others one at a time; bounds
// that chain through several domains (a ring's messages go one way: h0 -> h1 -> ... -> h0) tighten
// each domain only through its neighbours. Here, with the mappings' shapes fixed, the remaining
// corrections d satisfy difference constraints d_B - d_A >= c_AB, one per pair of domains (the
// tightest of its bounds). With d_0 = 0, the smallest feasible d_B is the longest path 0 -> B and
// the largest is minus the longest path B -> 0 (Bellman-Ford both ways); the feasible set is
// convex and holds both, so the midpoint of every domain's interval is feasible at once, and half
// the interval is what the evidence leaves unknown.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "joint.h"

namespace ringside::align::detail {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

struct Edge {
  int32_t from, to;
  double c;  // d_to - d_from >= c
};

// Longest paths from node 0; false when a positive cycle makes them unbounded (the bounds
// contradict each other).
bool longestPaths(size_t n, const std::vector<Edge>& edges, bool reversed, std::vector<double>* out) {
  std::vector<double> dist(n + 1, kNegInf);  // one spare, so that dist[0] always exists
  double* first = dist.data();
  if (first == nullptr) return false;  // (never: n + 1 > 0; says so to GCC's null checks)
  *first = 0;
  bool settled = false;
  for (size_t round = 0; round <= n && !settled; ++round) {
    settled = true;
    for (const Edge& e : edges) {
      const auto a = static_cast<size_t>(reversed ? e.to : e.from);
      const auto b = static_cast<size_t>(reversed ? e.from : e.to);
      if (a >= n || b >= n || dist[a] == kNegInf) continue;
      const double via = dist[a] + e.c;
      if (via > dist[b] + 0.5) {
        dist[b] = via;
        settled = false;
      }
    }
  }
  dist.resize(n);
  *out = std::move(dist);
  return settled;
}

// The pairs bounded both ways. Shifted by s, the true correction e = (t_b - t_a) - (s_b - s_a)
// between a and b lies in [c_ab - (s_b - s_a), (s_a - s_b) - c_ba] (d_b - d_a >= c_ab and
// d_a - d_b >= c_ba hold for the truth): |e| <= the larger end's size.
void linksOf(const std::unordered_map<uint64_t, double>& tightest, const std::vector<double>& s,
             std::vector<Link>* links) {
  links->clear();
  for (const auto& [key, c_ab] : tightest) {
    const auto a = static_cast<int32_t>(key >> 32), b = static_cast<int32_t>(key & 0xffffffffu);
    if (a > b) continue;  // each pair once, from its (low, high) key
    auto back = tightest.find((static_cast<uint64_t>(static_cast<uint32_t>(b)) << 32) |
                              static_cast<uint32_t>(a));
    if (back == tightest.end()) continue;
    const double gap = s[static_cast<size_t>(b)] - s[static_cast<size_t>(a)];
    const double lo = c_ab - gap, hi = -back->second - gap;
    if (!(lo <= hi)) continue;  // contradicting bounds: no claim
    links->push_back({a, b, std::max(std::fabs(lo), std::fabs(hi))});
  }
}

}  // namespace

bool jointOffsets(const Evidence& ev, std::vector<Mapping>* f, const std::vector<char>& placed,
                  std::vector<double>* half_width, std::vector<Link>* links) {
  const size_t n = f->size();
  std::unordered_map<uint64_t, double> tightest;
  auto aligned = [&](int32_t d, int64_t t) {
    return static_cast<double>(t) + (*f)[static_cast<size_t>(d)].at(t);
  };
  auto bound = [&](int32_t a, int32_t b, double c) {  // d_b - d_a >= c
    if (a == b || !placed[static_cast<size_t>(a)] || !placed[static_cast<size_t>(b)]) return;
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
    auto [it, added] = tightest.try_emplace(key, c);
    if (!added && c > it->second) it->second = c;
  };
  // Calls: every pair of domains of an instance; in an instance of many domains, the latest entry
  // binds every other domain's exit and the earliest exit every other domain's entry (the two
  // extremes as aligned now, so that a domain is not bound by itself).
  constexpr uint32_t kAllPairsUpTo = 32;  // marks per instance: every pair below, extremes above
  for (int64_t i = 0; i < ev.instances(); ++i) {
    const uint32_t lo = ev.begin[static_cast<size_t>(i)], hi = ev.begin[static_cast<size_t>(i) + 1];
    if (hi - lo <= kAllPairsUpTo) {
      for (uint32_t k = lo; k < hi; ++k) {
        const Mark& b = ev.marks[k];
        if (b.exit == INT64_MAX) continue;
        for (uint32_t j = lo; j < hi; ++j) {
          const Mark& a = ev.marks[j];
          if (j == k || a.enter == INT64_MIN) continue;
          // aligned_b(exit) + d_b >= aligned_a(enter) + d_a
          bound(a.domain, b.domain, aligned(a.domain, a.enter) - aligned(b.domain, b.exit));
        }
      }
      continue;
    }
    const Extremes x = extremesOf(
        ev, i, placed, [&](const Mark& m) { return aligned(m.domain, m.enter); },
        [&](const Mark& m) { return aligned(m.domain, m.exit); });
    for (uint32_t k = lo; k < hi; ++k) {
      const Mark& b = ev.marks[k];
      const Extremes::Best& e = x.enterOtherThan(k);
      const Extremes::Best& l = x.exitOtherThan(k);
      if (e.mark >= 0 && b.exit != INT64_MAX) {
        // aligned_b(exit) + d_b >= aligned_a(enter) + d_a
        bound(ev.marks[static_cast<size_t>(e.mark)].domain, b.domain,
              e.value - aligned(b.domain, b.exit));
      }
      if (l.mark >= 0 && b.enter != INT64_MIN) {
        bound(b.domain, ev.marks[static_cast<size_t>(l.mark)].domain,
              aligned(b.domain, b.enter) - l.value);
      }
    }
  }
  for (const Message& m : ev.representatives) {
    bound(m.from, m.to, aligned(m.from, m.sent) - aligned(m.to, m.received));
  }
  std::vector<Edge> edges;
  edges.reserve(tightest.size());
  for (const auto& [key, c] : tightest) {
    edges.push_back({static_cast<int32_t>(key >> 32), static_cast<int32_t>(key & 0xffffffffu), c});
  }
  std::vector<double> low, high;
  if (!longestPaths(n, edges, false, &low) || !longestPaths(n, edges, true, &high)) return false;
  half_width->assign(n, -1);
  std::vector<double> shifts(n, 0);
  for (size_t d = 1; d < n; ++d) {
    if (!placed[d]) continue;
    const double lo = low[d];
    const double hi = high[d] > kNegInf ? -high[d] : std::numeric_limits<double>::infinity();
    double shift = 0;
    if (lo > kNegInf && std::isfinite(hi)) {
      shift = (lo + hi) / 2;
      (*half_width)[d] = (hi - lo) / 2;
    } else if (lo > kNegInf) {
      shift = std::max(0.0, lo);
    } else if (std::isfinite(hi)) {
      shift = std::min(0.0, hi);
    }
    shifts[d] = shift;
    for (Piece& p : (*f)[d].pieces) p.offset += shift;
  }
  if (links != nullptr) linksOf(tightest, shifts, links);
  return true;
}

}  // namespace ringside::align::detail
