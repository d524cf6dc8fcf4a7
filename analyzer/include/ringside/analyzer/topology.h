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

#include "ringside/collective/topology_file.h"

namespace ringside::analyzer {

// The topology's types are collective/'s, the one parser of the file (topology_file.h).
using collective::kMaxTopologyFileBytes;
using collective::Topology;
using collective::TopologyLink;
using collective::TopologyNode;

// Parses a topology file. False + "path:line: what is wrong" on error; also false with a
// one-line reason for a path that is not a regular file or is larger than kMaxTopologyFileBytes.
bool loadTopology(const std::string& path, Topology* out, std::string* error);
bool parseTopology(const std::string& text, const std::string& name, Topology* out, std::string* error);

}  // namespace ringside::analyzer
