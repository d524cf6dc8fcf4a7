// The findings about algorithm, bucketing, the model fit and idle links, on synthetic traces of
// ring all-reduces whose messages cost exactly alpha + bytes x beta (docs/analyzer.md).
#include <gtest/gtest.h>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/findings.h"
#include "ringside/analyzer/simulate.h"
#include "ringside/analyzer/topology.h"
#include "trace_builder.h"

namespace ringside::analyzer {
namespace {
using testing_util::TraceBuilder;

constexpr int64_t kAlphaNs = 5000;    // 5 us per message
constexpr double kBetaNsPerByte = 0.1;  // 10 GB/s

// Appends one ring all-reduce of `bytes` per rank on 4 ranks at *clock, run by `library`: every
// rank enters at once, 6 steps of a segment (bytes / 4) each costing alpha + segment x beta,
// plus `extra_ns` of the library's own overhead. Advances *clock past it by `gap_ns`.
void ringCall(TraceBuilder* t, int64_t bytes, const std::string& library, int64_t extra_ns,
              int64_t gap_ns, int64_t* clock, int64_t* seq) {
  const int64_t segment = bytes / 4;
  const auto step_ns = static_cast<int64_t>(kAlphaNs + static_cast<double>(segment) * kBetaNsPerByte);
  const int64_t start = *clock, end = start + 6 * step_ns + extra_ns;
  for (int r = 0; r < 4; ++r) {
    t->colls.push_back({*seq + 1, r, *seq, "allreduce", library, bytes, start, end});
    for (int g = 0; g < 6; ++g) {
      const int64_t s = start + g * step_ns;
      const std::string phase = g < 3 ? "reduce-scatter" : "all-gather";
      t->xfers.push_back({*seq + 1, r, (r + 1) % 4, "send", segment, s, s + step_ns, phase});
      t->xfers.push_back({*seq + 1, r, (r + 1) % 4, "recv", segment, s, s + step_ns, phase});
    }
  }
  *clock = end + gap_ns;
  ++*seq;
}

Analysis run(const std::string& path, const Topology* topology = nullptr) {
  std::string error;
  auto reader = storage::TraceReader::open(path, &error);
  EXPECT_NE(reader, nullptr) << error;
  AnalysisOptions options;
  options.topology = topology;
  options.trace_path = "run.sqlite";
  Analysis a;
  EXPECT_TRUE(analyze(*reader, options, &a, &error)) << error;
  return a;
}

const Finding* findRule(const Analysis& a, const std::string& rule) {
  for (const Finding& f : a.findings) {
    if (f.rule == rule) return &f;
  }
  return nullptr;
}

// Calls of 4 KiB, 64 KiB and 4 MiB (sends of 1, 16 and 1024 KiB), far apart.
std::string mixedSizes(TraceBuilder* t, const std::string& library, int large_calls) {
  int64_t clock = 1'000'000, seq = 0;
  for (int i = 0; i < 3; ++i) ringCall(t, 4096, library, 0, 10'000'000, &clock, &seq);
  for (int i = 0; i < 3; ++i) ringCall(t, 65536, library, 0, 10'000'000, &clock, &seq);
  for (int i = 0; i < large_calls; ++i) ringCall(t, 4 << 20, library, 0, 10'000'000, &clock, &seq);
  return t->build();
}

TEST(ModelFitTest, FitsTheFastestSendsPerSize) {
  TraceBuilder t(4);
  Analysis a = run(mixedSizes(&t, "gloo", 3));
  ASSERT_EQ(a.model_source, "fitted") << a.model_note;
  EXPECT_NEAR(a.alpha_s * 1e9, kAlphaNs, 1);
  EXPECT_NEAR(a.beta_s_per_byte * 1e9, kBetaNsPerByte, 1e-6);
  EXPECT_TRUE(a.model_note.empty());
}

TEST(ModelFitTest, TooFewSizesSaysWhy) {
  TraceBuilder t(4);
  int64_t clock = 1000, seq = 0;
  for (int i = 0; i < 5; ++i) ringCall(&t, 4 << 20, "gloo", 0, 1000, &clock, &seq);
  for (int i = 0; i < 5; ++i) ringCall(&t, 2 << 20, "gloo", 0, 1000, &clock, &seq);
  Analysis a = run(t.build());
  EXPECT_EQ(a.model_source, "");
  EXPECT_LT(a.alpha_s, 0);
  EXPECT_NE(a.model_note.find("too few sizes to fit a model"), std::string::npos) << a.model_note;
  EXPECT_EQ(findRule(a, "algorithm"), nullptr);
  EXPECT_EQ(findRule(a, "low-busbw"), nullptr);
}

// 4 ranks, each a node of its own, a cable between every pair (the emulated square mesh): the
// topology under which the report prices the tree with a link per tree edge (kPerPeer). The links
// give no bandwidth: the fitted model prices them.
Topology meshOfFour(TraceBuilder* t) {
  t->hosts_ = {"h0", "h1", "h2", "h3"};
  Topology topo;
  std::string error;
  EXPECT_TRUE(parseTopology("ringside-topology 1\nnode h0 ranks 0\nnode h1 ranks 1\nnode h2 ranks 2\n"
                            "node h3 ranks 3\nlink h0 h1\nlink h0 h2\nlink h0 h3\nlink h1 h2\n"
                            "link h1 h3\nlink h2 h3\n",
                            "t", &topo, &error))
      << error;
  return topo;
}

// 4 MiB on 4 ranks over a mesh: the ring takes 6 steps of 1 MiB, the tree 2x2 + 8 - 1 = 11 of
// 256 KiB: 11 x (5 + 26.2) us / 6 x (5 + 104.9) us = 0.52 of the ring's time.
TEST(AlgorithmFindingTest, NamesTreeForBandwidthBoundRing) {
  TraceBuilder t(4);
  const Topology mesh = meshOfFour(&t);
  Analysis a = run(mixedSizes(&t, "gloo", 10), &mesh);
  const Finding* f = findRule(a, "algorithm");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_NE(f->message.find("tree predicted"), std::string::npos) << f->message;
  EXPECT_NE(f->evidence.find("10 bandwidth-bound (4.0 MiB)"), std::string::npos) << f->evidence;
  EXPECT_NE(f->evidence.find("latency-bound"), std::string::npos) << f->evidence;
  // Four hosts: the A/B run is the job's own command (`record --ranks` launches on one host).
  EXPECT_NE(f->action.find("ringside record --allreduce tree -o tree.sqlite -- <the job's command>"),
            std::string::npos)
      << f->action;
  EXPECT_NE(f->action.find("ringside diff run.sqlite tree.sqlite"), std::string::npos);
  // Saving: 10 calls x 659.4 us x (1 - 0.517), plus the small calls' share: about 3.3 ms.
  EXPECT_GT(f->cost_ns, 3'000'000);
  EXPECT_LT(f->cost_ns, 3'700'000);
}

TEST(AlgorithmFindingTest, SilentWhenTheTreeAlreadyRuns) {
  TraceBuilder t(4);
  const Topology mesh = meshOfFour(&t);
  Analysis a = run(mixedSizes(&t, "ringside-tree", 10), &mesh);
  EXPECT_EQ(a.model_source, "fitted");
  EXPECT_EQ(findRule(a, "algorithm"), nullptr);
}

// The same ring on one host (no topology): a rank's tree edges share its one link, as `ringside
// bench` prices them (kSharedNic): 2 x (2 + 8 - 1) steps of 512 KiB, 18 x (5 + 52.4) us against
// 6 x (5 + 104.9) us: the tree 1.57x the ring's time. No finding for the ring, and the tree that
// ran is told the ring is faster (bench measured the tree 7 % slower on such a job, where the
// per-edge price had warned "tree predicted 29% faster").
TEST(AlgorithmFindingTest, OneHostPricesTheTreeOnASharedLink) {
  TraceBuilder t(4);
  Analysis ring = run(mixedSizes(&t, "gloo", 10));
  EXPECT_EQ(findRule(ring, "algorithm"), nullptr);
  TraceBuilder t2(4);
  Analysis tree = run(mixedSizes(&t2, "ringside-tree", 10));
  const Finding* f = findRule(tree, "algorithm");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("ring predicted"), std::string::npos) << f->message;
}

TEST(AlgorithmFindingTest, SilentBelowTheNoise) {
  // Latency-bound calls only (4 KiB and 64 KiB): the tree's gain at these sizes is small in
  // time (< 1 ms over the trace).
  TraceBuilder t(4);
  Analysis a = run(mixedSizes(&t, "gloo", 0));
  EXPECT_EQ(findRule(a, "algorithm"), nullptr);
}

// 10 bursts of 8 back-to-back 4 KiB all-reduces, then 3 of 64 KiB and 3 of 4 MiB alone.
void smallBursts(TraceBuilder* t) {
  int64_t clock = 1'000'000, seq = 0;
  for (int burst = 0; burst < 10; ++burst) {
    for (int i = 0; i < 8; ++i) ringCall(t, 4096, "gloo", 0, 0, &clock, &seq);
    clock += 10'000'000;
  }
  for (int i = 0; i < 3; ++i) ringCall(t, 65536, "gloo", 0, 10'000'000, &clock, &seq);
  for (int i = 0; i < 3; ++i) ringCall(t, 4 << 20, "gloo", 0, 10'000'000, &clock, &seq);
}

// Bursts of 8 back-to-back 4 KiB all-reduces: 8 x 6 x 5.1 us; one 32 KiB call: 6 x 5.8 us.
TEST(BucketingFindingTest, ManySmallAllreducesPerBurst) {
  TraceBuilder t(4);
  smallBursts(&t);
  Analysis a = run(t.build());
  ASSERT_EQ(a.model_source, "fitted") << a.model_note;
  const Finding* f = findRule(a, "bucketing");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("8 gradient all-reduces per burst"), std::string::npos) << f->message << f->action;
  // Never below DDP's default (this said bucket_cap_mb=1 before: the bursts' 32 KiB rounded up).
  EXPECT_NE(f->action.find("bucket_cap_mb=25)"), std::string::npos) << f->action;
  // Per burst 244.8 us -> 34.9 us: 209.9 us saved, 10 bursts.
  EXPECT_NEAR(static_cast<double>(f->cost_ns), 2.099e6, 2e4);
}

