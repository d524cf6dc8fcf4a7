// collective/multipath_plan.cpp — see multipath_plan.h.
//
// Choosing the rings: greedy rounds of a minimum-cost Hamiltonian cycle
// (Held-Karp, exact for n <= 12), where a link costs (load + 1) / capacity, its
// load being how many chosen rings already cross it: each round prefers fast
// links that are still little used. A found cycle is taken in both directions
// where every reverse link exists (a full-duplex link has a second, independent
// capacity). After each round the max-min rates of all rings so far are
// computed; the plan is the round with the highest total rate (fewer rings on a
// tie). If that total is not above the plain ring's, the plan is the plain ring.
//
// On 4 ranks with equal links: round 1 takes 0-1-2-3 both ways (2 links' worth),
// round 2 0-1-3-2 (the diagonals, but two sides are now shared: still 2), round
// 3 0-2-1-3: all 6 directed rings, every directed link carried by 2 of them at
// half its rate, 3 links' worth: 3x the ring. On a square with no diagonals the
// only Hamiltonian cycle is the ring: it runs both ways (2x the ring when links
// are full duplex), or alone when they are simplex (exactly the ring).
#include "ringside/collective/multipath_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

namespace ringside::collective {

namespace {

constexpr int kMaxExactRanks = kMaxPlannedRanks;  // Held-Karp: 2^n * n^2 steps per round
constexpr int kMaxRounds = 8;

// Min-cost Hamiltonian cycle from rank 0 over edges with finite cost (Held-Karp). Empty when
// there is none.
std::vector<int> cheapestCycle(int n, const std::vector<double>& cost) {
  const double inf = std::numeric_limits<double>::infinity();
  const size_t full = size_t{1} << n, un = static_cast<size_t>(n);
  std::vector<double> dp(full * un, inf);
  std::vector<int8_t> from(full * un, -1);
  dp[1 * un + 0] = 0;
  for (size_t mask = 1; mask < full; mask += 2) {  // rank 0 always in the set
    for (size_t v = 0; v < un; ++v) {
      double d = dp[mask * un + v];
      if (d == inf) continue;
      for (size_t w = 1; w < un; ++w) {
        if (mask & (size_t{1} << w)) continue;
        double c = cost[v * un + w];
        if (c == inf) continue;
        size_t m2 = mask | (size_t{1} << w);
        if (d + c < dp[m2 * un + w]) {
          dp[m2 * un + w] = d + c;
          from[m2 * un + w] = static_cast<int8_t>(v);
        }
      }
    }
  }
  double best = inf;
  size_t last = 0;
  for (size_t v = 1; v < un; ++v) {
    double d = dp[(full - 1) * un + v] + cost[v * un + 0];
    if (d < best) best = d, last = v;
  }
  if (best == inf) return {};
  std::vector<int> cycle;
  size_t mask = full - 1, v = last;
  while (v != 0) {
    cycle.push_back(static_cast<int>(v));
    size_t prev = static_cast<size_t>(from[mask * un + v]);
    mask &= ~(size_t{1} << v);
    v = prev;
  }
  cycle.push_back(0);
  std::reverse(cycle.begin(), cycle.end());
  return cycle;
}

bool hasCycle(const LinkCapacities& caps, const std::vector<int>& cycle) {
  const size_t n = cycle.size();
  for (size_t k = 0; k < n; ++k)
    if (caps.resource[static_cast<size_t>(cycle[k]) * static_cast<size_t>(caps.n) +
                      static_cast<size_t>(cycle[(k + 1) % n])] < 0)
      return false;
  return true;
}

std::vector<int> reversed(const std::vector<int>& c) {
  std::vector<int> r{c[0]};
  for (size_t k = c.size() - 1; k >= 1; --k) r.push_back(c[k]);
  return r;
}

std::string fmt(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Rank pairs -> links, one resource per directed host pair (ranks on one host share their hosts'
// link, and their own local link): capacity(a, b) of hosts a -> b, <= 0 where there is none.
template <typename Capacity>
LinkCapacities hostPairLinks(int n, const std::vector<int>& host_of,
                             const std::vector<std::string>& host_names, Capacity capacity) {
  LinkCapacities caps;
  caps.n = n;
  caps.resource.assign(static_cast<size_t>(n) * static_cast<size_t>(n), -1);
  std::map<std::pair<int, int>, int> res_of;  // -1: no link
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const int a = host_of[static_cast<size_t>(i)], b = host_of[static_cast<size_t>(j)];
      auto [it, fresh] = res_of.emplace(std::make_pair(a, b), -1);
      if (fresh) {
        const double c = capacity(a, b);
        if (c > 0) {
          it->second = static_cast<int>(caps.capacity.size());
          caps.capacity.push_back(c);
          caps.names.push_back(host_names[static_cast<size_t>(a)] + "->" +
                               host_names[static_cast<size_t>(b)]);
        }
      }
      caps.resource[static_cast<size_t>(i * n + j)] = it->second;
    }
  return caps;
}

}  // namespace

LinkCapacities equalCapacities(int n) {
  LinkCapacities caps;
  caps.n = n;
  caps.resource.assign(static_cast<size_t>(n) * static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      caps.resource[static_cast<size_t>(i * n + j)] = static_cast<int>(caps.capacity.size());
      caps.capacity.push_back(1.0);
      caps.names.push_back(std::to_string(i) + "->" + std::to_string(j));
    }
  caps.source = "no topology (RINGSIDE_TOPOLOGY unset): every link taken as equal";
  return caps;
}

bool topologyCapacities(const Topology& topo, int n, LinkCapacities* out, std::string* error) {
  std::vector<std::string> node_names;
  std::map<std::string, int> node_index;  // the first node of a name, as the parser's
  for (const TopologyNode& node : topo.nodes) {
    node_index.emplace(node.name, static_cast<int>(node_names.size()));
    node_names.push_back(node.name);
  }
  std::vector<int> node_of(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    node_of[static_cast<size_t>(r)] = topo.nodeOf(r);
    if (node_of[static_cast<size_t>(r)] < 0) {
      *error = "rank " + std::to_string(r) + " is on no node";
      return false;
    }
  }
  // Directed node pair -> capacity in bytes/s (0: present, unknown); the first line wins.
  // From the links themselves, so that a Topology built in memory (simulate's) plans as its file.
  std::map<std::pair<int, int>, double> link;
  for (const TopologyLink& l : topo.links) {
    auto a = node_index.find(l.a), b = node_index.find(l.b);
    if (a == node_index.end() || b == node_index.end()) continue;
    const double bps = l.bandwidth_gbps > 0 ? l.bandwidth_gbps * 1e9 : 0;
    link.emplace(std::make_pair(a->second, b->second), bps);
    if (l.duplex) link.emplace(std::make_pair(b->second, a->second), bps);
  }
  // Ranks on one node always have their local link; unknown capacities (none given) are
  // taken as the fastest given one, local ones as 10x that.
  double fastest = 0;
  for (auto& [pair, bw] : link) fastest = std::max(fastest, bw);
  if (fastest == 0) fastest = 1;
  *out = hostPairLinks(n, node_of, node_names, [&](int a, int b) {
    auto it = link.find({a, b});
    if (it == link.end() && a != b) return 0.0;  // no cable between these hosts
    double bw = it != link.end() ? it->second : 0;
    return bw > 0 ? bw : (a == b ? 10 * fastest : fastest);
  });
  return true;
}

ProbeHosts probeHosts(const std::vector<std::string>& host) {
  ProbeHosts h;
  std::map<std::string, int> index;
  for (size_t r = 0; r < host.size(); ++r) {
    auto [it, fresh] = index.emplace(host[r], static_cast<int>(h.first.size()));
    if (fresh) {
      h.first.push_back(static_cast<int>(r));
      h.names.push_back(host[r]);
    }
    h.host_of.push_back(it->second);
  }
  return h;
}

std::vector<std::vector<std::pair<int, int>>> probeRounds(int n) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (n < 2) return rounds;
  // Circle method over m = n rounded up to even: position m-1 stays, the others rotate; the
  // pairs with the phantom position n (odd n) are dropped.
  const int m = n + (n % 2);
  for (int r = 0; r < m - 1; ++r) {
    std::vector<std::pair<int, int>> round;
    auto at = [&](int k) { return k == m - 1 ? m - 1 : (r + k) % (m - 1); };
    for (int k = 0; k < m / 2; ++k) {
      int a = at(k), b = at(m - 1 - k);
      if (a >= n || b >= n) continue;
      round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(std::move(round));
  }
  return rounds;
}

LinkCapacities probedCapacities(int n, const ProbeHosts& hosts, const std::vector<double>& rate,
                                const std::vector<double>& all_in, const std::string& probe) {
  const size_t nh = hosts.first.size();
  double fastest = 0, slowest = 0;
  for (double r : rate)
    if (r > 0) {
      fastest = std::max(fastest, r);
      slowest = slowest > 0 ? std::min(slowest, r) : r;
    }
  LinkCapacities caps = hostPairLinks(n, hosts.host_of, hosts.names, [&](int a, int b) {
    if (a == b) return 10 * (fastest > 0 ? fastest : 1);
    double r = rate[static_cast<size_t>(a) * nh + static_cast<size_t>(b)];
    if (!(r > 0)) return 0.0;  // nothing measured: no link
    // Powers of sqrt(2) below the fastest: 1, 0.71, 0.5, ... (noise of up to 19 % is lost).
    return fastest * std::pow(2.0, std::round(2 * std::log2(r / fastest)) / 2);
  });
  caps.source = "capacities from a probe of every host pair at communicator creation (" + probe +
                "; " + fmt(slowest / 1e6, 1) + "-" + fmt(fastest / 1e6, 1) + " MB/s";
  caps.min_gain = 1.25;
  if (all_in.size() == nh && nh > 1) {
    caps.host_of = hosts.host_of;
    caps.host_in = all_in;
    double lo = 0, hi = 0;
    for (double& v : caps.host_in) {
      if (!(v > 0)) v = 10 * fastest;  // nothing measured: no limit worth the name
      lo = lo > 0 ? std::min(lo, v) : v;
      hi = std::max(hi, v);
    }
    caps.host_out = caps.host_in;
    caps.source += "; all at once, each host received " + fmt(lo / 1e6, 1) + "-" +
                   fmt(hi / 1e6, 1) + " MB/s in all";
  }
  caps.source += ")";
  return caps;
}

std::vector<double> maxMinRates(const LinkCapacities& caps,
                                const std::vector<std::vector<int>>& cycles) {
  // Resources: the links, then (when given) each host's NIC out, then in.
  std::vector<double> capacity(caps.capacity);
  const bool nics = !caps.host_out.empty() && caps.host_of.size() == static_cast<size_t>(caps.n);
  const size_t nh = caps.host_out.size(), nl = capacity.size();
  if (nics) {
    capacity.insert(capacity.end(), caps.host_out.begin(), caps.host_out.end());
    capacity.insert(capacity.end(), caps.host_in.begin(), caps.host_in.end());
  }
  const size_t nc = cycles.size(), nr = capacity.size();
  // crossings[c][r]: how often cycle c crosses resource r.
  std::vector<std::vector<int>> crossings(nc, std::vector<int>(nr, 0));
  for (size_t c = 0; c < nc; ++c) {
    const auto& cy = cycles[c];
    for (size_t k = 0; k < cy.size(); ++k) {
      const int from = cy[k], to = cy[(k + 1) % cy.size()];
      int r = caps.resource[static_cast<size_t>(from * caps.n + to)];
      if (r >= 0) ++crossings[c][static_cast<size_t>(r)];
      if (!nics) continue;
      const int a = caps.host_of[static_cast<size_t>(from)], b = caps.host_of[static_cast<size_t>(to)];
      if (a == b) continue;
      ++crossings[c][nl + static_cast<size_t>(a)];
      ++crossings[c][nl + nh + static_cast<size_t>(b)];
    }
  }
  std::vector<double> rate(nc, 0), left(capacity);
  std::vector<bool> frozen(nc, false);
  for (size_t round = 0; round < nc; ++round) {
    double step = std::numeric_limits<double>::infinity();
    for (size_t r = 0; r < nr; ++r) {
      int load = 0;
      for (size_t c = 0; c < nc; ++c)
        if (!frozen[c]) load += crossings[c][r];
      if (load > 0) step = std::min(step, left[r] / load);
    }
    if (step == std::numeric_limits<double>::infinity()) break;
    for (size_t r = 0; r < nr; ++r)
      for (size_t c = 0; c < nc; ++c)
        if (!frozen[c]) left[r] -= crossings[c][r] * step;
    for (size_t c = 0; c < nc; ++c)
      if (!frozen[c]) rate[c] += step;
    // Rings crossing a saturated link stop growing.
    for (size_t r = 0; r < nr; ++r) {
      if (left[r] > 1e-9 * capacity[r]) continue;
      for (size_t c = 0; c < nc; ++c)
        if (crossings[c][r] > 0) frozen[c] = true;
    }
  }
  return rate;
}

MultipathPlan planMultipath(const LinkCapacities& caps) {
  MultipathPlan plan;
  const int n = caps.n;
  std::vector<int> ring(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) ring[static_cast<size_t>(i)] = i;
  const bool ring_ok = hasCycle(caps, ring);
  if (ring_ok) plan.ring_rate = maxMinRates(caps, {ring})[0];

  std::vector<std::vector<int>> best;
  double best_total = 0;
  if (n >= 2 && n <= kMaxExactRanks) {
    std::vector<std::vector<int>> chosen;
    std::vector<int> load(caps.capacity.size(), 0);
    const size_t un = static_cast<size_t>(n);
    for (int round = 0; round < kMaxRounds && round < n - 1; ++round) {
      std::vector<double> cost(un * un, std::numeric_limits<double>::infinity());
      for (size_t i = 0; i < un; ++i)
        for (size_t j = 0; j < un; ++j) {
          int r = i == j ? -1 : caps.resource[i * un + j];
          if (r < 0) continue;
          double c = (load[static_cast<size_t>(r)] + 1) / caps.capacity[static_cast<size_t>(r)];
          int back = caps.resource[j * un + i];
          if (back >= 0)
            c += (load[static_cast<size_t>(back)] + 1) / caps.capacity[static_cast<size_t>(back)];
          // On a tie, the ring's own order (deterministic, and the ring when nothing beats it).
          if (j != (i + 1) % un) c *= 1 + 1e-9;
          cost[i * un + j] = c;
        }
      std::vector<int> cycle = cheapestCycle(n, cost);
      if (cycle.empty()) break;
      std::vector<int> back = reversed(cycle);
      if (std::find(chosen.begin(), chosen.end(), cycle) != chosen.end() ||
          std::find(chosen.begin(), chosen.end(), back) != chosen.end())
        break;  // nothing new: more rounds find the same cycle
      std::vector<std::vector<int>> add{cycle};
      if (n > 2 && hasCycle(caps, back)) add.push_back(back);
      if (chosen.size() + add.size() > static_cast<size_t>(kMaxMultipathCycles)) break;
      for (const auto& c : add) {
        chosen.push_back(c);
        for (size_t k = 0; k < un; ++k)
          ++load[static_cast<size_t>(caps.resource[static_cast<size_t>(c[k]) * un +
                                                   static_cast<size_t>(c[(k + 1) % un])])];
      }
      std::vector<double> rates = maxMinRates(caps, chosen);
      double total = 0;
      for (double r : rates) total += r;
      if (total > best_total * (1 + 1e-6)) best_total = total, best = chosen;
    }
  }
  if (best.empty() || best_total < plan.ring_rate * caps.min_gain) {
    plan.cycles = {ring};
    plan.is_ring = true;
    plan.rates = {plan.ring_rate};
    plan.total_rate = plan.ring_rate;
    if (n > kMaxExactRanks)
      plan.note = "multipath: " + std::to_string(n) + " ranks (more than " +
                  std::to_string(kMaxExactRanks) + "): runs as the ring; " + caps.source;
    else if (best.empty())
      plan.note = "multipath: no ring over the topology's links: runs as the ring; " + caps.source;
    else
      plan.note =
          std::string("multipath: no set of rings beats the ring here") +
          (caps.min_gain > 1.01 ? " by " + fmt((caps.min_gain - 1) * 100, 0) + " % (the probe's margin)"
                                : std::string()) +
          ": runs as the ring; " + caps.source;
    return plan;
  }
  plan.cycles = best;
  plan.rates = maxMinRates(caps, best);
  plan.total_rate = best_total;
  plan.is_ring = plan.cycles.size() == 1 && plan.cycles[0] == ring;
  std::set<int> used;
  for (const auto& c : plan.cycles)
    for (size_t k = 0; k < c.size(); ++k)
      used.insert(caps.resource[static_cast<size_t>(c[k] * n + c[(k + 1) % c.size()])]);
  plan.note = "multipath: " + std::to_string(plan.cycles.size()) + " rings over " +
              std::to_string(used.size()) + " of " + std::to_string(caps.capacity.size()) +
              " links, " +
              (plan.ring_rate > 0 ? fmt(best_total / plan.ring_rate, 2) + "x the ring's rate"
                                  : std::string("the ring has no links")) +
              "; " + caps.source;
  return plan;
}

std::vector<size_t> multipathShares(const MultipathPlan& plan, size_t count) {
  const size_t nc = plan.cycles.size();
  std::vector<size_t> share(nc, 0);
  if (nc == 1 || plan.total_rate <= 0) {
    share[0] = count;
    return share;
  }
  // Largest remainder: floors first, then one more element to the largest fractions.
  std::vector<std::pair<double, size_t>> frac;
  size_t given = 0;
  for (size_t c = 0; c < nc; ++c) {
    double exact = static_cast<double>(count) * plan.rates[c] / plan.total_rate;
    share[c] = std::min(count - given, static_cast<size_t>(std::floor(exact)));
    given += share[c];
    frac.emplace_back(-(exact - std::floor(exact)), c);
  }
  std::sort(frac.begin(), frac.end());
  for (size_t k = 0; given < count; k = (k + 1) % nc, ++given) ++share[frac[k].second];
  return share;
}

std::vector<int> multipathPeers(const MultipathPlan& plan, int rank) {
  std::vector<int> peers;
  for (const auto& c : plan.cycles) {
    auto it = std::find(c.begin(), c.end(), rank);
    if (it == c.end() || c.size() < 2) continue;
    size_t k = static_cast<size_t>(it - c.begin());
    peers.push_back(c[(k + 1) % c.size()]);
    peers.push_back(c[(k + c.size() - 1) % c.size()]);
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

double multipathRateRatio(const Topology& topology, int ranks, std::string* basis) {
  LinkCapacities caps;
  std::string error;
  if (ranks < 2 || !topologyCapacities(topology, ranks, &caps, &error)) {
    if (basis != nullptr) *basis = "no plan: " + (error.empty() ? std::string("fewer than 2 ranks") : error);
    return -1;
  }
  caps.source = "capacities from the topology";
  const MultipathPlan plan = planMultipath(caps);
  if (basis != nullptr) {
    // The log line without its "multipath: " (the callers name the algorithm themselves).
    const std::string prefix = "multipath: ";
    *basis = plan.note.rfind(prefix, 0) == 0 ? plan.note.substr(prefix.size()) : plan.note;
  }
  if (plan.is_ring || !(plan.ring_rate > 0)) return 1;
  return plan.total_rate / plan.ring_rate;
}

}  // namespace ringside::collective
