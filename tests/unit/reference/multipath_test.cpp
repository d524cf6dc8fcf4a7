// The multipath plan (reference/src/multipath.cpp): which rings it packs over
// which links, and their shares. The all-reduce itself is checked for every
// dtype, op and rank count in allreduce_test.cpp, its faults in fault_test.cpp.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "multipath.h"

namespace ringside::reference::detail {
namespace {

LinkCapacities parse(const std::string& text, int n) {
  LinkCapacities caps;
  std::string error;
  EXPECT_TRUE(parseTopologyCapacities(text, n, &caps, &error)) << error;
  return caps;
}

std::string fourHosts(const std::string& links) {
  return "ringside-topology 1\nnode h0 ranks 0\nnode h1 ranks 1\nnode h2 ranks 2\n"
         "node h3 ranks 3\n" +
         links;
}

// How many of the plan's rings cross each directed rank pair.
std::map<std::pair<int, int>, int> linkUse(const MultipathPlan& plan) {
  std::map<std::pair<int, int>, int> use;
  for (const auto& c : plan.cycles)
    for (size_t k = 0; k < c.size(); ++k) ++use[{c[k], c[(k + 1) % c.size()]}];
  return use;
}

TEST(MultipathPlan, FullMeshOfFourUsesEveryDirectedLinkEqually) {
  MultipathPlan plan = planMultipath(equalCapacities(4));
  // K4 with both directions: no 3 directed Hamiltonian cycles cover its 12 links once (the
  // complete symmetric digraph on 4 vertices has no Hamiltonian decomposition), so all 6
  // directed rings run, every directed link carried by exactly 2 at half its rate.
  ASSERT_EQ(plan.cycles.size(), 6u) << plan.note;
  auto use = linkUse(plan);
  EXPECT_EQ(use.size(), 12u);
  for (auto& [pair, n] : use) EXPECT_EQ(n, 2) << pair.first << "->" << pair.second;
  for (double r : plan.rates) EXPECT_DOUBLE_EQ(r, 0.5);
  EXPECT_DOUBLE_EQ(plan.total_rate, 3.0);
  EXPECT_DOUBLE_EQ(plan.ring_rate, 1.0);
  EXPECT_FALSE(plan.is_ring);
  EXPECT_NE(plan.note.find("3.00x the ring"), std::string::npos) << plan.note;
}

TEST(MultipathPlan, SimplexRingIsExactlyTheRing) {
  MultipathPlan plan = planMultipath(parse(fourHosts("link h0 h1 bandwidth 1Gbit simplex\n"
                                                     "link h1 h2 bandwidth 1Gbit simplex\n"
                                                     "link h2 h3 bandwidth 1Gbit simplex\n"
                                                     "link h3 h0 bandwidth 1Gbit simplex\n"),
                                           4));
  ASSERT_EQ(plan.cycles.size(), 1u) << plan.note;
  EXPECT_EQ(plan.cycles[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(plan.is_ring);
  EXPECT_NE(plan.note.find("runs as the ring"), std::string::npos) << plan.note;
}

TEST(MultipathPlan, DuplexRingOnlyRunsTheRingBothWays) {
  // Only the square's sides are cabled: the ring is the only Hamiltonian cycle, and it leaves
  // the reverse direction of every cable idle; the plan adds the reverse ring.
  MultipathPlan plan = planMultipath(parse(fourHosts("link h0 h1 bandwidth 200Mbit\n"
                                                     "link h1 h2 bandwidth 200Mbit\n"
                                                     "link h2 h3 bandwidth 200Mbit\n"
                                                     "link h3 h0 bandwidth 200Mbit\n"),
                                           4));
  ASSERT_EQ(plan.cycles.size(), 2u) << plan.note;
  EXPECT_EQ(plan.cycles[0], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(plan.cycles[1], (std::vector<int>{0, 3, 2, 1}));
  auto use = linkUse(plan);
  EXPECT_EQ(use.size(), 8u);
  EXPECT_EQ(use.count({0, 2}) + use.count({1, 3}), 0u);  // no cable there
  EXPECT_DOUBLE_EQ(plan.total_rate, 2 * plan.ring_rate);
}

TEST(MultipathPlan, SlowLinkGetsASmallShare) {
  MultipathPlan plan = planMultipath(parse(fourHosts("link h0 h1 bandwidth 200Mbit\n"
                                                     "link h0 h2 bandwidth 200Mbit\n"
                                                     "link h0 h3 bandwidth 200Mbit\n"
                                                     "link h1 h2 bandwidth 40Mbit\n"
                                                     "link h1 h3 bandwidth 200Mbit\n"
                                                     "link h2 h3 bandwidth 200Mbit\n"),
                                           4));
  // The ring crosses 1->2 at 5 MB/s; the plan carries most data over the other links.
  EXPECT_DOUBLE_EQ(plan.ring_rate, 5e6);
  EXPECT_GE(plan.total_rate, 9.99 * plan.ring_rate) << plan.note;  // 0-1-3-2 both ways
  // No link carries more than its capacity.
  LinkCapacities caps = parse(fourHosts("link h0 h1 bandwidth 200Mbit\n"
                                        "link h0 h2 bandwidth 200Mbit\n"
                                        "link h0 h3 bandwidth 200Mbit\n"
                                        "link h1 h2 bandwidth 40Mbit\n"
                                        "link h1 h3 bandwidth 200Mbit\n"
                                        "link h2 h3 bandwidth 200Mbit\n"),
                              4);
  std::vector<double> load(caps.capacity.size(), 0);
  for (size_t c = 0; c < plan.cycles.size(); ++c)
    for (size_t k = 0; k < 4; ++k)
      load[static_cast<size_t>(caps.resource[static_cast<size_t>(
          plan.cycles[c][k] * 4 + plan.cycles[c][(k + 1) % 4])])] += plan.rates[c];
  for (size_t r = 0; r < load.size(); ++r)
    EXPECT_LE(load[r], caps.capacity[r] * (1 + 1e-9)) << caps.names[r];
}

TEST(MultipathPlan, MissingLinksAreNeverUsed) {
  // Ranks 0..4, a ring 0-1-2-3-4 plus chords 0-2 and 1-3: every ring the plan picks must run
  // over cabled pairs only.
  std::string text = "ringside-topology 1\n";
  for (int r = 0; r < 5; ++r)
    text += "node h" + std::to_string(r) + " ranks " + std::to_string(r) + "\n";
  text += "link h0 h1\nlink h1 h2\nlink h2 h3\nlink h3 h4\nlink h4 h0\nlink h0 h2\nlink h1 h3\n";
  LinkCapacities caps = parse(text, 5);
  MultipathPlan plan = planMultipath(caps);
  for (const auto& c : plan.cycles) {
    ASSERT_EQ(c.size(), 5u);
    for (size_t k = 0; k < 5; ++k)
      EXPECT_GE(caps.resource[static_cast<size_t>(c[k] * 5 + c[(k + 1) % 5])], 0) << plan.note;
  }
  EXPECT_GE(plan.total_rate, 2 * plan.ring_rate) << plan.note;
}

TEST(MultipathPlan, NoHamiltonianCycleFallsBackToTheRing) {
  // A star: no ring over cabled pairs exists.
  MultipathPlan plan = planMultipath(parse(fourHosts("link h0 h1\nlink h0 h2\nlink h0 h3\n"), 4));
  EXPECT_TRUE(plan.is_ring);
  EXPECT_NE(plan.note.find("no ring over the topology's links"), std::string::npos) << plan.note;
}

TEST(MultipathPlan, SharesAreProportionalAndCoverTheBuffer) {
  MultipathPlan plan = planMultipath(equalCapacities(4));
  for (size_t count : {size_t{1}, size_t{5}, size_t{6}, size_t{7919}}) {
    auto share = multipathShares(plan, count);
    size_t sum = 0;
    for (size_t s : share) {
      sum += s;
      EXPECT_LE(s, count / share.size() + 1);
    }
    EXPECT_EQ(sum, count);
  }
}

TEST(MultipathPlan, HostPairsShareOneCable) {
  // Two hosts of two ranks: the inter-host cable is one resource for all 4 rank pairs.
  LinkCapacities caps = parse(
      "ringside-topology 1\nnode a ranks 0-1\nnode b ranks 2-3\n"
      "link a a bandwidth 20GB/s\nlink b b bandwidth 20GB/s\nlink a b bandwidth 10Gbit\n",
      4);
  EXPECT_EQ(caps.capacity.size(), 4u);  // a->a, a->b, b->a, b->b
  EXPECT_EQ(caps.resource[0 * 4 + 2], caps.resource[1 * 4 + 3]);
  MultipathPlan plan = planMultipath(caps);
  // Any Hamiltonian cycle crosses a->b and b->a at least once each: at most 2 x 1.25 GB/s.
  EXPECT_LE(plan.total_rate, 2 * 1.25e9 * (1 + 1e-9)) << plan.note;
}

TEST(MultipathPlan, BadTopologyIsAnError) {
  LinkCapacities caps;
  std::string error;
  EXPECT_FALSE(parseTopologyCapacities("node h0 ranks 0\n", 1, &caps, &error));
  EXPECT_FALSE(parseTopologyCapacities("ringside-topology 1\nnode h0 ranks 0\n", 2, &caps, &error));
  EXPECT_NE(error.find("rank 1 is on no node"), std::string::npos) << error;
  EXPECT_FALSE(parseTopologyCapacities(
      "ringside-topology 1\nnode h0 ranks 0\nnode h1 ranks 1\nlink h0 h1 bandwidth fast\n", 2,
      &caps, &error));
  EXPECT_NE(error.find("line 4"), std::string::npos) << error;
}

TEST(MultipathProbe, RoundsPairEveryHostOnceAndNoHostTwiceInARound) {
  for (int n = 1; n <= 13; ++n) {
    auto rounds = probeRounds(n);
    EXPECT_EQ(rounds.size(), static_cast<size_t>(n < 2 ? 0 : n % 2 == 0 ? n - 1 : n)) << n;
    std::map<std::pair<int, int>, int> seen;
    for (const auto& round : rounds) {
      std::set<int> busy;
      for (auto [a, b] : round) {
        EXPECT_LT(a, b);
        EXPECT_TRUE(busy.insert(a).second) << "n " << n << ": " << a << " twice in a round";
        EXPECT_TRUE(busy.insert(b).second) << "n " << n << ": " << b << " twice in a round";
        ++seen[{a, b}];
      }
    }
    EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2)) << n;
    for (auto& [pair, times] : seen) EXPECT_EQ(times, 1) << pair.first << "-" << pair.second;
  }
}

// Four hosts, one rank each, every rate 25 MB/s give or take up to 15 %: the noise is rounded
// away and the plan is the equal-links plan (3x the ring).
TEST(MultipathProbe, NoisyEqualLinksPlanAsEqual) {
  ProbeHosts hosts = probeHosts({"a", "b", "c", "d"});
  ASSERT_EQ(hosts.first.size(), 4u);
  const double noise[] = {1.0, 0.86, 0.93, 1.0, 0.97, 0.9, 1.0, 0.88, 0.95, 0.99, 0.87, 0.92};
  std::vector<double> rate(16, 0);
  int k = 0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) rate[static_cast<size_t>(a * 4 + b)] = 25e6 * noise[k++];
  LinkCapacities caps = probedCapacities(4, hosts, rate, {}, "test");
  for (double c : caps.capacity) EXPECT_DOUBLE_EQ(c, 25e6);
  MultipathPlan plan = planMultipath(caps);
  EXPECT_EQ(plan.cycles.size(), 6u);
  EXPECT_NEAR(plan.total_rate / plan.ring_rate, 3.0, 1e-9);
  EXPECT_NE(plan.note.find("probe of every host pair at communicator creation (test; 21.5-25.0 MB/s)"), std::string::npos)
      << plan.note;
}

// h1 <-> h2 measured 5x slower: the plan is the topology file's slow-link plan, around it.
TEST(MultipathProbe, SlowPairIsAvoided) {
  ProbeHosts hosts = probeHosts({"h0", "h1", "h2", "h3"});
  std::vector<double> rate(16, 25e6);
  rate[1 * 4 + 2] = rate[2 * 4 + 1] = 5e6;
  MultipathPlan plan = planMultipath(probedCapacities(4, hosts, rate, {}, "test"));
  auto use = linkUse(plan);
  EXPECT_EQ(use.count({1, 2}) + use.count({2, 1}), 0u) << plan.note;
  EXPECT_GT(plan.total_rate / plan.ring_rate, 3.0) << plan.note;
}

// Two hosts with two ranks each: the ranks of a host share its links (one resource per host
// pair) and their local link; a pair with no rate measured has no link.
TEST(MultipathProbe, RanksOfAHostShareItsLinks) {
  ProbeHosts hosts = probeHosts({"10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.2"});
  EXPECT_EQ(hosts.host_of, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(hosts.first, (std::vector<int>{0, 2}));
  LinkCapacities caps = probedCapacities(4, hosts, {0, 12.5e6, 12.5e6, 0}, {}, "test");
  ASSERT_EQ(caps.capacity.size(), 4u);  // h0->h0, h0->h1, h1->h0, h1->h1
  EXPECT_EQ(caps.resource[0 * 4 + 2], caps.resource[1 * 4 + 3]);
  EXPECT_EQ(caps.resource[0 * 4 + 1], caps.resource[1 * 4 + 0]);
  EXPECT_DOUBLE_EQ(caps.capacity[static_cast<size_t>(caps.resource[0 * 4 + 1])], 125e6);
  LinkCapacities one_way = probedCapacities(4, hosts, {0, 12.5e6, 0, 0}, {}, "test");
  EXPECT_LT(one_way.resource[2 * 4 + 0], 0);
  EXPECT_GE(one_way.resource[0 * 4 + 2], 0);
}

// All pairs at once: on a switch with one NIC a host, each of a host's 3 links gets a third of
// the NIC, so every host sends and receives one link's worth in all. The rings would share the
// NICs: the plan is the ring. On a full mesh every link keeps its rate: 3x, as without the fan.
TEST(MultipathProbe, SharedNicRunsAsTheRing) {
  ProbeHosts hosts = probeHosts({"h0", "h1", "h2", "h3"});
  std::vector<double> rate(16, 25e6), nic(4, 25e6), mesh(4, 72e6);
  for (int h = 0; h < 4; ++h) rate[h * 5] = 0;
  MultipathPlan shared = planMultipath(probedCapacities(4, hosts, rate, nic, "test"));
  EXPECT_TRUE(shared.is_ring) << shared.note;
  EXPECT_NE(shared.note.find("beats the ring here by 25 % (the probe's margin)"), std::string::npos)
      << shared.note;
  EXPECT_NE(shared.note.find("each host received 25.0-25.0 MB/s in all"), std::string::npos) << shared.note;
  MultipathPlan full = planMultipath(probedCapacities(4, hosts, rate, mesh, "test"));
  EXPECT_EQ(full.cycles.size(), 6u) << full.note;
  EXPECT_NEAR(full.total_rate / full.ring_rate, 72.0 / 25.0, 1e-9) << full.note;
}

}  // namespace
}  // namespace ringside::reference::detail