// The same bursts recorded by `ringside bench`: no tuning advice for a benchmark.
TEST(BucketingFindingTest, SilentOnABenchTrace) {
  TraceBuilder t(4);
  smallBursts(&t);
  for (int r = 0; r < 4; ++r) t.meta[r]["command_line"] = "ringside bench";
  Analysis a = run(t.build());
  ASSERT_EQ(a.model_source, "fitted") << a.model_note;
  EXPECT_EQ(findRule(a, "bucketing"), nullptr);
}

// One 64 KiB gradient bucket and the job's own loss and metric all-reduces (4 B, 8 B) right
// after it, every step: one bucket per step, nothing to merge (three back-to-back all-reduces
// made a burst, and the advice was bucket_cap_mb=1).
TEST(BucketingFindingTest, MetricAllreduceIsNotABucket) {
  TraceBuilder t(4);
  int64_t clock = 1'000'000, seq = 0;
  for (int step = 0; step < 12; ++step) {
    ringCall(&t, 65536, "gloo", 0, 10'000'000, &clock, &seq);
    ringCall(&t, 4, "gloo", 0, 0, &clock, &seq);
    ringCall(&t, 8, "gloo", 0, 0, &clock, &seq);
  }
  for (int i = 0; i < 3; ++i) ringCall(&t, 4 << 20, "gloo", 0, 10'000'000, &clock, &seq);
  Analysis a = run(t.build());
  EXPECT_EQ(findRule(a, "bucketing"), nullptr);
}

