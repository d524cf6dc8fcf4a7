// reference/src/multipath.h — the multipath all-reduce: rings packed over every link.
//
// The buffer is cut into shares, one per directed ring (a Hamiltonian cycle
// of the ranks over links that exist); every ring runs the ring all-reduce
// (ring.cpp) on its own share, all rings at once, each pipelined. A share's
// size is proportional to the rate its ring gets when every ring sends at
// once: the max-min fair share of the links it crosses (what TCP flows that
// share a link converge to), from the links' capacities. docs/reference.md
// says why rings and not trees or a direct reduce-scatter.
//
// Links are "resources": a directed pair of hosts (node A -> node B of the
// topology file: every rank pair between them shares its capacity) or the
// local link of a host. Without a topology every directed rank pair is its own
// resource of capacity 1.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "algorithms.h"

namespace ringside::reference::detail {

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
// From a topology file's text (docs/topology.md; the subset that gives capacities). False +
// "line N: what" when it names no node for one of ranks 0..n-1 or cannot be read.
bool parseTopologyCapacities(const std::string& text, int n, LinkCapacities* out,
                             std::string* error);
// RINGSIDE_TOPOLOGY's file if set, else equalCapacities(); a file that cannot be used gives
// equal capacities too, and `source` says why.
LinkCapacities capacitiesFromEnvironment(int n);

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

// link_of[peer rank] = index into the communicator's links (-1: none); every
// neighbour of a.rank in the plan's cycles must have a link.
std::unique_ptr<Schedule> makeMultipathSchedule(const CollectiveArgs& a, const MultipathPlan& plan,
                                                const std::vector<int>& link_of);

// The peers rank `rank` sends to or receives from in the plan, sorted, unique.
std::vector<int> multipathPeers(const MultipathPlan& plan, int rank);

}  // namespace ringside::reference::detail
