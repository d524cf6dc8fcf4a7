// analyzer/topology.h — the optional description of the machines and links a
// job ran on, so the analyzer knows which links exist (and can name idle
// ones), their bandwidth and latency (for the alpha-beta model).
//
// File format (text, one statement per line, '#' starts a comment; see
// docs/topology.md):
//   ringside-topology 1
//   node h0 ranks 0          # a host and the ranks it runs (ranges: 0-3,8)
//   node h1 ranks 1
//   link h0 h1 bandwidth 1Gbit latency 100us   # full duplex unless 'simplex'
// Units: bandwidth bit/s with k/M/G/T prefixes (Gbit, Mbit, ...) or bytes/s
// (GB/s, MB/s); latency ns, us, ms, s. Ranks on one node talk over a local
// link whose capacity is "local" unless a `link h0 h0 ...` line says otherwise.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ringside::analyzer {

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

// Parses a topology file. False + "path:line: what is wrong" on error; also false with a
// one-line reason for a path that is not a regular file or is larger than kMaxTopologyFileBytes.
bool loadTopology(const std::string& path, Topology* out, std::string* error);
bool parseTopology(const std::string& text, const std::string& name, Topology* out, std::string* error);

}  // namespace ringside::analyzer
