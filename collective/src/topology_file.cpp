// collective/topology_file.cpp — the topology file parser (format: docs/topology.md), the one
// the analyzer (report --topology) and the reference's multipath (RINGSIDE_TOPOLOGY) both use.
#include "ringside/collective/topology_file.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>
#include <string_view>

#include "ringside/format/units.h"

namespace ringside::collective {
namespace {

// Ranks on one node with no `link h h` line share this link: it exists, capacity unknown.
const TopologyLink kLocalLink{"", "", -1, -1, true};

// "1Gbit", "100Mbit/s", "10Gbps", "100Gb/s" (bits) or "1.5GB/s", "800MB/s" (bytes) -> GB/s:
// format/'s rate grammar.
bool parseBandwidth(std::string_view text, double* gbps) {
  double bytes_per_s = 0;
  if (!format::parseRate(text, &bytes_per_s)) return false;
  *gbps = bytes_per_s / 1e9;
  return true;
}

// "100us", "2ms", "500ns", "0.1s" -> seconds: format/'s duration grammar, a unit required.
bool parseLatency(std::string_view text, double* seconds) {
  double ns = 0;
  if (!format::parseDuration(text, format::BareDuration::kRequired, &ns)) return false;
  *seconds = ns / 1e9;
  return true;
}

constexpr size_t kMaxTopologyRanks = size_t{1} << 20;

// "0-3,8" -> {0, 1, 2, 3, 8}.
bool parseRanks(std::string_view text, std::vector<int>* ranks) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    size_t dash = item.find('-');
    int lo = 0, hi = 0;
    std::string_view a = item.substr(0, dash);
    auto r1 = std::from_chars(a.data(), a.data() + a.size(), lo);
    if (a.empty() || r1.ec != std::errc() || r1.ptr != a.data() + a.size() || lo < 0) return false;
    hi = lo;
    if (dash != std::string_view::npos) {
      std::string_view b = item.substr(dash + 1);
      auto r2 = std::from_chars(b.data(), b.data() + b.size(), hi);
      if (b.empty() || r2.ec != std::errc() || r2.ptr != b.data() + b.size() || hi < lo ||
          hi - lo > 1000000) {
        return false;
      }
    }
    // A topology names at most a world's ranks (the analyzer's own limit).
    if (ranks->size() + static_cast<size_t>(hi - lo) >= kMaxTopologyRanks) return false;
    for (int64_t r = lo; r <= hi; ++r) ranks->push_back(static_cast<int>(r));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
    if (text.empty()) return false;
  }
  return !ranks->empty();
}

}  // namespace

int Topology::nodeOf(int rank) const {
  if (!node_of_rank.empty()) {
    auto it = node_of_rank.find(rank);
    return it == node_of_rank.end() ? -1 : it->second;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (int r : nodes[i].ranks) {
      if (r == rank) return static_cast<int>(i);
    }
  }
  return -1;
}

const TopologyLink* Topology::linkBetween(int src, int dst) const {
  int a = nodeOf(src), b = nodeOf(dst);
  if (a < 0 || b < 0 || src == dst) return nullptr;
  if (!link_of_nodes.empty() || !node_of_rank.empty()) {
    auto it = link_of_nodes.find({a, b});
    if (it != link_of_nodes.end()) return &links[it->second];
    return a == b ? &kLocalLink : nullptr;
  }
  const std::string& na = nodes[static_cast<size_t>(a)].name;
  const std::string& nb = nodes[static_cast<size_t>(b)].name;
  for (const TopologyLink& link : links) {
    if (link.a == na && link.b == nb) return &link;
    if (link.duplex && link.a == nb && link.b == na) return &link;
  }
  return a == b ? &kLocalLink : nullptr;
}

bool parseTopology(const std::string& text, Topology* out, TopologyError* error) {
  *out = Topology{};
  std::istringstream in(text);
  std::string line;
  int number = 0;
  bool header = false;
  std::map<std::string, int> node_ids;  // node name -> index into out->nodes
  auto fail = [&](const std::string& what) {
    *error = TopologyError{number, what};
    return false;
  };
  while (std::getline(in, line)) {
    ++number;
    if (size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string word; words >> word;) w.push_back(word);
    if (w.empty()) continue;
    if (!header) {
      if (w.size() != 2 || w[0] != "ringside-topology") {
        return fail("expected 'ringside-topology 1' as the first statement");
      }
      if (w[1] != "1") return fail("unsupported topology version " + w[1] + " (this reads 1)");
      header = true;
      continue;
    }
    if (w[0] == "node") {
      if (w.size() != 4 || w[2] != "ranks") return fail("expected 'node NAME ranks LIST'");
      if (node_ids.count(w[1]) != 0) return fail("node '" + w[1] + "' defined twice");
      TopologyNode node;
      node.name = w[1];
      if (!parseRanks(w[3], &node.ranks)) return fail("bad rank list '" + w[3] + "'");
      if (out->node_of_rank.size() + node.ranks.size() > kMaxTopologyRanks) {
        return fail("more than " + std::to_string(kMaxTopologyRanks) + " ranks");
      }
      const int id = static_cast<int>(out->nodes.size());
      for (int r : node.ranks) {
        if (!out->node_of_rank.emplace(r, id).second) {
          return fail("rank " + std::to_string(r) + " is on two nodes");
        }
      }
      node_ids.emplace(node.name, id);
      out->nodes.push_back(std::move(node));
    } else if (w[0] == "link") {
      if (w.size() < 3) return fail("expected 'link A B [bandwidth X] [latency Y] [simplex]'");
      TopologyLink link;
      link.a = w[1];
      link.b = w[2];
      for (const std::string& n : {link.a, link.b}) {
        if (node_ids.count(n) == 0)
          return fail("unknown node '" + n + "' (declare nodes before links)");
      }
      const int from = node_ids[link.a], to = node_ids[link.b];
      for (size_t i = 3; i < w.size(); ++i) {
        if (w[i] == "simplex") {
          link.duplex = false;
        } else if (w[i] == "duplex") {
          link.duplex = true;
        } else if (w[i] == "bandwidth" && i + 1 < w.size()) {
          if (!parseBandwidth(w[++i], &link.bandwidth_gbps)) {
            return fail("bad bandwidth '" + w[i] + "' (e.g. 1Gbit, 100Mbit, 2GB/s)");
          }
        } else if (w[i] == "latency" && i + 1 < w.size()) {
          if (!parseLatency(w[++i], &link.latency_s)) {
            return fail("bad latency '" + w[i] + "' (e.g. 100us, 2ms)");
          }
        } else {
          return fail("unexpected '" + w[i] + "'");
        }
      }
      // The first link in the file between two nodes wins, as in a search in file order.
      out->link_of_nodes.emplace(std::make_pair(from, to), out->links.size());
      if (link.duplex) out->link_of_nodes.emplace(std::make_pair(to, from), out->links.size());
      out->links.push_back(std::move(link));
    } else {
      return fail("unknown statement '" + w[0] + "'");
    }
  }
  if (!header) {
    *error = TopologyError{0, "empty topology (expected 'ringside-topology 1')"};
    return false;
  }
  return true;
}

}  // namespace ringside::collective
