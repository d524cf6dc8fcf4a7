// ringside/collective/topology_file.h — the topology file (docs/topology.md), parsed once for
// every reader: the analyzer (report/view --topology: which links exist, their bandwidth and
// latency) and the reference's multipath (RINGSIDE_TOPOLOGY: the capacities its rings share).
//
// File format (text, one statement per line, '#' starts a comment):
//   ringside-topology 1
//   node h0 ranks 0          # a host and the ranks it runs (ranges: 0-3,8)
//   node h1 ranks 1
//   link h0 h1 bandwidth 1Gbit latency 100us   # full duplex unless 'simplex'
// Units are format/'s (docs/units.md): bandwidth bits (Gbit, Gb/s, Gbps) or bytes (GB/s) a
// second; latency ns, us, ms, s. Ranks on one node talk over a local link whose capacity is
// "local" unless a `link h0 h0 ...` line says otherwise. Pure: the caller reads the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ringside::collective {

struct TopologyNode {
  std::string name;
  std::vector<int> ranks;
};

struct TopologyLink {
  std::string a, b;            // node names
  double bandwidth_gbps = -1;  // GB/s (bytes) each way; -1 unknown
  double latency_s = -1;       // one way; -1 unknown
  bool duplex = true;
};

struct Topology {
  std::vector<TopologyNode> nodes;
  std::vector<TopologyLink> links;

  // Node index of a rank, -1 if none.
  int nodeOf(int rank) const;
  // The link that carries traffic from rank src to rank dst, or nullptr.
  const TopologyLink* linkBetween(int src, int dst) const;

  // Filled by parseTopology (a Topology built by hand leaves them empty and is searched): the
  // analyzer asks for every pair of ranks, and a 16 MiB file can name a million of each.
  std::unordered_map<int, int> node_of_rank;            // rank -> index into nodes
  std::map<std::pair<int, int>, size_t> link_of_nodes;  // (node, node) -> first link between
};

// A topology file is a regular file of at most this many bytes (a real one has a few KiB).
inline constexpr uint64_t kMaxTopologyFileBytes = uint64_t{16} << 20;

// What is wrong with a topology text: the line (1-based; 0 for the text as a whole) and why.
struct TopologyError {
  int line = 0;
  std::string what;
};

// Parses a topology text. False + *error on the first statement it cannot take.
bool parseTopology(const std::string& text, Topology* out, TopologyError* error);

}  // namespace ringside::collective
