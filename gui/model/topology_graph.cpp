#include "ringside/gui/topology_graph.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numbers>
#include <set>

#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

constexpr double kRadius = 0.4;  // the big circle, in unit coordinates

Vec2 onCircle(double cx, double cy, double r, int i, int n) {
  const double ang = -std::numbers::pi / 2 + 2 * std::numbers::pi * i / std::max(1, n);
  return {static_cast<float>(cx + r * std::cos(ang)), static_cast<float>(cy + r * std::sin(ang))};
}

}  // namespace

int GraphLayout::indexOf(int rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
  return it != ranks.end() && *it == rank ? static_cast<int>(it - ranks.begin()) : -1;
}

GraphLayout layoutRanks(const std::vector<int>& ranks_in, const analyzer::Topology* topology) {
  GraphLayout out;
  out.ranks = ranks_in;
  std::sort(out.ranks.begin(), out.ranks.end());
  out.ranks.erase(std::unique(out.ranks.begin(), out.ranks.end()), out.ranks.end());
  const int n = static_cast<int>(out.ranks.size());
  out.pos.resize(out.ranks.size());
  out.groups.assign(out.ranks.size(), "");
  if (!topology || topology->nodes.empty()) {
    for (int i = 0; i < n; ++i) out.pos[static_cast<size_t>(i)] = onCircle(0.5, 0.5, kRadius, i, n);
    return out;
  }
  // Groups: the topology's nodes in file order (only those with drawn ranks), then loose ranks.
  std::vector<std::pair<std::string, std::vector<int>>> groups;  // name, indexes into out.ranks
  std::set<int> placed;
  for (const analyzer::TopologyNode& node : topology->nodes) {
    std::vector<int> members;
    for (int r : node.ranks) {
      int i = out.indexOf(r);
      if (i >= 0 && placed.insert(i).second) members.push_back(i);
    }
    std::sort(members.begin(), members.end());
    if (!members.empty()) groups.emplace_back(node.name, std::move(members));
  }
  for (int i = 0; i < n; ++i) {
    if (!placed.count(i)) groups.emplace_back("", std::vector<int>{i});
  }
  const int g = static_cast<int>(groups.size());
  // A node's own circle: small enough that neighbouring nodes' circles never touch.
  const double small = g <= 1 ? kRadius : std::min(0.12, 0.4 * kRadius * std::sin(std::numbers::pi / g));
  for (int k = 0; k < g; ++k) {
    const auto& [name, members] = groups[static_cast<size_t>(k)];
    Vec2 c = g == 1 ? Vec2{0.5f, 0.5f} : onCircle(0.5, 0.5, kRadius, k, g);
    const int m = static_cast<int>(members.size());
    for (int j = 0; j < m; ++j) {
      size_t i = static_cast<size_t>(members[static_cast<size_t>(j)]);
      out.pos[i] = m == 1 && g > 1 ? c : onCircle(c.x, c.y, small, j, m);
      out.groups[i] = name;
    }
  }
  return out;
}

std::vector<int> graphRanks(const analyzer::Analysis& a) {
  std::set<int> ranks(a.ranks_present.begin(), a.ranks_present.end());
  // Ranks without a file are drawn for worlds of a sensible size only: a trace's world_size of
  // a million must not make a million nodes (the links' ranks are drawn regardless).
  constexpr int kMaxWorldDrawn = 1024;
  if (a.world_size <= kMaxWorldDrawn) {
    for (int r = 0; r < a.world_size; ++r) ranks.insert(r);
  }
  for (const auto& l : a.links) {
    if (l.src >= 0) ranks.insert(l.src);
    if (l.dst >= 0) ranks.insert(l.dst);
  }
  for (const auto& l : a.idle_links) {
    if (l.src >= 0) ranks.insert(l.src);
    if (l.dst >= 0) ranks.insert(l.dst);
  }
  return {ranks.begin(), ranks.end()};
}

