// collective/topology_file.h: the one parser of the topology file says where it stopped (line
// and why), and reads every unit form format/ reads.
#include <gtest/gtest.h>

#include "ringside/collective/topology_file.h"

namespace ringside::collective {
namespace {

TEST(TopologyFile, ReadsNodesLinksAndEveryUnitForm) {
  Topology t;
  TopologyError why;
  ASSERT_TRUE(parseTopology("ringside-topology 1\nnode a ranks 0-1\nnode b ranks 2\n"
                            "link a b bandwidth 100Gb/s latency 10us\nlink b b bandwidth 25GB/s simplex\n",
                            &t, &why))
      << why.line << ": " << why.what;
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_EQ(t.nodeOf(1), 0);
  EXPECT_EQ(t.nodeOf(2), 1);
  ASSERT_EQ(t.links.size(), 2u);
  EXPECT_DOUBLE_EQ(t.links[0].bandwidth_gbps, 12.5);
  EXPECT_DOUBLE_EQ(t.links[0].latency_s, 10e-6);
  EXPECT_DOUBLE_EQ(t.links[1].bandwidth_gbps, 25);
  EXPECT_FALSE(t.links[1].duplex);
  EXPECT_EQ(t.linkBetween(0, 2), &t.links[0]);
  EXPECT_EQ(t.linkBetween(2, 0), &t.links[0]);  // duplex
}

TEST(TopologyFile, SaysTheLineAndWhy) {
  Topology t;
  TopologyError why;
  EXPECT_FALSE(parseTopology("ringside-topology 1\nnode a ranks 0\nlink a a bandwidth fast\n", &t, &why));
  EXPECT_EQ(why.line, 3);
  EXPECT_EQ(why.what, "bad bandwidth 'fast' (e.g. 1Gbit, 100Mbit, 2GB/s)");
  EXPECT_FALSE(parseTopology("# nothing\n", &t, &why));
  EXPECT_EQ(why.line, 0);
  EXPECT_EQ(why.what, "empty topology (expected 'ringside-topology 1')");
  EXPECT_FALSE(parseTopology("ringside-topology 1\nswitch s0\n", &t, &why));
  EXPECT_EQ(why.line, 2);
  EXPECT_EQ(why.what, "unknown statement 'switch'");
}

}  // namespace
}  // namespace ringside::collective