TEST(BucketingFindingTest, SilentForOneLargeAllreducePerStep) {
  TraceBuilder t(4);
  Analysis a = run(mixedSizes(&t, "gloo", 10));
  EXPECT_EQ(findRule(a, "bucketing"), nullptr);
}

// A ring on one host uses 4 of the 12 links by design: idle links listed, but no finding.
TEST(IdleLinksFindingTest, SilentForARingOnOneHost) {
  TraceBuilder t(4);
  Analysis a = run(mixedSizes(&t, "gloo", 10));
  EXPECT_EQ(a.idle_links.size(), 8u);
  EXPECT_EQ(findRule(a, "idle-links"), nullptr);
}

// A topology says all 12 links exist, the ring is bandwidth-bound and its links are busy the
// whole call: the finding names the Links table's busiest link (most bytes, first on a tie).
TEST(IdleLinksFindingTest, FiresWhenATopologyProvidesTheLinks) {
  TraceBuilder t(4);
  t.hosts_ = {"h0", "h1", "h2", "h3"};
  const std::string path = mixedSizes(&t, "gloo", 10);
  std::string topo_text = "ringside-topology 1\nnode h0 ranks 0\nnode h1 ranks 1\n"
                          "node h2 ranks 2\nnode h3 ranks 3\n";
  for (int x = 0; x < 4; ++x) {
    for (int y = x + 1; y < 4; ++y) {
      topo_text += "link h" + std::to_string(x) + " h" + std::to_string(y) + " bandwidth 10GB/s\n";
    }
  }
  Topology topo;
  std::string error;
  ASSERT_TRUE(parseTopology(topo_text, "t", &topo, &error)) << error;
  Analysis a = run(path, &topo);
  const Finding* f = findRule(a, "idle-links");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("8 link(s) idle"), std::string::npos) << f->message;
  EXPECT_NE(f->evidence.find("busiest 0->1"), std::string::npos) << f->evidence;
}

