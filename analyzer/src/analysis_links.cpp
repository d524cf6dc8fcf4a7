// analyzer/analysis_links.cpp — the links stage: LinkStats from the transfer pass's
// accumulators (bins, busy time, capacity), the traffic matrix, channel traffic, and the links
// that exist but stayed idle (docs/analyzer.md, "Links", "Idle links").
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "analysis_state.h"
#include "ringside/analyzer/topology.h"

namespace ringside::analyzer::detail {

void addChannelTraffic(AnalysisState& s) {
  std::vector<ChannelTraffic>& out = s.out->channel_traffic;
  std::set<std::pair<int, int>> sent_links;
  for (const auto& [key, v] : s.channel_send)
    sent_links.emplace(std::get<0>(key), std::get<1>(key));
  // From the send rows; from the recv rows only for links without send rows.
  auto add = [&](const ChannelMap& from, bool skip_sent) {
    for (const auto& [key, v] : from) {
      const auto& [src, dst, channel] = key;
      if (skip_sent && sent_links.count({src, dst}) != 0) continue;
      out.push_back({src, dst, channel, v.first, v.second});
    }
  };
  add(s.channel_send, false);
  add(s.channel_recv, true);
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::tie(x.src, x.dst, x.channel) < std::tie(y.src, y.dst, y.channel);
  });
}

namespace {

// The link's own figures: bytes, messages, busy time, rates per bin, capacity.
LinkStats linkStats(const AnalysisState& s, const LinkAcc& acc, const TopologyLink* capacity) {
  bool from_recv = acc.send.messages == 0;
  const SideAcc& side = from_recv ? acc.recv : acc.send;
  const double range_ns =
      static_cast<double>(std::max<int64_t>(1, s.out->end_ns - s.out->start_ns));
  LinkStats l;
  l.src = acc.src;
  l.dst = acc.dst;
  l.bytes = side.bytes;
  l.messages = side.messages;
  // Busy time from the receiving side whenever it was recorded: a send returns once its bytes
  // are in the socket buffer, so send-side durations say nothing about the link's rate.
  int64_t recv_busy = acc.recv.busy.total();
  l.busy_ns = recv_busy > 0 ? recv_busy : side.busy.total();
  l.from_recv = from_recv;
  l.mean_gbps = static_cast<double>(l.bytes) / range_ns;
  l.gbps_per_bin.resize(static_cast<size_t>(s.bins), 0.0);
  for (size_t b = 0; b < side.bins.size(); ++b)
    l.gbps_per_bin[b] = side.bins[b] / static_cast<double>(s.out->bin_ns);
  // The peak over kPeakBins slices, whatever the display bins (one definition, docs/metrics.md).
  const bool own = side.peak_bins.empty();
  const double peak_bin_ns = static_cast<double>(own ? s.out->bin_ns : peakBinNs(*s.out));
  for (double bytes : own ? side.bins : side.peak_bins)
    l.peak_gbps = std::max(l.peak_gbps, bytes / peak_bin_ns);
  if (l.busy_ns > 0) l.busy_gbps = static_cast<double>(l.bytes) / static_cast<double>(l.busy_ns);
  if (capacity != nullptr) {
    l.capacity_gbps = capacity->bandwidth_gbps;
    l.capacity_share = l.busy_gbps / l.capacity_gbps;
  }
  return l;
}

// The instances a link carried bytes for: its groups, the topology's slowest link per instance,
// and the time inside them (the union of their [first_start, last_end]). Sorts `used`.
int64_t timeInsideInstances(AnalysisState& s, size_t link, std::vector<int32_t>& used,
                            const TopologyLink* capacity) {
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  std::vector<std::pair<int64_t, int64_t>> spans;
  spans.reserve(used.size());
  for (int32_t index : used) {
    const auto i = static_cast<size_t>(index);
    const CollectiveInstance& c = s.out->collectives[i];
    spans.emplace_back(c.first_start_ns, c.last_end_ns);
    s.groups_of_link[link].insert(s.group_of[i]);
    if (capacity != nullptr) {
      double& bw = s.slowest_link_gbps[i];
      bw = bw < 0 ? capacity->bandwidth_gbps : std::min(bw, capacity->bandwidth_gbps);
      s.slowest_link_latency_s[i] =
          std::max(s.slowest_link_latency_s[i], std::max(0.0, capacity->latency_s));
    }
  }
  std::sort(spans.begin(), spans.end());
  IntervalUnion inside;
  for (const auto& [start, end] : spans) inside.add(start, end);
  return inside.total();
}

}  // namespace

