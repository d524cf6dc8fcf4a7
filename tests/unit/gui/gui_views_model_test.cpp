// The data behind the topology, traffic matrix and statistics views: layout, edge colours,
// idle classification as drawn, matrix and stats aggregation, sorting, filtering, CSV.
// Traces are written with the analyzer tests' TraceBuilder and analyzed for real.
#include <gtest/gtest.h>

#include <tuple>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/topology.h"
#include "ringside/gui/csv.h"
#include "ringside/gui/lod.h"
#include "ringside/gui/palette.h"
#include "ringside/gui/stats_table.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/topology_graph.h"
#include "ringside/gui/traffic_matrix.h"
#include "ringside/gui/view_state.h"
#include "ringside/storage/trace_reader.h"
#include "trace_builder.h"
#include "temp_dir.h"

namespace ringside::gui {
namespace {

using analyzer::Analysis;
using analyzer::testing_util::TraceBuilder;

Analysis analyzeTrace(const std::string& path, const analyzer::Topology* topo = nullptr, int bins = 10) {
  std::string error;
  auto reader = storage::TraceReader::open(path, &error);
  EXPECT_NE(reader, nullptr) << error;
  analyzer::AnalysisOptions options;
  options.bins = bins;
  options.topology = topo;
  Analysis a;
  EXPECT_TRUE(analyze(*reader, options, &a, &error)) << error;
  return a;
}

// A 4-rank ring all-reduce: rank r sends 1000 bytes to r+1 six times (reduce-scatter, all-gather).
void ringTrace(TraceBuilder* t, int64_t bytes = 1000) {
  for (int r = 0; r < 4; ++r) {
    t->colls.push_back({1, r, 0, "allreduce", "ringside-ring", 4000, 1000, 3600});
    for (int g = 0; g < 6; ++g) {
      int64_t start = 1600 + 300 * g;
      bool rs = g < 3;
      t->xfers.push_back({1, r, (r + 1) % 4, "send", bytes, start, start + 200, rs ? "reduce-scatter" : "all-gather",
                          rs ? g : g - 3});
    }
  }
}

const char* kFullMesh =
    "ringside-topology 1\n"
    "node h0 ranks 0\nnode h1 ranks 1\nnode h2 ranks 2\nnode h3 ranks 3\n"
    "link h0 h1 bandwidth 1Gbit\nlink h0 h2 bandwidth 1Gbit\nlink h0 h3 bandwidth 1Gbit\n"
    "link h1 h2 bandwidth 1Gbit\nlink h1 h3 bandwidth 1Gbit\nlink h2 h3 bandwidth 1Gbit\n";

TEST(PaletteTest, RankColoursMatchTheTimelineAndIdleIsOffTheRamp) {
  // Python: colorsys.hsv_to_rgb(0, 0.6, 0.85) * 255 -> (217, 87, 87)
  EXPECT_EQ(rankRgb(0), (Rgb{217, 87, 87}));
  std::set<std::tuple<int, int, int>> seen;
  for (int r = 0; r < 16; ++r) seen.insert({rankRgb(r).r, rankRgb(r).g, rankRgb(r).b});
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_EQ(loadRgb(0), (Rgb{40, 70, 170}));
  EXPECT_EQ(loadRgb(1), (Rgb{225, 45, 35}));
  EXPECT_EQ(loadRgb(-3), loadRgb(0));
  EXPECT_EQ(loadRgb(7), loadRgb(1));
  EXPECT_EQ(loadRgb(std::nan("")), loadRgb(0));
  for (int i = 0; i <= 100; ++i) {  // every ramp colour is far from the idle grey
    Rgb c = loadRgb(i / 100.0);
    int d = std::abs(c.r - kIdleRgb.r) + std::abs(c.g - kIdleRgb.g) + std::abs(c.b - kIdleRgb.b);
    EXPECT_GT(d, 60) << i;
  }
}

TEST(TopologyGraphTest, CircleLayoutIsDeterministic) {
  GraphLayout l = layoutRanks({3, 1, 0, 2, 2}, nullptr);
  ASSERT_EQ(l.ranks, (std::vector<int>{0, 1, 2, 3}));
  // Rank 0 at the top, then clockwise (screen y down): 1 right, 2 bottom, 3 left.
  EXPECT_NEAR(l.pos[0].x, 0.5, 1e-6);
  EXPECT_NEAR(l.pos[0].y, 0.1, 1e-6);
  EXPECT_NEAR(l.pos[1].x, 0.9, 1e-6);
  EXPECT_NEAR(l.pos[2].y, 0.9, 1e-6);
  EXPECT_NEAR(l.pos[3].x, 0.1, 1e-6);
  EXPECT_EQ(l.indexOf(2), 2);
  EXPECT_EQ(l.indexOf(7), -1);
  GraphLayout again = layoutRanks({0, 1, 2, 3}, nullptr);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(again.pos[i].x, l.pos[i].x);
    EXPECT_EQ(again.pos[i].y, l.pos[i].y);
  }
}

TEST(TopologyGraphTest, TopologyLayoutGroupsRanksByNode) {
  analyzer::Topology topo;
  std::string error;
  ASSERT_TRUE(analyzer::parseTopology("ringside-topology 1\nnode a ranks 0-3\nnode b ranks 4-7\n", "t", &topo, &error))
      << error;
  GraphLayout l = layoutRanks({0, 1, 2, 3, 4, 5, 6, 7, 9}, &topo);
  ASSERT_EQ(l.ranks.size(), 9u);
  EXPECT_EQ(l.groups[0], "a");
  EXPECT_EQ(l.groups[5], "b");
  EXPECT_EQ(l.groups[8], "");  // rank 9: no node, a group of its own
  auto dist = [&](int i, int j) {
    return std::hypot(l.pos[static_cast<size_t>(i)].x - l.pos[static_cast<size_t>(j)].x,
                      l.pos[static_cast<size_t>(i)].y - l.pos[static_cast<size_t>(j)].y);
  };
  // Ranks of one node sit closer to each other than to any rank of the other node.
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      for (int k = 4; k < 8; ++k) EXPECT_LT(dist(i, j), dist(i, k));
    }
  }
  // One rank per node: the node's place on the big circle, as without a topology.
  analyzer::Topology mesh;
  ASSERT_TRUE(analyzer::parseTopology(kFullMesh, "mesh", &mesh, &error)) << error;
  GraphLayout a = layoutRanks({0, 1, 2, 3}, &mesh), b = layoutRanks({0, 1, 2, 3}, nullptr);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(a.pos[i].x, b.pos[i].x, 1e-6);
    EXPECT_NEAR(a.pos[i].y, b.pos[i].y, 1e-6);
    EXPECT_EQ(a.groups[i], "h" + std::to_string(i));
  }
}