std::vector<GraphEdge> graphEdges(const analyzer::Analysis& a) {
  std::map<std::pair<int, int>, GraphEdge> edges;
  for (size_t i = 0; i < a.links.size(); ++i) {
    const analyzer::LinkStats& l = a.links[i];
    if (l.src == l.dst || l.src < 0 || l.dst < 0) continue;
    GraphEdge& e = edges[{l.src, l.dst}];
    e.src = l.src;
    e.dst = l.dst;
    e.link = static_cast<int>(i);
    e.bytes = l.bytes;
    e.capacity_gbps = l.capacity_gbps;
  }
  for (const analyzer::IdleLink& l : a.idle_links) {
    if (l.src == l.dst || l.src < 0 || l.dst < 0) continue;
    auto [it, added] = edges.try_emplace({l.src, l.dst});
    GraphEdge& e = it->second;
    if (added) {
      e.src = l.src;
      e.dst = l.dst;
      e.capacity_gbps = l.capacity_gbps;
    }
    if (l.where == "whole trace") {
      e.idle = e.bytes == 0;  // the analyzer says so only for links without bytes
    } else {
      e.idle_during.push_back(l.where);
    }
  }
  std::vector<GraphEdge> out;
  out.reserve(edges.size());
  for (auto& [key, e] : edges) out.push_back(std::move(e));
  return out;
}

double meanGbps(const analyzer::Analysis& a, const analyzer::LinkStats& l, int64_t t0, int64_t t1) {
  if (t1 <= t0 || a.bin_ns <= 0 || l.gbps_per_bin.empty()) return 0;
  // Bin i covers [start + i*bin, start + (i+1)*bin): weight each by its overlap with the window.
  const double bin = static_cast<double>(a.bin_ns);
  const int nbins = static_cast<int>(l.gbps_per_bin.size());
  const double w0 = static_cast<double>(t0 - a.start_ns), w1 = static_cast<double>(t1 - a.start_ns);
  int first = std::max(0, static_cast<int>(std::floor(w0 / bin)));
  int last = std::min(nbins - 1, static_cast<int>(std::floor(w1 / bin)));
  double sum = 0;
  for (int i = first; i <= last; ++i) {
    double b0 = i * bin, b1 = b0 + bin;
    double overlap = std::min(b1, w1) - std::max(b0, w0);
    if (overlap > 0) sum += l.gbps_per_bin[static_cast<size_t>(i)] * overlap;
  }
  return sum / (w1 - w0);
}

std::vector<EdgeLoad> edgeLoads(const analyzer::Analysis& a, const std::vector<GraphEdge>& edges,
                                int64_t t0, int64_t t1, const std::string& idle_group,
                                double* scale_gbps) {
  std::vector<EdgeLoad> out(edges.size());
  std::vector<double> means;
  for (size_t i = 0; i < edges.size(); ++i) {
    const GraphEdge& e = edges[i];
    EdgeLoad& load = out[i];
    load.idle = e.idle || e.link < 0 ||
                (!idle_group.empty() &&
                 std::find(e.idle_during.begin(), e.idle_during.end(), idle_group) != e.idle_during.end());
    if (load.idle) continue;
    load.gbps = meanGbps(a, a.links[static_cast<size_t>(e.link)], t0, t1);
    if (load.gbps > 0) means.push_back(load.gbps);
  }
  // The top of the scale: the 90th percentile of the links' mean rates in the window, not the
  // busiest link's peak (one burst, a setup broadcast, once set it and every ring edge came out
  // the same colour). A link above it saturates.
  double scale = 0;
  if (!means.empty()) {
    std::sort(means.begin(), means.end());
    size_t k = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(means.size())));
    scale = means[std::min(means.size() - 1, k == 0 ? 0 : k - 1)];
  }
  if (scale_gbps != nullptr) *scale_gbps = scale;
  for (size_t i = 0; i < edges.size(); ++i) {
    EdgeLoad& load = out[i];
    if (load.idle) {
      load.color = kIdleRgb;
      continue;
    }
    const double top = edges[i].capacity_gbps > 0 ? edges[i].capacity_gbps : scale;
    load.fraction = top > 0 ? std::clamp(load.gbps / top, 0.0, 1.0) : 0.0;
    load.color = loadRgb(load.fraction);
  }
  return out;
}

Window scrubWindow(int64_t t0, int64_t t1, double position, double width) {
  if (t1 < t0) std::swap(t0, t1);
  const double span = static_cast<double>(t1 - t0);
  const double w = std::clamp(width, 0.0, 1.0) * span;
  const double start = static_cast<double>(t0) + std::clamp(position, 0.0, 1.0) * (span - w);
  Window out{static_cast<int64_t>(std::llround(start)), static_cast<int64_t>(std::llround(start + w))};
  out.t1 = std::min(std::max(out.t1, out.t0 + 1), std::max(t1, t0 + 1));
  return out;
}

