// ringside/collective/multipath_plan.h — the multipath all-reduce's plan: which directed rings
// (Hamiltonian cycles of the ranks over links that exist) share the buffer, and at what rates.
// Pure: the reference's multipath all-reduce runs the plan (reference/src/multipath.cpp); the
// report's what-if and `ringside simulate` predict it (docs/whatif.md) from the same code.
//
// Links are "resources": a directed pair of hosts (node A -> node B of the topology file: every
// rank pair between them shares its capacity) or the local link of a host. Without a topology
// every directed rank pair is its own resource of capacity 1. A ring's rate is the max-min fair
// share of the links it crosses when every ring sends at once (what TCP flows that share a link
// converge to); docs/reference.md says why rings and not trees or a direct reduce-scatter.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "ringside/collective/topology_file.h"

namespace ringside::collective {

struct LinkCapacities {
  int n = 0;
  std::vector<int> resource;       // n*n, [i*n+j]: resource of rank i -> rank j, -1: no link
  std::vector<double> capacity;    // per resource, bytes per second (relative when no topology)
  std::vector<std::string> names;  // per resource, e.g. "h0->h1"
  std::string source;              // one line: where the capacities come from
  // Optional (the probe): what each host's NIC carries out and in with all its links busy at
  // once. A ring edge from host a to host b (a != b) also uses host_out[a] and host_in[b].
  // Empty: no such limit.
  std::vector<int> host_of;        // per rank
  std::vector<double> host_out, host_in;
  // The plan runs as the ring unless its total rate is at least this times the ring's.
  double min_gain = 1 + 1e-6;
};

// Every directed pair a link of capacity 1 ("no topology: every link taken as equal").
LinkCapacities equalCapacities(int n);
// From a parsed topology file (docs/topology.md; the part that gives capacities). False + *error
// when it names no node for one of ranks 0..n-1.
bool topologyCapacities(const Topology& topology, int n, LinkCapacities* out, std::string* error);

// The bandwidth probe (no topology file): which ranks share a host, and the rate measured from
// each host's first rank to each other host's first rank. host[r] is rank r's host (its
// advertised address); ranks of one host share each host pair's capacity, as on a topology
// file's nodes. Hosts with no measured rate from A to B (<= 0) have no link A -> B.
struct ProbeHosts {
  std::vector<int> host_of;    // per rank: host index, hosts numbered by their first rank
  std::vector<int> first;      // per host: its lowest rank (the one that probes)
  std::vector<std::string> names;  // per host
};
ProbeHosts probeHosts(const std::vector<std::string>& host);
// Rounds of disjoint pairs of 0..n-1 (the circle method), every pair in exactly one round:
// n-1 rounds for even n, n for odd n.
std::vector<std::vector<std::pair<int, int>>> probeRounds(int n);
// Capacities from the probe: rate[a*H+b] bytes/s from host a to host b (H hosts), each pair on
// its own. Each rate is rounded to a power of sqrt(2) times the fastest, so that links equal but
// for the probe's noise plan as equal; a host's own ranks share one local link of 10x the
// fastest (as a topology's undeclared local links). `all_in` (per host, may be empty): what each
// host received in all while every host sent to every other at once: its NIC's limit, taken for
// both directions (a switch with one NIC a host: about one link's rate, not H-1 of them). Probed
// plans must beat the ring by 25 % (min_gain). `probe` says how it was measured, for `source`.
LinkCapacities probedCapacities(int n, const ProbeHosts& hosts, const std::vector<double>& rate,
                                const std::vector<double>& all_in, const std::string& probe);

// Ranks above which multipath plans nothing and runs as the ring (Held-Karp's 2^n n^2 steps).
inline constexpr int kMaxPlannedRanks = 12;

struct MultipathPlan {
  std::vector<std::vector<int>> cycles;  // rank orders; cycles[c][k] sends to cycles[c][k+1]
  std::vector<double> rates;             // per cycle, the max-min fair rate (capacity units)
  double total_rate = 0;                 // sum of rates
  double ring_rate = 0;                  // the ring 0 -> 1 -> ... -> n-1 -> 0 alone
  bool is_ring = false;                  // cycles == {0, 1, ..., n-1}: run as the ring itself
  std::string note;                      // one line for the log and the trace meta
};

// At most this many directed rings (each one frame kind).
inline constexpr int kMaxMultipathCycles = 32;

// Max-min fair rates of `cycles` all sending at once over `caps`.
std::vector<double> maxMinRates(const LinkCapacities& caps,
                                const std::vector<std::vector<int>>& cycles);
// The rings for `caps` (deterministic: every rank computes the same plan).
MultipathPlan planMultipath(const LinkCapacities& caps);

// Element share of each cycle: proportional to its rate, summing to `count`.
std::vector<size_t> multipathShares(const MultipathPlan& plan, size_t count);

// The peers rank `rank` sends to or receives from in the plan, sorted, unique.
std::vector<int> multipathPeers(const MultipathPlan& plan, int rank);

// The plan for `ranks` ranks on `topology`: its rings' total rate over the plain ring's (1 when
// multipath runs as the ring), or -1 when the topology gives no capacities for these ranks
// (*basis says why). *basis: the plan in one line without the "multipath: " of the log ("6 rings
// over 12 of 12 links, 3.00x the ring's rate; capacities from the topology").
double multipathRateRatio(const Topology& topology, int ranks, std::string* basis);

}  // namespace ringside::collective