TEST(FindingOrderTest, BySeverityThenTimeAtStake) {
  TraceBuilder t(4);
  Analysis a = run(mixedSizes(&t, "gloo", 10));
  for (size_t i = 1; i < a.findings.size(); ++i) {
    const Finding& x = a.findings[i - 1];
    const Finding& y = a.findings[i];
    if (x.severity == y.severity) {
      EXPECT_GE(x.cost_ns, y.cost_ns) << x.rule << " " << y.rule;
    }
  }
}


// The what-if: the ring that ran is measured; the tree is predicted as the algorithm rule predicts
// it (measured x model ratio); multipath by collective/'s planner on the topology: 4 ranks, each
// a node of its own, a cable between every pair: all 6 directed rings, 3x the ring's rate.
TEST(WhatIfTest, PredictsEachAlgorithmFromTheMeasuredRing) {
  TraceBuilder t(4);
  const Topology mesh = meshOfFour(&t);  // links of one (unknown) bandwidth: the plan sees them equal
  Analysis a = run(mixedSizes(&t, "gloo", 10), &mesh);
  ASSERT_EQ(a.what_if.size(), 1u);
  const WhatIf& w = a.what_if[0];
  EXPECT_EQ(w.library, "gloo");
  EXPECT_EQ(w.ran, "ring");
  EXPECT_EQ(w.ranks, 4);
  EXPECT_EQ(w.calls, 16);
  ASSERT_EQ(w.algorithms.size(), 3u);
  EXPECT_TRUE(w.algorithms[0].ran);
  EXPECT_DOUBLE_EQ(w.algorithms[0].predicted_ns, w.measured_ns);
  const double tree = w.algorithms[1].predicted_ns, multipath = w.algorithms[2].predicted_ns;
  EXPECT_GT(tree, 0);
  EXPECT_LT(tree, w.measured_ns);
  // 4 MiB calls: 6 x (5 + 104.9/3) us against 6 x (5 + 104.9) us: 0.36 of the ring's time.
  EXPECT_LT(multipath, 0.45 * w.measured_ns);
  EXPECT_GT(multipath, 0.30 * w.measured_ns);
  EXPECT_EQ(w.best, "multipath");
  EXPECT_NE(w.confirm.find("--allreduce multipath"), std::string::npos) << w.confirm;
  EXPECT_NE(w.basis.find("multipath: 6 rings over 12 of 12 links, 3.00x the ring's rate"), std::string::npos)
      << w.basis;
}

