// ringside/analyzer/simulate.h — predict the all-reduces of a training step on a cluster the user
// describes (docs/whatif.md, "ringside simulate"), per algorithm, from 8 to 16,384 ranks.
//
// The cluster: hosts of `ranks_per_host` ranks; inside a host every rank pair has the intra-host
// bandwidth and latency; between hosts either a switch (each host one NIC, or `nics` of them, of
// the inter-host bandwidth: every flow leaving a host shares them) or a full mesh of host pairs
// (each pair its own cable, as samples/topology emulates). The models are the alpha-beta models
// the what-if uses (ring: 2(n-1) steps of a 1/n chunk; tree: ringside's pipelined double binary
// tree, its busiest host's NIC shared by the tree edges that leave it; multipath: the ring's
// bandwidth term over its rings' total rate, planned on the cluster's topology).
// Pure functions: nothing here reads a file or prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/collective/topology_file.h"

namespace ringside::analyzer {

struct ClusterSpec {
  int ranks_per_host = 8;
  double intra_gbps = 100;       // GB/s (bytes per ns) each way between two ranks of a host
  double inter_gbps = 12.5;      // GB/s each way: a NIC (switch) or a host pair's cable (mesh)
  double intra_latency_s = 2e-6;
  double inter_latency_s = 10e-6;
  bool mesh = false;             // host pairs cabled directly instead of a switch
  int nics = 1;                  // switch: NICs per host (multipath can use them all)
};

struct SimulatedAlgorithm {
  std::string algorithm;      // ring, tree, multipath
  double step_ns = -1;        // the step's all-reduces, one after another; -1 not predicted
  double busbw_gbps = -1;     // at the step's largest all-reduce
  std::string note;
};
struct SimulatedScale {
  int ranks = 0, hosts = 0;
  std::vector<SimulatedAlgorithm> algorithms;  // ring, tree, multipath
};

// The cluster as a topology (nodes h0.. with their ranks; links intra and inter, full duplex),
// built in memory: the multipath plan is made on it (collective/multipath_plan.h) for mesh
// clusters only: on a switch multipath's rings share each host's NICs, so it gains `nics` times
// at most (the rings' share of NICs).
collective::Topology clusterTopology(const ClusterSpec& c, int ranks);

// Predictions for `step_bytes` (the per-rank payload of each all-reduce of one step) at each of
// `rank_counts`.
std::vector<SimulatedScale> simulateCluster(const ClusterSpec& c, const std::vector<int64_t>& step_bytes,
                                            const std::vector<int>& rank_counts);

// The tree edges (both trees of ringside's double binary tree over n ranks) that leave the host
// with the most of them: the number of flows that share its NIC each way.
int busiestHostTreeEdges(int n, int ranks_per_host);
// The same per pair of hosts: the most tree edges over one host pair (a mesh's cable).
int busiestHostPairTreeEdges(int n, int ranks_per_host);

}  // namespace ringside::analyzer
