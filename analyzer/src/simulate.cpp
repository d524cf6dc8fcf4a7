// analyzer/simulate.cpp — `ringside simulate`'s models (simulate.h, docs/whatif.md).
#include "ringside/analyzer/simulate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "analysis_state.h"
#include "ringside/collective/multipath_plan.h"

namespace ringside::analyzer {
namespace {

// Children of position p in a binary tree over positions 0..n-1 (reference/src/topology.h):
// 0 has one child, the largest power of two below n; a position whose lowest set bit is l has
// p - l/2 and p + h, h the largest power of two below l with p + h < n; odd positions are leaves.
int childPositions(int p, int n, int c[2]) {
  if (n <= 1) return 0;
  if (p == 0) {
    int top = 1;
    while (top * 2 < n) top *= 2;
    c[0] = top;
    return 1;
  }
  const int l = p & -p;
  if (l == 1) return 0;
  int k = 0;
  c[k++] = p - l / 2;
  for (int h = l / 2; h >= 1; h /= 2) {
    if (p + h < n) {
      c[k++] = p + h;
      break;
    }
  }
  return k;
}

}  // namespace

namespace {

// Calls fn(host a, host b) for every edge of both trees of ringside's double binary tree over n
// ranks whose ends are on different hosts (tree 1 is tree 0's shape over positions (rank + 1) mod n).
template <class Fn>
void forEachCrossingTreeEdge(int n, int ranks_per_host, Fn&& fn) {
  for (int tree = 0; tree < 2; ++tree) {
    auto rank_at = [&](int p) { return tree == 0 ? p : (p - 1 + n) % n; };
    for (int p = 0; p < n; ++p) {
      int c[2];
      const int k = childPositions(p, n, c);
      for (int i = 0; i < k; ++i) {
        const int a = rank_at(p) / ranks_per_host, b = rank_at(c[i]) / ranks_per_host;
        if (a != b) fn(a, b);
      }
    }
  }
}

}  // namespace

int busiestHostPairTreeEdges(int n, int ranks_per_host) {
  if (n <= 1 || ranks_per_host <= 0) return 0;
  std::map<std::pair<int, int>, int> on_pair;  // (lower host, higher host) -> tree edges over it
  forEachCrossingTreeEdge(n, ranks_per_host, [&](int a, int b) { ++on_pair[{std::min(a, b), std::max(a, b)}]; });
  int most = 0;
  for (const auto& [pair, edges] : on_pair) most = std::max(most, edges);
  return most;
}

int busiestHostTreeEdges(int n, int ranks_per_host) {
  if (n <= 1 || ranks_per_host <= 0) return 0;
  std::map<int, int> leaving;  // host -> tree edges with one end outside it
  forEachCrossingTreeEdge(n, ranks_per_host, [&](int a, int b) {
    ++leaving[a];
    ++leaving[b];
  });
  int most = 0;
  for (const auto& [host, edges] : leaving) most = std::max(most, edges);
  return most;
}

collective::Topology clusterTopology(const ClusterSpec& c, int ranks) {
  const int per = std::max(1, c.ranks_per_host);
  const int hosts = (ranks + per - 1) / per;
  collective::Topology t;
  auto link = [&](int a, int b, double gbps, double latency_s) {
    t.link_of_nodes.emplace(std::make_pair(a, b), t.links.size());
    t.link_of_nodes.emplace(std::make_pair(b, a), t.links.size());
    t.links.push_back({"h" + std::to_string(a), "h" + std::to_string(b), gbps, latency_s, true});
  };
  for (int h = 0; h < hosts; ++h) {
    collective::TopologyNode node{"h" + std::to_string(h), {}};
    for (int r = h * per; r < std::min(ranks, (h + 1) * per); ++r) {
      node.ranks.push_back(r);
      t.node_of_rank.emplace(r, h);
    }
    if (node.ranks.size() > 1) link(h, h, c.intra_gbps, c.intra_latency_s);
    t.nodes.push_back(std::move(node));
  }
  for (int a = 0; c.mesh && a < hosts; ++a) {
    for (int b = a + 1; b < hosts; ++b) link(a, b, c.inter_gbps, c.inter_latency_s);
  }
  return t;
}

std::vector<SimulatedScale> simulateCluster(const ClusterSpec& c, const std::vector<int64_t>& step_bytes,
                                            const std::vector<int>& rank_counts) {
  std::vector<SimulatedScale> out;
  const int per = std::max(1, c.ranks_per_host);
  const int64_t largest = step_bytes.empty() ? 0 : *std::max_element(step_bytes.begin(), step_bytes.end());
  for (int n : rank_counts) {
    if (n < 2) continue;
    SimulatedScale s;
    s.ranks = n;
    s.hosts = (n + per - 1) / per;
    const bool one_host = s.hosts == 1;
    // Every ring step and every tree level crosses a host boundary once there are 2+ hosts.
    const double alpha_ns = (one_host ? c.intra_latency_s : std::max(c.intra_latency_s, c.inter_latency_s)) * 1e9;
    const double slowest = one_host ? c.intra_gbps : std::min(c.intra_gbps, c.inter_gbps);  // bytes/ns
    const double ring_beta = 1 / slowest;
    // The tree: its busiest host's NIC (switch) carries all its leaving edges at once; on a mesh
    // each edge has its host pair's cable, shared with the pair's other edges (the two trees
    // may both cross one pair: 4 ranks' trees share the 1-2 cable).
    const int edges = one_host ? 1
                               : std::max(1, c.mesh ? busiestHostPairTreeEdges(n, per) : busiestHostTreeEdges(n, per));
    // Two bounds, the larger wins: one tree's pipeline at a link's own rate (fill and drain:
    // 2 x depth steps, then a chunk a step), and the busiest cable or NIC, which carries half the
    // buffer each way for every tree edge over it. Charging the shared rate to every pipeline
    // step instead (the first version) counted the fill at the shared rate too: +33-40 % at 1
    // and 4 MiB on the emulated square.
    const double link_beta = one_host ? 1 / c.intra_gbps : std::max(1 / c.intra_gbps, 1 / c.inter_gbps);
    const double shared_beta =
        one_host ? 1 / c.intra_gbps : std::max(1 / c.intra_gbps, static_cast<double>(edges) / c.inter_gbps);
    const int depth = collective::ceilLog2(n);
    auto tree_ns = [&](int64_t bytes) {
      const double pipeline = collective::treeAllreduceTime(n, bytes, alpha_ns, link_beta, collective::TreeLinks::kPerPeer);
      const double shared = static_cast<double>((bytes + 1) / 2) * shared_beta + 2.0 * depth * alpha_ns;
      return std::max(pipeline, shared);
    };
    double ratio = 1;
    std::string mp_note;
    if (one_host) {
      mp_note = "one host: its ranks share one memory system, no links to add";
    } else if (!c.mesh) {
      ratio = std::max(1, c.nics);
      mp_note = c.nics > 1 ? "rings spread over the " + std::to_string(c.nics) + " NICs of each host"
                           : "one NIC a host: the rings share it, the ring's rate";
    } else {
      const double r = collective::multipathRateRatio(clusterTopology(c, n), n, &mp_note);
      ratio = r > 0 ? r : 1;
    }
    using collective::Algorithm;
    for (Algorithm algo : {Algorithm::kRing, Algorithm::kTree, Algorithm::kMultipath}) {
      SimulatedAlgorithm x;
      x.algorithm = collective::name(algo);
      double total = 0, at_largest = 0;
      for (int64_t bytes : step_bytes) {
        const auto b = static_cast<double>(bytes);
        double t = 0;
        if (algo == Algorithm::kTree) t = tree_ns(bytes);
        else if (algo == Algorithm::kRing) t = collective::ringAllreduceTime(n, b, alpha_ns, ring_beta);
        else t = collective::multipathAllreduceTime(n, b, alpha_ns, ring_beta, ratio);
        total += t;
        if (bytes == largest) at_largest = t;
      }
      x.step_ns = total;
      // busbw (nccl-tests): bytes / time x 2(n-1)/n.
      if (at_largest > 0) x.busbw_gbps = static_cast<double>(largest) / at_largest * 2.0 * (n - 1) / n;
      if (algo == Algorithm::kMultipath) x.note = mp_note;
      if (algo == Algorithm::kTree && !one_host)
        x.note = std::to_string(edges) + (c.mesh ? " tree edges share the busiest host pair's cable"
                                                 : " tree edges share the busiest host's NIC");
      s.algorithms.push_back(std::move(x));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ringside::analyzer