TEST(WhatIfTest, MultipathNeedsAPlan) {
  TraceBuilder t(4);
  Analysis a = run(mixedSizes(&t, "gloo", 10));
  ASSERT_EQ(a.what_if.size(), 1u);
  EXPECT_LT(a.what_if[0].algorithms[2].predicted_ns, 0);
  EXPECT_NE(a.what_if[0].algorithms[2].note.find("topology"), std::string::npos);
  // One host, no topology: the tree is priced on a shared link (1.57x the ring at 4 MiB, see
  // OneHostPricesTheTreeOnASharedLink), so nothing beats the ring that ran (was "tree" when the
  // report priced every tree edge on a link of its own).
  EXPECT_GT(a.what_if[0].algorithms[1].predicted_ns, a.what_if[0].measured_ns);
  EXPECT_EQ(a.what_if[0].best, "");
}

// simulate: one host is all intra-host; a switch's NIC bounds the ring; the tree's busiest host
// shares its NIC among the tree edges leaving it; multipath gains the NICs on a switch.
TEST(SimulateTest, ModelsFollowTheCluster) {
  ClusterSpec c;
  c.ranks_per_host = 8;
  c.intra_gbps = 100;
  c.inter_gbps = 10;
  c.intra_latency_s = 0;
  c.inter_latency_s = 0;
  c.nics = 2;
  const int64_t bytes = int64_t{64} << 20;
  const auto out = simulateCluster(c, {bytes}, {8, 64});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].hosts, 1);
  EXPECT_EQ(out[1].hosts, 8);
  // Ring, 8 ranks on one host: 2 x 7/8 x 64 MiB / 100 GB/s.
  EXPECT_NEAR(out[0].algorithms[0].step_ns, 2.0 * 7 / 8 * static_cast<double>(bytes) / 100, 1);
  // 64 ranks over 8 hosts: the NIC (10 GB/s) bounds every ring step.
  EXPECT_NEAR(out[1].algorithms[0].step_ns, 2.0 * 63 / 64 * static_cast<double>(bytes) / 10, 1);
  // Multipath on a switch with 2 NICs a host: half the ring's bandwidth term.
  EXPECT_NEAR(out[1].algorithms[2].step_ns, out[1].algorithms[0].step_ns / 2, 1);
  EXPECT_GE(busiestHostTreeEdges(64, 8), 2);
  EXPECT_EQ(busiestHostTreeEdges(8, 8), 0);  // one host: no edge leaves it
  const Topology cluster = clusterTopology(c, 16);  // hosts of 8: h1 has ranks 8-15
  ASSERT_EQ(cluster.nodes.size(), 2u);
  EXPECT_EQ(cluster.nodes[1].name, "h1");
  EXPECT_EQ(cluster.nodes[1].ranks, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(cluster.nodeOf(12), 1);

  // The emulated square (4 hosts, a cable per pair, 25 MB/s): both trees cross the 1-2 cable,
  // which carries half the buffer each way for each of them, and that bound is above one tree's
  // pipeline (measured: 674 ms at 16 MiB; docs/whatif.md).
  ClusterSpec sq;
  sq.ranks_per_host = 1;
  sq.mesh = true;
  sq.intra_gbps = 100;
  sq.inter_gbps = 0.025;
  sq.intra_latency_s = 0;
  sq.inter_latency_s = 0;
  const auto square = simulateCluster(sq, {int64_t{16} << 20}, {4});
  ASSERT_EQ(square.size(), 1u);
  EXPECT_EQ(square[0].algorithms[1].algorithm, "tree");
  EXPECT_NEAR(square[0].algorithms[1].step_ns, 2.0 * (8 << 20) / 0.025, 1e3);
  // Multipath, planned by collective/ on the cluster built in memory: a cable per pair of the 4
  // hosts, all 6 directed rings, 3x the ring's rate (no latency: a third of the ring's time).
  EXPECT_EQ(square[0].algorithms[2].algorithm, "multipath");
  EXPECT_NEAR(square[0].algorithms[2].step_ns, square[0].algorithms[0].step_ns / 3, 1e3);
  EXPECT_NE(square[0].algorithms[2].note.find("3.00x the ring's rate"), std::string::npos)
      << square[0].algorithms[2].note;
}

}  // namespace
}  // namespace ringside::analyzer