GraphGeometry graphGeometry(const GraphLayout& layout, const std::vector<GraphEdge>& edges, Vec2 origin,
                            Vec2 size, float offset) {
  GraphGeometry g;
  const float side = std::max(1.0f, std::min(size.x, size.y));
  const float x0 = origin.x + (size.x - side) / 2, y0 = origin.y + (size.y - side) / 2;
  g.node_radius = std::clamp(side * 0.035f, 9.0f, 20.0f);
  g.nodes.reserve(layout.pos.size());
  for (const Vec2& p : layout.pos) {
    g.nodes.push_back({std::round(x0 + p.x * side), std::round(y0 + p.y * side)});
  }
  g.edges.reserve(edges.size());
  for (const GraphEdge& e : edges) {
    int s = layout.indexOf(e.src), d = layout.indexOf(e.dst);
    if (s < 0 || d < 0) {
      g.edges.push_back({});
      continue;
    }
    Vec2 a = g.nodes[static_cast<size_t>(s)], b = g.nodes[static_cast<size_t>(d)];
    float dx = b.x - a.x, dy = b.y - a.y;
    float len = std::max(1.0f, std::hypot(dx, dy));
    float ux = dx / len, uy = dy / len;
    // Right of the direction of travel (screen y grows downwards): (-uy, ux).
    float ox = -uy * offset, oy = ux * offset;
    float cut = std::min(g.node_radius + 3.0f, len * 0.3f);
    g.edges.push_back({{a.x + ox + ux * cut, a.y + oy + uy * cut}, {b.x + ox - ux * cut, b.y + oy - uy * cut}});
  }
  return g;
}

float distanceToSegment(Vec2 p, const Segment& s) {
  const float dx = s.b.x - s.a.x, dy = s.b.y - s.a.y;
  const float len2 = dx * dx + dy * dy;
  float t = len2 > 0 ? ((p.x - s.a.x) * dx + (p.y - s.a.y) * dy) / len2 : 0.0f;
  t = std::clamp(t, 0.0f, 1.0f);
  return std::hypot(p.x - (s.a.x + t * dx), p.y - (s.a.y + t * dy));
}

int edgeAt(const GraphGeometry& g, Vec2 p, float tolerance) {
  int best = -1;
  float best_d = tolerance;
  for (size_t i = 0; i < g.edges.size(); ++i) {
    const Segment& s = g.edges[i];
    if (s.a.x == s.b.x && s.a.y == s.b.y) continue;
    float d = distanceToSegment(p, s);
    if (d <= best_d) {
      best_d = d;
      best = static_cast<int>(i);
    }
  }
  return best;
}

int nodeAt(const GraphGeometry& g, Vec2 p) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (std::hypot(p.x - g.nodes[i].x, p.y - g.nodes[i].y) <= g.node_radius) return static_cast<int>(i);
  }
  return -1;
}

std::string geometryJson(const GraphLayout& layout, const std::vector<GraphEdge>& edges,
                         const std::vector<EdgeLoad>& loads, const GraphGeometry& g) {
  auto num = [](double v) { return format::fixed(v, 2); };
  auto rgb = [](Rgb c) {
    return "[" + std::to_string(c.r) + "," + std::to_string(c.g) + "," + std::to_string(c.b) + "]";
  };
  std::string out = "{\n  \"idle_color\": " + rgb(kIdleRgb) + ",\n  \"node_radius\": " + num(g.node_radius) +
                    ",\n  \"nodes\": [";
  for (size_t i = 0; i < g.nodes.size() && i < layout.ranks.size(); ++i) {
    out += std::string(i ? "," : "") + "\n    {\"rank\": " + std::to_string(layout.ranks[i]) + ", \"x\": " +
           num(g.nodes[i].x) + ", \"y\": " + num(g.nodes[i].y) + ", \"color\": " + rgb(rankRgb(layout.ranks[i])) +
           "}";
  }
  out += "\n  ],\n  \"edges\": [";
  for (size_t i = 0; i < edges.size() && i < g.edges.size(); ++i) {
    const Segment& s = g.edges[i];
    out += std::string(i ? "," : "") + "\n    {\"src\": " + std::to_string(edges[i].src) +
           ", \"dst\": " + std::to_string(edges[i].dst) + ", \"idle\": " + ((i < loads.size() ? loads[i].idle : edges[i].idle) ? "true" : "false") +
           ", \"x0\": " + num(s.a.x) + ", \"y0\": " + num(s.a.y) + ", \"x1\": " + num(s.b.x) +
           ", \"y1\": " + num(s.b.y) + ", \"color\": " + rgb(i < loads.size() ? loads[i].color : kIdleRgb) + "}";
  }
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace ringside::gui
