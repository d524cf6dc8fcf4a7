// gui/topology_graph.h — the topology view's graph: where ranks sit, which directed
// links are drawn, how loaded each is in a time window, and the pixel geometry that
// both drawing and hit-testing use.
//
// Everything comes from the analyzer: the links that carried bytes (Analysis::links,
// with their per-bin rates) and the idle ones (Analysis::idle_links, the links that
// exist by the topology or the host's full mesh but carried nothing). Nothing here is
// recomputed from transfers and nothing touches ImGui, so layout, colours and idle
// classification are unit-tested; the same state always gives the same picture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/topology.h"
#include "ringside/gui/palette.h"

namespace ringside::gui {

struct Vec2 {
  float x = 0, y = 0;
};

// Ranks in unit coordinates ([0,1]^2, centre 0.5,0.5).
struct GraphLayout {
  std::vector<int> ranks;           // ascending
  std::vector<Vec2> pos;            // parallel to ranks
  std::vector<std::string> groups;  // the topology node of each rank; "" without a topology
  int indexOf(int rank) const;      // -1 when not drawn
};

// Without a topology: ranks on one circle, rank 0 at the top, clockwise. With one: its
// nodes on the circle in file order, the ranks of a node on a small circle around it (a
// node of one rank sits on the big circle); ranks no node names follow as nodes of their own.
GraphLayout layoutRanks(const std::vector<int>& ranks, const analyzer::Topology* topology);

// The ranks worth drawing: 0..world_size-1, those present, and every link end.
std::vector<int> graphRanks(const analyzer::Analysis& a);

struct GraphEdge {
  int src = -1, dst = -1;
  bool idle = false;  // idle over the whole trace (IdleLink::where == "whole trace")
  int link = -1;      // index into Analysis::links; -1 when idle
  int64_t bytes = 0;
  double capacity_gbps = -1;
  std::vector<std::string> idle_during;  // groups it stayed idle in ("allreduce gloo")
};

// One edge per directed link that carried bytes or that the analyzer lists idle, sorted by
// (src, dst). Self links are left out.
std::vector<GraphEdge> graphEdges(const analyzer::Analysis& a);

// Mean rate (GB/s) of link `l` over [t0, t1), from its per-bin rates.
double meanGbps(const analyzer::Analysis& a, const analyzer::LinkStats& l, int64_t t0, int64_t t1);

// The rate that maps to the top of the load ramp when a link's capacity is unknown: the
// highest bin of any link over the whole trace, so colours compare across windows.

struct EdgeLoad {
  bool idle = false;    // drawn idle: idle over the trace, or during `idle_group`
  double gbps = 0;      // mean over the window
  double fraction = 0;  // of its capacity when known, else of the window's scale; 0..1
  Rgb color;            // kIdleRgb for idle edges, else loadRgb(fraction)
};
// `idle_group` ("allreduce gloo": the op and library of the selected collective, "" for none):
// links the analyzer lists idle during that group are drawn idle too.
// *scale_gbps (optional): the top of the colour scale for links without a capacity: the 90th
// percentile of the links' mean rates in the window (robust to one burst; above it saturates).
std::vector<EdgeLoad> edgeLoads(const analyzer::Analysis& a, const std::vector<GraphEdge>& edges,
                                int64_t t0, int64_t t1, const std::string& idle_group = "",
                                double* scale_gbps = nullptr);

// The scrubber: a window of `width` (0..1 of the span) that slides over [t0, t1] as
// `position` goes 0..1; position 0 starts at t0, position 1 ends at t1.
struct Window {
  int64_t t0 = 0, t1 = 0;
};
Window scrubWindow(int64_t t0, int64_t t1, double position, double width);

// Pixels: the layout fitted (square, centred) into [origin, origin + size].
struct Segment {
  Vec2 a, b;  // a near src, b (arrow tip) near dst
};
struct GraphGeometry {
  float node_radius = 0;
  std::vector<Vec2> nodes;       // parallel to GraphLayout::ranks
  std::vector<Segment> edges;    // parallel to the edges; empty segment when an end is not drawn
};
// Each direction is offset `offset` px to its right, so a->b and b->a stay apart; segments
// stop short of the nodes.
GraphGeometry graphGeometry(const GraphLayout& layout, const std::vector<GraphEdge>& edges, Vec2 origin,
                            Vec2 size, float offset = 5.0f);

float distanceToSegment(Vec2 p, const Segment& s);
// The edge nearest to p within `tolerance` px, -1 if none.
int edgeAt(const GraphGeometry& g, Vec2 p, float tolerance = 5.0f);
// The node (index into layout) under p, -1 if none.
int nodeAt(const GraphGeometry& g, Vec2 p);

// The geometry as JSON for tests (--dump-layout): nodes with rank, x, y, colour; edges with
// src, dst, idle (as drawn, from `loads`), x0, y0, x1, y1, colour; the idle colour.
std::string geometryJson(const GraphLayout& layout, const std::vector<GraphEdge>& edges,
                         const std::vector<EdgeLoad>& loads, const GraphGeometry& g);

}  // namespace ringside::gui