void buildLinks(AnalysisState& s) {
  Analysis* out = s.out;
  int world = std::max(s.meta.world_size, s.max_rank + 1);
  out->world_size = s.meta.world_size > 0 ? s.meta.world_size : (world > 0 ? world : -1);
  s.traffic_ranks = std::max(0, world);
  if (world > kMaxDenseRanks) {
    // world x world would be mostly zeros (and gigabytes): the links list has every link.
    s.traffic_ranks = 0;
    out->warnings.push_back("traffic matrix left out: " + std::to_string(world) +
                            " ranks is more than " + std::to_string(kMaxDenseRanks) +
                            "; the links list holds every link that carried bytes");
  }
  out->traffic.assign(static_cast<size_t>(s.traffic_ranks),
                      std::vector<int64_t>(static_cast<size_t>(s.traffic_ranks), 0));
  const Topology* topo = s.options.topology;
  s.slowest_link_gbps.assign(out->collectives.size(), -1);
  s.slowest_link_latency_s.assign(out->collectives.size(), -1);
  s.groups_of_link.assign(s.links.size(), {});
  for (size_t li = 0; li < s.links.size(); ++li) {
    LinkAcc& acc = s.links[li];
    const TopologyLink* tl = topo ? topo->linkBetween(acc.src, acc.dst) : nullptr;
    const TopologyLink* capacity = tl && tl->bandwidth_gbps > 0 ? tl : nullptr;
    LinkStats l = linkStats(s, acc, capacity);
    SideAcc& side = acc.send.messages == 0 ? acc.recv : acc.send;
    int64_t inside = timeInsideInstances(s, li, side.instances, capacity);
    if (inside > 0) {
      l.busy_share_of_collectives =
          std::min(1.0, static_cast<double>(l.busy_ns) / static_cast<double>(inside));
    }
    if (l.src >= 0 && l.dst >= 0 && l.src < s.traffic_ranks && l.dst < s.traffic_ranks) {
      out->traffic[static_cast<size_t>(l.src)][static_cast<size_t>(l.dst)] = l.bytes;
    }
    out->links.push_back(std::move(l));
  }
}

namespace {

// Without a topology file, links between hosts are judged per pair of hosts (hostIdleLinks), not
// per pair of ranks: a job on 2 hosts of 8 ranks would otherwise list 128 rank pairs.
bool hostLevelLinks(const AnalysisState& s) {
  return s.options.topology == nullptr && s.out->hosts.size() >= 2;
}

// Links that exist: the topology's between the ranks, else the full mesh of each host's ranks;
// and every link that carried bytes (but those between hosts when hostLevelLinks()).
std::set<std::pair<int, int>> existingLinks(const AnalysisState& s) {
  const Analysis& a = *s.out;
  std::set<std::pair<int, int>> existing;
  std::vector<int> all_ranks = a.ranks_present;
  // A large world lists only the ranks that have a file: every pair is tried below.
  if (a.world_size <= kMaxDenseRanks) {
    for (int r = 0; r < a.world_size; ++r) all_ranks.push_back(r);
  }
  std::sort(all_ranks.begin(), all_ranks.end());
  all_ranks.erase(std::unique(all_ranks.begin(), all_ranks.end()), all_ranks.end());
  if (all_ranks.size() > static_cast<size_t>(kMaxDenseRanks)) {
    // More rank rows than any real world: the links that carried bytes are all we list.
  } else if (const Topology* topo = s.options.topology) {
    for (int src : all_ranks) {
      for (int dst : all_ranks) {
        if (src != dst && topo->linkBetween(src, dst)) existing.insert({src, dst});
      }
    }
  } else {
    std::map<std::string, std::vector<int>> hosts;
    for (const auto& info : s.infos) hosts[info.host].push_back(info.rank);
    for (const auto& [host, ranks] : hosts) {
      // A host with more ranks than a machine has devices (a synthetic or oversubscribed run) is
      // not a full mesh anyone would use: there only the links that carried bytes exist.
      if (ranks.size() > static_cast<size_t>(kMaxMeshRanksPerHost)) continue;
      for (int src : ranks) {
        for (int dst : ranks) {
          if (src != dst) existing.insert({src, dst});
        }
      }
    }
  }
  const bool by_host = hostLevelLinks(s);
  for (const LinkStats& l : a.links) {
    if (l.src == l.dst) continue;
    const int src_host = s.hostOf(l.src), dst_host = s.hostOf(l.dst);
    if (by_host && src_host >= 0 && dst_host >= 0 && src_host != dst_host) continue;
    existing.insert({l.src, l.dst});
  }
  return existing;
}

double capacityOf(const AnalysisState& s, int src, int dst) {
  const TopologyLink* tl = s.options.topology ? s.options.topology->linkBetween(src, dst) : nullptr;
  return tl && tl->bandwidth_gbps > 0 ? tl->bandwidth_gbps : -1.0;
}

// Whether an (op, library) group's idle links are looked for: it has phases (ringside's own or
// Gloo's ring all-reduce), 2+ ranks, and the trace has transfers.
bool phasedGroup(const AnalysisState& s, const OpGroup& group) {
  bool phased = group.library.rfind("ringside-", 0) == 0 ||
                (collective::is(group.library, collective::Library::kGloo) && collective::is(group.op, collective::Op::kAllreduce));
  return phased && group.ranks.size() >= 2 && s.out->transfers > 0;
}

// Links of a phased (op, library) group's ranks that carried bytes, but none for that group.
void idleLinksOfGroups(AnalysisState& s, const std::set<std::pair<int, int>>& existing,
                       const std::map<std::pair<int, int>, size_t>& used_link) {
  Analysis* out = s.out;
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const OpGroup& group = s.groups[g];
    if (!phasedGroup(s, group)) continue;
    for (const auto& [src, dst] : existing) {
      if (!group.ranks.count(src) || !group.ranks.count(dst)) continue;
      auto it = used_link.find({src, dst});
      // Never used at all: already listed for the whole trace.
      if (it == used_link.end() || out->links[it->second].bytes == 0) continue;
      if (s.groups_of_link[it->second].count(static_cast<int>(g))) continue;
      out->idle_links.push_back(
          {src, dst, group.op + " " + group.library, capacityOf(s, src, dst)});
    }
  }
}