TEST(TopologyGraphTest, RingOverFullMeshDrawsTheDiagonalsIdle) {
  TraceBuilder t(4);
  ringTrace(&t);
  analyzer::Topology mesh;
  std::string error;
  ASSERT_TRUE(analyzer::parseTopology(kFullMesh, "mesh", &mesh, &error)) << error;
  const std::string path = t.build();
  for (const analyzer::Topology* topo : std::vector<const analyzer::Topology*>{nullptr, &mesh}) {
    Analysis a = analyzeTrace(path, topo);
    std::vector<GraphEdge> edges = graphEdges(a);
    ASSERT_EQ(edges.size(), 12u);  // the full mesh of 4 ranks, both directions
    std::set<std::pair<int, int>> idle, used;
    for (const GraphEdge& e : edges) (e.idle ? idle : used).insert({e.src, e.dst});
    EXPECT_EQ(used, (std::set<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
    EXPECT_EQ(idle.size(), 8u);
    EXPECT_TRUE(idle.count({0, 2}) && idle.count({2, 0}) && idle.count({1, 3}) && idle.count({3, 1}));
    EXPECT_TRUE(std::is_sorted(edges.begin(), edges.end(), [](const GraphEdge& x, const GraphEdge& y) {
      return std::pair(x.src, x.dst) < std::pair(y.src, y.dst);
    }));
    // Colours as drawn: the idle grey exactly on idle edges, a ramp colour on the others.
    std::vector<EdgeLoad> loads = edgeLoads(a, edges, a.start_ns, a.end_ns);
    for (size_t i = 0; i < edges.size(); ++i) {
      EXPECT_EQ(loads[i].color == kIdleRgb, edges[i].idle) << edges[i].src << "->" << edges[i].dst;
      if (!edges[i].idle) {
        EXPECT_GT(loads[i].gbps, 0);
        EXPECT_EQ(loads[i].color, loadRgb(loads[i].fraction));
      }
    }
    if (topo) {
      for (const GraphEdge& e : edges) EXPECT_NEAR(e.capacity_gbps, 0.125, 1e-9);  // 1 Gbit/s
    }
  }
}

TEST(TopologyGraphTest, LinksIdleDuringTheSelectedGroupAreDrawnIdle) {
  // The ring, then a barrier that sends a few bytes over the diagonals: over the whole trace
  // nothing is idle, but during the ring all-reduces the other 8 links are (the analyzer says so).
  TraceBuilder t(4);
  ringTrace(&t);
  for (int r = 0; r < 4; ++r) {
    t.colls.push_back({2, r, 1, "barrier", "gloo", 0, 5000, 6000});
    t.xfers.push_back({2, r, (r + 2) % 4, "send", 8, 5100, 5200, ""});
    t.xfers.push_back({2, r, (r + 3) % 4, "send", 8, 5300, 5400, ""});
  }
  Analysis a = analyzeTrace(t.build());
  std::vector<GraphEdge> edges = graphEdges(a);
  ASSERT_EQ(edges.size(), 12u);
  for (const GraphEdge& e : edges) EXPECT_FALSE(e.idle) << e.src << "->" << e.dst;
  std::vector<EdgeLoad> whole = edgeLoads(a, edges, a.start_ns, a.end_ns);
  std::vector<EdgeLoad> ring = edgeLoads(a, edges, a.start_ns, a.end_ns, "allreduce ringside-ring");
  int idle = 0;
  for (size_t i = 0; i < edges.size(); ++i) {
    EXPECT_FALSE(whole[i].idle);
    const bool ring_link = edges[i].dst == (edges[i].src + 1) % 4;
    EXPECT_EQ(ring[i].idle, !ring_link) << edges[i].src << "->" << edges[i].dst;
    EXPECT_EQ(ring[i].color == kIdleRgb, ring[i].idle);
    idle += ring[i].idle ? 1 : 0;
  }
  EXPECT_EQ(idle, 8);
  GraphLayout l = layoutRanks(graphRanks(a), nullptr);
  std::string json = geometryJson(l, edges, ring, graphGeometry(l, edges, {0, 0}, {400, 400}));
  EXPECT_NE(json.find("\"src\": 0, \"dst\": 2, \"idle\": true"), std::string::npos) << json;
  EXPECT_NE(json.find("\"src\": 0, \"dst\": 1, \"idle\": false"), std::string::npos) << json;
}

// A burst on one link does not set the scale: ten links, nine at 1 GB/s, one at 100 GB/s;
// the nine are at the top of the ramp, not at 1 %.
TEST(TopologyGraphTest, ColourScaleIgnoresOneBurst) {
  Analysis a;
  a.start_ns = 0;
  a.bin_ns = 100;
  for (int i = 0; i < 10; ++i) {
    analyzer::LinkStats l;
    l.src = i;
    l.dst = (i + 1) % 10;
    l.bytes = 10;
    l.gbps_per_bin = {i == 0 ? 100.0 : 1.0};
    l.peak_gbps = l.gbps_per_bin[0];
    a.links.push_back(l);
  }
  std::vector<GraphEdge> edges = graphEdges(a);
  double scale = 0;
  std::vector<EdgeLoad> loads = edgeLoads(a, edges, 0, 100, "", &scale);
  EXPECT_DOUBLE_EQ(scale, 1.0);
  for (const EdgeLoad& l : loads) EXPECT_DOUBLE_EQ(l.fraction, 1.0);
}

TEST(TopologyGraphTest, WindowedLoadFollowsTheBins) {
  Analysis a;
  a.start_ns = 0;
  a.bin_ns = 100;
  analyzer::LinkStats l;
  l.src = 0;
  l.dst = 1;
  l.bytes = 10;
  l.gbps_per_bin = {0, 2, 4, 0};
  l.peak_gbps = 4;
  a.links.push_back(l);
  EXPECT_DOUBLE_EQ(meanGbps(a, a.links[0], 0, 400), 1.5);
  EXPECT_DOUBLE_EQ(meanGbps(a, a.links[0], 100, 200), 2.0);
  EXPECT_DOUBLE_EQ(meanGbps(a, a.links[0], 150, 250), 3.0);  // half of bin 1, half of bin 2
  EXPECT_DOUBLE_EQ(meanGbps(a, a.links[0], 210, 220), 4.0);  // inside one bin
  EXPECT_DOUBLE_EQ(meanGbps(a, a.links[0], 500, 600), 0.0);  // after the bins
  EXPECT_DOUBLE_EQ(meanGbps(a, a.links[0], 300, 300), 0.0);
  std::vector<GraphEdge> edges = graphEdges(a);
  ASSERT_EQ(edges.size(), 1u);
  auto at = [&](int64_t t0, int64_t t1) { return edgeLoads(a, edges, t0, t1)[0]; };
  // One link: it is its window's scale (the 90th percentile of the links' means there).
  EXPECT_DOUBLE_EQ(at(200, 300).fraction, 1.0);
  EXPECT_DOUBLE_EQ(at(100, 200).fraction, 1.0);
  EXPECT_EQ(at(0, 100).color, loadRgb(0));
  EXPECT_EQ(at(200, 300).color, loadRgb(1));
  a.links[0].capacity_gbps = 8;  // a known capacity is the scale instead
  edges = graphEdges(a);
  EXPECT_DOUBLE_EQ(at(200, 300).fraction, 0.5);
}

TEST(TopologyGraphTest, ScrubberSlidesOverTheSpan) {
  Window w = scrubWindow(1000, 2000, 0.0, 0.1);
  EXPECT_EQ(w.t0, 1000);
  EXPECT_EQ(w.t1, 1100);
  w = scrubWindow(1000, 2000, 1.0, 0.1);
  EXPECT_EQ(w.t0, 1900);
  EXPECT_EQ(w.t1, 2000);
  w = scrubWindow(1000, 2000, 0.5, 0.2);
  EXPECT_EQ(w.t0, 1400);
  EXPECT_EQ(w.t1, 1600);
  w = scrubWindow(1000, 2000, 3.0, 5.0);  // clamped: the whole span
  EXPECT_EQ(w.t0, 1000);
  EXPECT_EQ(w.t1, 2000);
  w = scrubWindow(1000, 2000, 0.3, 0.0);  // never empty
  EXPECT_GT(w.t1, w.t0);
}

TEST(TopologyGraphTest, GeometryAndHitTesting) {
  GraphLayout l = layoutRanks({0, 1, 2, 3}, nullptr);
  std::vector<GraphEdge> edges(2);
  edges[0].src = 0;
  edges[0].dst = 2;
  edges[1].src = 2;
  edges[1].dst = 0;
  GraphGeometry g = graphGeometry(l, edges, {100, 50}, {600, 400}, 5.0f);
  // A 400 px square centred in the 600 x 400 region: rank 0 at (400, 50 + 0.1*400).
  EXPECT_FLOAT_EQ(g.nodes[0].x, 400);
  EXPECT_FLOAT_EQ(g.nodes[0].y, 90);
  EXPECT_FLOAT_EQ(g.nodes[2].y, 410);
  ASSERT_EQ(g.edges.size(), 2u);
  // 0 -> 2 goes down; its right (screen) is -x. 2 -> 0 goes up, offset to +x.
  EXPECT_FLOAT_EQ(g.edges[0].a.x, 395);
  EXPECT_FLOAT_EQ(g.edges[1].a.x, 405);
  EXPECT_GT(g.edges[0].a.y, g.nodes[0].y + g.node_radius);  // stops short of the nodes
  EXPECT_LT(g.edges[0].b.y, g.nodes[2].y - g.node_radius);
  EXPECT_EQ(edgeAt(g, {394, 250}), 0);
  EXPECT_EQ(edgeAt(g, {406, 250}), 1);
  EXPECT_EQ(edgeAt(g, {300, 250}), -1);
  EXPECT_EQ(nodeAt(g, {401, 91}), 0);
  EXPECT_EQ(nodeAt(g, {300, 250}), -1);
  EXPECT_FLOAT_EQ(distanceToSegment({0, 5}, {{0, 0}, {10, 0}}), 5);
  EXPECT_FLOAT_EQ(distanceToSegment({-3, 4}, {{0, 0}, {10, 0}}), 5);
  std::vector<EdgeLoad> loads(2);
  std::string json = geometryJson(l, edges, loads, g);
  EXPECT_NE(json.find("\"idle_color\": [158,158,158]"), std::string::npos);
  EXPECT_NE(json.find("{\"src\": 0, \"dst\": 2, \"idle\": false, \"x0\": 395.00"), std::string::npos) << json;
  EXPECT_NE(json.find("{\"rank\": 3, \"x\": 240.00, \"y\": 250.00"), std::string::npos) << json;
}

TEST(ViewStateTest, HoveredLinkLastsOneFrame) {
  ViewState v;
  EXPECT_FALSE(v.hoveredLink().valid());
  v.hoverLink({1, 2});  // a view saw the mouse over 1 -> 2 this frame
  EXPECT_FALSE(v.hoveredLink().valid());
  v.endFrame();
  EXPECT_EQ(v.hoveredLink(), (LinkRef{1, 2}));  // every view highlights it next frame
  v.endFrame();  // nobody hovered it again
  EXPECT_FALSE(v.hoveredLink().valid());
}

TEST(TrafficMatrixTest, BytesTotalsAndCsv) {
  TraceBuilder t(4);
  ringTrace(&t, 1000);
  t.xfers.push_back({1, 0, 2, "send", 500, 3000, 3100, "all-gather", 9});
  Analysis a = analyzeTrace(t.build());
  TrafficMatrix m = trafficMatrix(a);
  ASSERT_EQ(m.n, 4);
  EXPECT_EQ(m.at(0, 1), 6000);
  EXPECT_EQ(m.at(3, 0), 6000);
  EXPECT_EQ(m.at(0, 2), 500);
  EXPECT_EQ(m.at(1, 3), 0);
  EXPECT_EQ(m.row_total[0], 6500);
  EXPECT_EQ(m.col_total[2], 6500);
  EXPECT_EQ(m.total, 24500);
  EXPECT_EQ(m.max, 6000);
  const Rgb empty{1, 2, 3};
  EXPECT_EQ(heatRgb(0, m.max, empty), empty);
  EXPECT_EQ(heatRgb(6000, m.max, empty), loadRgb(1));
  EXPECT_EQ(heatRgb(3000, m.max, empty), loadRgb(0.5));
  const std::string csv = matrixCsv(m);
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "src\\dst,0,1,2,3,total");
  std::getline(in, line);
  EXPECT_EQ(line, "0,0,6000,500,0,6500");
  int lines = 2;
  std::string last;
  while (std::getline(in, line)) {
    ++lines;
    last = line;
  }
  EXPECT_EQ(lines, 6);
  EXPECT_EQ(last, "total,6000,6000,6500,6000,24500");
}

TEST(StatsTableTest, BucketsPercentilesAndMeanFromTheAnalyzer) {
  TraceBuilder t(2);
  // 100 all-reduces of 3000 bytes (bucket [2 KiB, 4 KiB)) taking 1..100 us, and 3 broadcasts of 1 MiB.
  int64_t id = 1, at = 1'000'000;
  for (int i = 1; i <= 100; ++i, ++id) {
    for (int r = 0; r < 2; ++r) t.colls.push_back({id, r, id, "allreduce", "gloo", 3000, at, at + i * 1000});
    at += 200'000;
  }
  for (int i = 0; i < 3; ++i, ++id) {
    for (int r = 0; r < 2; ++r) t.colls.push_back({id, r, id, "broadcast", "gloo", 1 << 20, at, at + 50'000});
    at += 200'000;
  }
  Analysis a = analyzeTrace(t.build());
  std::vector<StatsRow> rows = statsRows(a);
  ASSERT_EQ(rows.size(), 2u);
  const StatsRow& ar = rows[0];  // sorted by op: allreduce first
  EXPECT_EQ(ar.op, "allreduce");
  EXPECT_EQ(ar.size_lo, 2048);
  EXPECT_EQ(ar.size_hi, 4096);
  EXPECT_EQ(ar.count, 100);
  EXPECT_EQ(ar.total_ns, 5050 * 1000);
  EXPECT_DOUBLE_EQ(ar.mean_ns, 50500);
  EXPECT_EQ(ar.p50_ns, 50'000);  // nearest rank
  EXPECT_EQ(ar.p99_ns, 99'000);
  EXPECT_GT(ar.busbw_gbps, 0);
  EXPECT_EQ(rows[1].op, "broadcast");
  EXPECT_EQ(rows[1].size_lo, 1 << 20);
  EXPECT_EQ(rows[1].size_hi, 2 << 20);
  // Shown as the report and diff show sizes (analyzer::sizeText): the calls' actual sizes.
  EXPECT_EQ(sizeLabel(rows[1]), "1.0 MiB");
  EXPECT_EQ(sizeLabel(ar), analyzer::sizeText(3000, 3000));
}

std::vector<StatsRow> someRows() {
  std::vector<StatsRow> rows(4);
  rows[0] = {"allreduce", "gloo", 1024, 2048, 10, 500, 50, 40, 90, 1.5, 1024, 1536};
  rows[1] = {"allreduce", "gloo", 4096, 8192, 3, 900, 300, 250, 400, 0.5, 4096, 4096};
  rows[2] = {"broadcast", "ringside-ring", 1024, 2048, 10, 100, 10, 9, 20, 3.0, 1024, 1024};
  rows[3] = {"allgather", "gloo", 1 << 20, 2 << 20, 1, 900, 900, 900, 900, 2.0, 1 << 20, 1 << 20};
  return rows;
}

std::vector<std::string> ops(const std::vector<StatsRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.op + "/" + std::to_string(r.size_lo));
  return out;
}

TEST(StatsTableTest, SortsByAnyColumnWithStableTies) {
  auto rows = someRows();
  sortStats(&rows, StatsColumn::kCount, false);
  EXPECT_EQ(ops(rows), (std::vector<std::string>{"allreduce/1024", "broadcast/1024", "allreduce/4096", "allgather/1048576"}));
  sortStats(&rows, StatsColumn::kTotal, true);  // tie 900: (op, library, size) order
  EXPECT_EQ(ops(rows), (std::vector<std::string>{"broadcast/1024", "allreduce/1024", "allgather/1048576", "allreduce/4096"}));
  sortStats(&rows, StatsColumn::kBusbw, false);
  EXPECT_EQ(rows.front().op, "broadcast");
  EXPECT_EQ(rows.back().size_lo, 4096);
  sortStats(&rows, StatsColumn::kP99, true);
  EXPECT_EQ(rows.front().p99_ns, 20);
  sortStats(&rows, StatsColumn::kSize, false);
  EXPECT_EQ(rows.front().size_lo, 1 << 20);
  sortStats(&rows, StatsColumn::kOp, true);
  EXPECT_EQ(ops(rows), (std::vector<std::string>{"allgather/1048576", "allreduce/1024", "allreduce/4096", "broadcast/1024"}));
  EXPECT_STREQ(statsColumnName(StatsColumn::kP50), "p50_ns");
}

TEST(StatsTableTest, FiltersByEveryWord) {
  auto rows = someRows();
  EXPECT_EQ(filterStats(rows, "").size(), 4u);
  EXPECT_EQ(filterStats(rows, "   ").size(), 4u);
  EXPECT_EQ(filterStats(rows, "ALLRED"), (std::vector<int>{0, 1}));
  EXPECT_EQ(filterStats(rows, "allreduce 4.0 kib"), (std::vector<int>{1}));  // sizeText's "4.0 KiB"
  EXPECT_EQ(filterStats(rows, "ring"), (std::vector<int>{2}));
  EXPECT_EQ(filterStats(rows, "MiB"), (std::vector<int>{3}));
  EXPECT_TRUE(filterStats(rows, "alltoall").empty());
}

// csvField/csvLine's own quoting is tested in tests/unit/format/format_test.cpp.
TEST(CsvTest, QuotingAndExport) {
  auto rows = someRows();
  rows[0].op = "all,reduce";
  std::string csv = statsCsv(rows, {2, 0});
  EXPECT_EQ(csv,
            "op,library,size_lo,size_hi,count,total_ns,mean_ns,p50_ns,p99_ns,busbw_gbps\n"
            "broadcast,ringside-ring,1024,2048,10,100,10,9,20,3\n"
            "\"all,reduce\",gloo,1024,2048,10,500,50,40,90,1.5\n");
  test_support::TempDir temp("csv-test");
  const std::string& dir = temp.path();
  std::string error;
  ASSERT_TRUE(writeTextFile(dir + "/out.csv", csv, &error)) << error;
  std::ifstream f(dir + "/out.csv");
  std::stringstream back;
  back << f.rdbuf();
  EXPECT_EQ(back.str(), csv);
  EXPECT_FALSE(writeTextFile(dir + "/no/such/dir/out.csv", csv, &error));
  EXPECT_NE(error.find("cannot write"), std::string::npos);
  EXPECT_FALSE(writeTextFile("", csv, &error));
}

TEST(LoadTimelineTest, DamagedFileFailsWithOneLineEvenAfterAnEarlyTimeline) {
  TraceBuilder t(4);
  ringTrace(&t);
  const std::string path = t.build();
  // Overwrite the second half of the file: the calls may still be readable (an early timeline
  // may be handed out), but the whole-file check refuses the file and the load fails.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  f.seekp(size / 2);
  const std::string junk(static_cast<size_t>(size - size / 2), '\x5a');
  f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  f.close();
  LoadOptions options;
  options.on_timeline = [](TimelineModel&&) {};
  TimelineModel full;
  std::string error;
  EXPECT_FALSE(loadTimeline(path, options, &full, &error));
  EXPECT_FALSE(error.empty());
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(LoadTimelineTest, EarlyTimelineHasTheCallsBeforeTheAnalysis) {
  TraceBuilder t(4);
  ringTrace(&t);
  t.colls.push_back({2, 0, 1, "allreduce", "ringside-ring", 4000, 5000, 5600});
  const std::string path = t.build();
  LoadOptions options;
  options.counter_bins = 10;
  int calls = 0;
  TimelineModel early;
  options.on_timeline = [&](TimelineModel&& m) {
    ++calls;
    early = std::move(m);
  };
  TimelineModel full;
  std::string error;
  ASSERT_TRUE(loadTimeline(path, options, &full, &error)) << error;
  EXPECT_EQ(calls, 1);
  EXPECT_FALSE(early.analysed);
  EXPECT_TRUE(full.analysed);
  EXPECT_EQ(early.path, full.path);
  EXPECT_TRUE(early.analysis.collectives.empty());
  EXPECT_EQ(early.analysis.ranks_present, full.analysis.ranks_present);
  // The same rank lanes and calls; no phases, no link lanes, nothing matched yet.
  size_t rank_lanes = 0;
  for (const Lane& l : full.lanes) rank_lanes += l.kind == LaneKind::kRank ? 1 : 0;
  ASSERT_EQ(early.lanes.size(), rank_lanes);
  EXPECT_GT(full.lanes.size(), rank_lanes);  // link lanes
  early.buildLanes();  // loaded lanes are built when first needed
  full.buildLanes();
  for (size_t i = 0; i < rank_lanes; ++i) {
    const auto& e = early.lanes[i].rows[0].events;
    const auto& f = full.lanes[i].rows[0].events;
    EXPECT_EQ(early.lanes[i].name, full.lanes[i].name);
    ASSERT_EQ(e.size(), f.size());
    for (size_t k = 0; k < e.size(); ++k) {
      EXPECT_EQ(e[k].start_ns, f[k].start_ns);
      EXPECT_EQ(e[k].end_ns, f[k].end_ns);
      EXPECT_EQ(early.labels[static_cast<size_t>(e[k].label)], full.labels[static_cast<size_t>(f[k].label)]);
      EXPECT_EQ(e[k].collective, -1);
      EXPECT_GE(f[k].collective, 0);
    }
    EXPECT_TRUE(early.lanes[i].rows[1].events.empty());
    EXPECT_FALSE(full.lanes[i].rows[1].events.empty());
  }
  EXPECT_EQ(early.lanes[0].rows[0].events.size(), 2u);
  // The links each collective used come from the analysis' pass over the transfers.
  EXPECT_TRUE(early.links_begin.empty());
  ASSERT_EQ(full.analysis.collectives.size(), 2u);
  ASSERT_EQ(full.links_begin.size(), 3u);
  EXPECT_EQ(full.links_begin[0], 0);
  ASSERT_EQ(full.links_begin[1], 4);
  EXPECT_EQ(full.links_begin[2], 4);  // the second call moved nothing
  for (int r = 0; r < 4; ++r) {
    const CollectiveLink& l = full.collective_links[static_cast<size_t>(r)];
    EXPECT_EQ(l.src, r);
    EXPECT_EQ(l.dst, (r + 1) % 4);
    EXPECT_EQ(l.bytes, 6000);
    EXPECT_EQ(l.messages, 6);
  }
  // A load without the callback gives the same full model.
  TimelineModel plain;
  LoadOptions plain_options;
  plain_options.counter_bins = 10;
  ASSERT_TRUE(loadTimeline(path, plain_options, &plain, &error)) << error;
  EXPECT_EQ(plain.lanes.size(), full.lanes.size());
  EXPECT_EQ(plain.start_ns, full.start_ns);
  EXPECT_EQ(plain.end_ns, full.end_ns);
}

// The phases: the analysis hands its rows over (AnalysisOptions::on_phase) and the model keeps
// them as PhaseRecords, 56 bytes where a PhaseStats takes 128, with the lanes' events allocated
// exactly; phasesOf() gives back what analyze() alone gives, row for row.
TEST(LoadTimelineTest, PhasesKeptCompactlyAsTheAnalysisGivesThem) {
  TraceBuilder t(4);
  ringTrace(&t);
  for (int r = 0; r < 4; ++r) {  // a second all-reduce: one send a rank, Gloo-style, phases inferred
    t.colls.push_back({2, r, 1, "allreduce", "gloo", 4000, 5000 + 10 * r, 5600});
    t.xfers.push_back({2, r, (r + 1) % 4, "send", 500, 5100, 5300, "", 0});
  }
  const std::string path = t.build();
  const Analysis a = analyzeTrace(path);
  ASSERT_FALSE(a.phases.empty());
  LoadOptions options;
  options.counter_bins = 10;
  TimelineModel m;
  std::string error;
  ASSERT_TRUE(loadTimeline(path, options, &m, &error)) << error;
  EXPECT_TRUE(m.analysis.phases.empty());
  ASSERT_EQ(m.phases.size(), a.phases.size());
  static_assert(sizeof(PhaseRecord) <= 56 && sizeof(TimelineEvent) <= 32);
  size_t shown = 0;
  for (size_t c = 0; c < m.analysis.collectives.size(); ++c) {
    const auto& inst = m.analysis.collectives[c];
    std::vector<analyzer::PhaseStats> want;
    for (const auto& p : a.phases) {
      if (p.comm == inst.comm && p.seq == inst.seq) want.push_back(p);
    }
    std::stable_sort(want.begin(), want.end(), [](const auto& x, const auto& y) {
      return std::pair(x.rank, x.start_ns) < std::pair(y.rank, y.start_ns);
    });
    const std::vector<analyzer::PhaseStats> got = m.phasesOf(static_cast<int>(c));
    ASSERT_EQ(got.size(), want.size()) << "instance " << c;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].comm, want[i].comm);
      EXPECT_EQ(got[i].seq, want[i].seq);
      EXPECT_EQ(got[i].rank, want[i].rank);
      EXPECT_EQ(got[i].phase, want[i].phase);
      EXPECT_EQ(got[i].start_ns, want[i].start_ns);
      EXPECT_EQ(got[i].end_ns, want[i].end_ns);
      EXPECT_EQ(got[i].steps, want[i].steps);
      EXPECT_EQ(got[i].slowest_step, want[i].slowest_step);
      EXPECT_EQ(got[i].slowest_step_ns, want[i].slowest_step_ns);
      EXPECT_EQ(got[i].inferred, want[i].inferred);
      EXPECT_EQ(got[i].wait_ns, want[i].wait_ns);
    }
    shown += got.size();
  }
  EXPECT_EQ(shown, a.phases.size());
  // Every row's events allocated once, exactly: 40 bytes an event with its running maximum.
  m.buildLanes();  // loaded lanes are built when first needed
  size_t phase_events = 0;
  for (const Lane& l : m.lanes) {
    for (size_t r = 0; r < l.rows.size(); ++r) {
      EXPECT_EQ(l.rows[r].events.capacity(), l.rows[r].events.size()) << l.name << " " << l.rows[r].name;
      if (static_cast<int>(r) >= l.call_rows) phase_events += l.rows[r].events.size();
    }
  }
  EXPECT_EQ(phase_events, a.phases.size());
}

// A loaded trace's rank lanes are built when first needed (docs/viewer.md, "Memory at scale"):
// none at load, and built on demand they hold what a load that builds them all at once gives.
TEST(LoadTimelineTest, RankLanesBuiltOnDemandAsAtLoad) {
  TraceBuilder t(4);
  ringTrace(&t);
  t.colls.push_back({2, 1, 1, "allreduce", "ringside-ring", 4000, 5000, 5600});
  const std::string path = t.build();
  std::string error;
  LoadOptions options;
  TimelineModel lazy, eager;
  ASSERT_TRUE(loadTimeline(path, options, &lazy, &error)) << error;
  options.lazy_lanes = false;
  ASSERT_TRUE(loadTimeline(path, options, &eager, &error)) << error;
  EXPECT_EQ(lazy.unbuiltLanes(), 4u);
  EXPECT_EQ(eager.unbuiltLanes(), 0u);
  EXPECT_EQ(lazy.overview.wait, eager.overview.wait);
  EXPECT_EQ(lazy.overview.move, eager.overview.move);
  lazy.buildLanes();
  ASSERT_EQ(lazy.lanes.size(), eager.lanes.size());
  for (size_t i = 0; i < lazy.lanes.size(); ++i) {
    ASSERT_EQ(lazy.lanes[i].rows.size(), eager.lanes[i].rows.size()) << lazy.lanes[i].name;
    EXPECT_EQ(lazy.lanes[i].call_rows, eager.lanes[i].call_rows);
    for (size_t r = 0; r < lazy.lanes[i].rows.size(); ++r) {
      const EventRow &g = lazy.lanes[i].rows[r], &w = eager.lanes[i].rows[r];
      ASSERT_EQ(g.events.size(), w.events.size()) << lazy.lanes[i].name << " " << g.name;
      for (size_t k = 0; k < g.events.size(); ++k) {
        EXPECT_EQ(std::tie(g.events[k].start_ns, g.events[k].end_ns, g.events[k].label, g.events[k].collective),
                  std::tie(w.events[k].start_ns, w.events[k].end_ns, w.events[k].label, w.events[k].collective));
      }
      EXPECT_EQ(g.max_end_prefix, w.max_end_prefix);
    }
  }
}

// Past link_bins_budget (ranks x 2 links x bins) the analysis bins each link more coarsely, never
// under 256 bins.
TEST(LoadTimelineTest, ManyRanksGetFewerLinkBins) {
  TraceBuilder t(4);
  ringTrace(&t);
  const std::string path = t.build();
  for (const auto& [budget, bins] : {std::pair<int64_t, size_t>{0, 1024}, {8 * 1024, 1024}, {8 * 300, 300},
                                     {8, 256}}) {
    LoadOptions options;
    options.counter_bins = 1024;
    options.link_bins_budget = budget;
    TimelineModel m;
    std::string error;
    ASSERT_TRUE(loadTimeline(path, options, &m, &error)) << error;
    size_t links = 0;
    for (const Lane& l : m.lanes) {
      if (l.kind != LaneKind::kLink) continue;
      ++links;
      EXPECT_EQ(l.counter.values.size(), bins) << "budget " << budget;
    }
    EXPECT_EQ(links, 4u);
  }
}

// Levels of detail that follow the zoom (lod.h, downsampleLink): the link lanes' messages come
// from the trace, one per send row, and zoomed in past the bins the columns are the messages
// themselves, binned per pixel, with every byte accounted for.
TEST(LinkLodTest, ZoomingInBinsTheTracesMessagesPerPixel) {
  TraceBuilder t(4);
  ringTrace(&t, 1000);
  std::string path = t.build();
  LoadOptions options;
  options.counter_bins = 4;  // coarse on purpose: zooming in must go finer than this
  options.fine_bins_budget = 0;
  TimelineModel m;
  std::string error;
  ASSERT_TRUE(loadTimeline(path, options, &m, &error)) << error;
  int links = 0;
  for (const Lane& lane : m.lanes) {
    if (lane.kind != LaneKind::kLink) continue;
    ++links;
    ASSERT_EQ(lane.messages.size(), 6u) << lane.name;  // the trace's count per link
    EXPECT_TRUE(lane.fine.values.empty());
    // Zoomed out: the analysis' bins.
    TimeAxis out{m.start_ns, m.end_ns, 0, 2};  // 2 pixels: each covers 2 of the 4 bins
    EXPECT_EQ(linkLevel(lane, out), LinkLevel::kCounter);
    // Zoomed into the second message (start 1900, 200 ns long), 2 ns a pixel: the messages.
    TimeAxis in{1850, 2150, 0, 150};
    ASSERT_EQ(linkLevel(lane, in), LinkLevel::kMessages);
    const auto cols = downsampleLink(lane, in);
    ASSERT_EQ(cols.size(), 150u);
    double bytes = 0, peak = 0;
    for (const CounterColumn& c : cols) {
      bytes += c.max * 2 / 1e9;  // bytes/s x 2 ns
      peak = std::max(peak, c.max);
    }
    EXPECT_NEAR(bytes, 1000, 1e-6);
    EXPECT_NEAR(peak, 1000.0 / 200 * 1e9, 1e3);  // the message's own rate: 5 GB/s
    EXPECT_DOUBLE_EQ(cols.front().max, 0);       // before it started
    const MessageSpan one = messagesIn(lane, 1950, 1951);
    EXPECT_EQ(one.count, 1);
    EXPECT_EQ(one.bytes, 1000);
  }
  EXPECT_EQ(links, 4);
}

// The finer bins sum to the link's bytes, at any budget, and sit between the counter and the
// messages.
TEST(LinkLodTest, FineBinsKeepEveryByte) {
  TraceBuilder t(4);
  ringTrace(&t, 1000);
  std::string path = t.build();
  LoadOptions options;
  options.counter_bins = 2;
  options.fine_bins_budget = 4 * 64;  // 64 a link
  TimelineModel m;
  std::string error;
  ASSERT_TRUE(loadTimeline(path, options, &m, &error)) << error;
  for (const Lane& lane : m.lanes) {
    if (lane.kind != LaneKind::kLink) continue;
    ASSERT_FALSE(lane.fine.values.empty());
    EXPECT_LT(lane.fine.bin_ns, lane.counter.bin_ns);
    double bytes = 0;
    for (double v : lane.fine.values) bytes += v * static_cast<double>(lane.fine.bin_ns) / 1e9;
    EXPECT_NEAR(bytes, 6000, 1e-6);
    const double fine_px = static_cast<double>(lane.fine.bin_ns);
    TimeAxis mid{m.start_ns, m.start_ns + static_cast<int64_t>(fine_px * 50), 0, 25};  // 2 bins a pixel
    EXPECT_EQ(linkLevel(lane, mid), LinkLevel::kFine);
  }
}

// The overview: a rank that arrives last waits least; the others' rows show the waiting.
TEST(OverviewTest, TheLateRankWaitsLeastAndIsNamed) {
  TraceBuilder t(4);
  for (int r = 0; r < 4; ++r) {
    for (int s = 0; s < 5; ++s) {
      const int64_t base = 10000 * s, start = base + (r == 2 ? 6000 : 1000 * r);
      t.colls.push_back({s + 1, r, s, "allreduce", "gloo", 4000, start, base + 8000});
    }
  }
  std::string path = t.build();
  TimelineModel m;
  std::string error;
  ASSERT_TRUE(loadTimeline(path, LoadOptions{}, &m, &error)) << error;
  const Overview& o = m.overview;
  ASSERT_EQ(o.rows, 4);
  ASSERT_GT(o.bins, 0);
  EXPECT_EQ(o.latest_rank, 2);
  EXPECT_EQ(o.latest_count, 5);
  std::vector<double> wait(4, 0), move(4, 0);
  for (int r = 0; r < 4; ++r) {
    for (int b = 0; b < o.bins; ++b) {
      wait[static_cast<size_t>(r)] += o.waitAt(r, b);
      move[static_cast<size_t>(r)] += o.moveAt(r, b);
      EXPECT_LE(o.waitAt(r, b) + o.moveAt(r, b), 1.0f + 1e-6f);
    }
  }
  EXPECT_NEAR(wait[2], 0, 1e-9);  // it never waited: everyone was there before it
  for (int r : {0, 1, 3}) EXPECT_GT(wait[static_cast<size_t>(r)], move[static_cast<size_t>(r)]);
  EXPECT_NEAR(move[0], move[2], move[0] * 0.02);  // all moved data together for 2 us a step
  // The picture: the late rank's row is not orange like the others'.
  const auto rgba = overviewRgba(o, 100, true);
  ASSERT_EQ(rgba.size(), 4u * 100 * 4);
  auto redness = [&](int row) {
    double sum = 0;
    for (int x = 0; x < 100; ++x) sum += rgba[(static_cast<size_t>(row) * 100 + static_cast<size_t>(x)) * 4];
    return sum;
  };
  EXPECT_LT(redness(2) * 1.5, redness(0));
}

// Many ranks: consecutive ranks share a row, every rank in exactly one.
TEST(OverviewTest, ManyRanksGroupIntoRows) {
  analyzer::Analysis a;
  a.world_size = 300;
  std::vector<RankCall> calls;
  for (int r = 0; r < 300; ++r) {
    a.ranks_present.push_back(r);
    calls.push_back({r, "w", 0, "allreduce", 0, 100, false});
  }
  TimelineModel m;
  buildTimeline(a, calls, &m);
  const Overview& o = m.overview;
  ASSERT_EQ(o.rows, 128);
  EXPECT_EQ(o.first_rank.front(), 0);
  EXPECT_EQ(o.last_rank.back(), 299);
  for (int r = 1; r < o.rows; ++r) EXPECT_EQ(o.first_rank[static_cast<size_t>(r)], o.last_rank[static_cast<size_t>(r) - 1] + 1);
  for (int b = 0; b < o.bins; ++b) EXPECT_NEAR(o.moveAt(0, b), 1.0f, 1e-5f);  // unmatched calls: moving
  EXPECT_EQ(o.most_ranks_in_row, 3);  // 300 ranks in 128 rows: 2 or 3 a row (the title says 3)
}

}  // namespace
}  // namespace ringside::gui
