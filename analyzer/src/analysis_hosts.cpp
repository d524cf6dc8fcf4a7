// analyzer/analysis_hosts.cpp — the hosts stage: which host each rank ran on (RankInfo::host),
// the clock model the trace was read with, and, once links and ranks are built, each link's
// scope (intra-host or inter-host), the per-host sums and the host x host traffic matrix
// (docs/analyzer.md, "Hosts").
#include <algorithm>
#include <map>

#include "analysis_state.h"
#include "ringside/analyzer/collective_math.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::analyzer {

const char* linkScopeName(LinkScope scope) {
  switch (scope) {
    case LinkScope::kIntraHost: return "intra-host";
    case LinkScope::kInterHost: return "inter-host";
    case LinkScope::kUnknown: break;
  }
  return "unknown";
}

int Analysis::hostOf(int rank) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), rank,
                             [](const RankStats& r, int x) { return r.rank < x; });
  return it != ranks.end() && it->rank == rank ? it->host : -1;
}

int64_t clockUncertaintyNs(const storage::ClockModel& clock, int rank_a, int rank_b) {
  if (clock.domains.size() < 2) return 0;
  // A rank the model does not name counts as uncertain as the least certain domain (-1 there).
  return clock.pairUncertaintyNs(clock.domainOf(rank_a), clock.domainOf(rank_b));
}

namespace detail {

int AnalysisState::hostOf(int rank) const {
  auto it = std::lower_bound(host_of_rank.begin(), host_of_rank.end(), std::pair{rank, INT32_MIN});
  return it != host_of_rank.end() && it->first == rank ? it->second : -1;
}

int32_t AnalysisState::hostPair(int src, int dst) {
  const int a = hostOf(src), b = hostOf(dst);
  if (a < 0 || b < 0) return -1;
  auto [it, fresh] = host_pair_index.try_emplace({a, b}, static_cast<int32_t>(host_pairs.size()));
  if (fresh) host_pairs.push_back({a, b, {}, {}});
  return it->second;
}

std::string idleLinkName(const Analysis& a, const IdleLink& l) {
  if (l.src_host < 0 || l.dst_host < 0) return linkName(l.src, l.dst);
  auto name = [&a](int h) {
    const std::string& n = a.hosts[static_cast<size_t>(h)].name;
    return n.empty() ? std::string("(unnamed host)") : n;
  };
  return name(l.src_host) + "->" + name(l.dst_host);
}

void findHosts(AnalysisState& s) {
  Analysis* out = s.out;
  out->clock = s.options.clock != nullptr ? *s.options.clock : s.reader.clockModel();
  std::map<std::string, std::vector<int>> by_name;
  for (const storage::RankInfo& info : s.infos) {
    if (info.rank >= 0) by_name[info.host].push_back(info.rank);
  }
  for (auto& [name, ranks] : by_name) {
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    HostStats h;
    h.name = name;
    h.ranks = std::move(ranks);
    out->hosts.push_back(std::move(h));
  }
  // The host of rank 0 first: the order a person reads a job's machines in.
  std::sort(out->hosts.begin(), out->hosts.end(), [](const HostStats& x, const HostStats& y) {
    return x.ranks.front() < y.ranks.front();
  });
  for (size_t h = 0; h < out->hosts.size(); ++h) {
    for (int r : out->hosts[h].ranks) s.host_of_rank.emplace_back(r, static_cast<int>(h));
  }
  // A rank in two files that name different hosts keeps the first host (lowest ranks first).
  std::stable_sort(s.host_of_rank.begin(), s.host_of_rank.end(),
                   [](const auto& x, const auto& y) { return x.first < y.first; });
  s.host_of_rank.erase(std::unique(s.host_of_rank.begin(), s.host_of_rank.end(),
                                   [](const auto& x, const auto& y) { return x.first == y.first; }),
                       s.host_of_rank.end());
}

namespace {

// The host x host matrix, from the links (bytes, messages) and the host pairs (busy time).
void hostTraffic(AnalysisState& s) {
  Analysis* out = s.out;
  const size_t n = out->hosts.size();
  // Left out with the rank matrix (a world too large to draw), or for more hosts than that.
  if ((s.traffic_ranks == 0 && !out->links.empty()) || n > static_cast<size_t>(kMaxDenseRanks))
    return;
  out->host_traffic.assign(n, std::vector<HostTraffic>(n));
  for (size_t li = 0; li < s.links.size() && li < out->links.size(); ++li) {
    const int32_t pair = s.links[li].host_pair;
    if (pair < 0) continue;
    const HostPairAcc& acc = s.host_pairs[static_cast<size_t>(pair)];
    HostTraffic& t =
        out->host_traffic[static_cast<size_t>(acc.src_host)][static_cast<size_t>(acc.dst_host)];
    t.bytes += out->links[li].bytes;
    t.messages += out->links[li].messages;
  }
  for (const HostPairAcc& acc : s.host_pairs) {
    // As for one link: the receiving side's busy time wherever it was recorded.
    int64_t recv = acc.recv_busy.total();
    out->host_traffic[static_cast<size_t>(acc.src_host)][static_cast<size_t>(acc.dst_host)]
        .busy_ns = recv > 0 ? recv : acc.send_busy.total();
  }
}

}  // namespace

void buildHosts(AnalysisState& s) {
  Analysis* out = s.out;
  for (RankStats& r : out->ranks) {
    r.host = s.hostOf(r.rank);
    if (r.host < 0) continue;
    HostStats& h = out->hosts[static_cast<size_t>(r.host)];
    h.comm_ns += r.comm_ns;
    h.wait_ns += r.wait_ns;
  }
  for (LinkStats& l : out->links) {
    const int src = s.hostOf(l.src), dst = s.hostOf(l.dst);
    if (src < 0 || dst < 0) continue;  // a peer without a rank file: scope unknown
    l.scope = src == dst ? LinkScope::kIntraHost : LinkScope::kInterHost;
    HostStats& from = out->hosts[static_cast<size_t>(src)];
    HostStats& to = out->hosts[static_cast<size_t>(dst)];
    int64_t& sent = src == dst ? from.sent_intra_bytes : from.sent_inter_bytes;
    int64_t& received = src == dst ? to.recv_intra_bytes : to.recv_inter_bytes;
    sent = addSaturated(sent, l.bytes);
    received = addSaturated(received, l.bytes);
  }
  hostTraffic(s);
}

}  // namespace detail
}  // namespace ringside::analyzer
