// collective/multipath_plan.h: the planner the reference runs and the what-if and `simulate`
// predict with plans from a parsed topology file and from a Topology built in memory alike.
#include <gtest/gtest.h>

#include <string>

#include "ringside/collective/multipath_plan.h"
#include "ringside/collective/topology_file.h"

namespace ringside::collective {
namespace {

Topology parsed(const std::string& text) {
  Topology t;
  TopologyError why;
  EXPECT_TRUE(parseTopology(text, &t, &why)) << why.line << ": " << why.what;
  return t;
}

const char kSquare[] =
    "ringside-topology 1\nnode h0 ranks 0\nnode h1 ranks 1\nnode h2 ranks 2\nnode h3 ranks 3\n"
    "link h0 h1 bandwidth 25MB/s\nlink h1 h2 bandwidth 25MB/s\nlink h2 h3 bandwidth 25MB/s\n"
    "link h3 h0 bandwidth 25MB/s\n";

// 4 ranks with a cable per pair: all 6 directed rings, 3x the ring; the square without its
// diagonals: the ring both ways, 2x; simplex cables: only the ring itself.
TEST(MultipathPlan, RateRatioFollowsTheCables) {
  std::string basis;
  const std::string mesh = std::string(kSquare) + "link h0 h2 bandwidth 25MB/s\nlink h1 h3 bandwidth 25MB/s\n";
  EXPECT_DOUBLE_EQ(multipathRateRatio(parsed(mesh), 4, &basis), 3);
  EXPECT_EQ(basis, "6 rings over 12 of 12 links, 3.00x the ring's rate; capacities from the topology");
  EXPECT_DOUBLE_EQ(multipathRateRatio(parsed(kSquare), 4, &basis), 2);
  std::string simplex =
      "ringside-topology 1\nnode h0 ranks 0\nnode h1 ranks 1\nnode h2 ranks 2\n"
      "link h0 h1 simplex\nlink h1 h2 simplex\nlink h2 h0 simplex\n";
  EXPECT_DOUBLE_EQ(multipathRateRatio(parsed(simplex), 3, &basis), 1);
  EXPECT_NE(basis.find("runs as the ring"), std::string::npos) << basis;
}

// simulate builds its cluster in memory (no parser indexes): the same plan as the file.
TEST(MultipathPlan, TopologyBuiltInMemoryPlansAsItsFile) {
  Topology t;
  for (int r = 0; r < 4; ++r) t.nodes.push_back({"h" + std::to_string(r), {r}});
  for (int r = 0; r < 4; ++r) t.links.push_back({"h" + std::to_string(r), "h" + std::to_string((r + 1) % 4), 0.025, -1, true});
  std::string from_file, in_memory;
  const double file_ratio = multipathRateRatio(parsed(kSquare), 4, &from_file);
  EXPECT_DOUBLE_EQ(multipathRateRatio(t, 4, &in_memory), file_ratio);
  EXPECT_EQ(in_memory, from_file);
  LinkCapacities caps;
  std::string error;
  ASSERT_TRUE(topologyCapacities(t, 4, &caps, &error)) << error;
  EXPECT_EQ(caps.capacity.size(), 8u);  // 4 cables, both ways
  EXPECT_DOUBLE_EQ(caps.capacity[0], 25e6);
}

TEST(MultipathPlan, NoPlanSaysWhy) {
  std::string basis;
  EXPECT_LT(multipathRateRatio(parsed(kSquare), 5, &basis), 0);
  EXPECT_EQ(basis, "no plan: rank 4 is on no node");
  EXPECT_LT(multipathRateRatio(parsed(kSquare), 1, &basis), 0);
  EXPECT_EQ(basis, "no plan: fewer than 2 ranks");
}

}  // namespace
}  // namespace ringside::collective