// Pairs of hosts (no topology, 2+ hosts): idle for the whole trace when no rank of one sent to a
// rank of the other; idle during a phased group when they carried bytes, none for that group,
// and the group has ranks on both.
void hostIdleLinks(AnalysisState& s) {
  Analysis* out = s.out;
  if (!hostLevelLinks(s) || out->transfers == 0) return;
  const size_t n = out->hosts.size();
  std::map<std::pair<int, int>, std::pair<int64_t, std::set<int>>> used;  // bytes, groups
  for (size_t li = 0; li < s.links.size() && li < out->links.size(); ++li) {
    const int32_t pair = s.links[li].host_pair;
    if (pair < 0) continue;
    const HostPairAcc& acc = s.host_pairs[static_cast<size_t>(pair)];
    auto& [bytes, groups] = used[{acc.src_host, acc.dst_host}];
    bytes += out->links[li].bytes;
    groups.insert(s.groups_of_link[li].begin(), s.groups_of_link[li].end());
  }
  auto idle = [out](int src, int dst, std::string where) {
    IdleLink l;
    l.where = std::move(where);
    l.src_host = src;
    l.dst_host = dst;
    out->idle_links.push_back(std::move(l));
  };
  // Every pair of hosts that carried nothing: n(n-1) of them, as the host matrix, only up to
  // kMaxDenseRanks hosts (2,048 hosts gave 4.19 M idle pairs, about 1 GB, and said nothing).
  if (n > static_cast<size_t>(kMaxDenseRanks)) {
    out->warnings.push_back("idle pairs of hosts left out: " + std::to_string(n) +
                            " hosts is more than " + std::to_string(kMaxDenseRanks));
  }
  for (int a = 0; a < static_cast<int>(n) && n <= static_cast<size_t>(kMaxDenseRanks); ++a) {
    for (int b = 0; b < static_cast<int>(n); ++b) {
      auto it = used.find({a, b});
      if (a != b && (it == used.end() || it->second.first == 0)) idle(a, b, "whole trace");
    }
  }
  for (size_t g = 0; g < s.groups.size(); ++g) {
    const OpGroup& group = s.groups[g];
    if (!phasedGroup(s, group)) continue;
    std::set<int> hosts;
    for (int r : group.ranks) hosts.insert(s.hostOf(r));
    for (const auto& [pair, traffic] : used) {
      const auto& [bytes, groups] = traffic;
      if (pair.first == pair.second || bytes == 0 || groups.count(static_cast<int>(g))) continue;
      if (hosts.count(pair.first) && hosts.count(pair.second))
        idle(pair.first, pair.second, group.op + " " + group.library);
    }
  }
}

}  // namespace

void findIdleLinks(AnalysisState& s) {
  Analysis* out = s.out;
  std::set<std::pair<int, int>> existing = existingLinks(s);
  std::map<std::pair<int, int>, size_t> used_link;
  for (size_t li = 0; li < out->links.size(); ++li)
    used_link[{out->links[li].src, out->links[li].dst}] = li;
  const double range_ns = static_cast<double>(std::max<int64_t>(1, out->end_ns - out->start_ns));
  double capacity_bytes = 0, capacity_total = 0;
  for (const auto& [src, dst] : existing) {
    auto it = used_link.find({src, dst});
    int64_t bytes = it == used_link.end() ? 0 : out->links[it->second].bytes;
    double capacity = capacityOf(s, src, dst);
    if (capacity > 0) {
      capacity_bytes += static_cast<double>(bytes);
      capacity_total += capacity * range_ns;
    }
    // A trace without transfer rows says nothing about links: list none as idle.
    if (bytes == 0 && out->transfers > 0)
      out->idle_links.push_back({src, dst, "whole trace", capacity});
  }
  if (capacity_total > 0) out->capacity_used_share = capacity_bytes / capacity_total;
  idleLinksOfGroups(s, existing, used_link);
  hostIdleLinks(s);
}

}  // namespace ringside::analyzer::detail
