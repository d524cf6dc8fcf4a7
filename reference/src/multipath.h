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
#include "ringside/collective/multipath_plan.h"

namespace ringside::reference::detail {

// The plan is collective/'s (multipath_plan.h: the what-if and `simulate` predict it with the
// same code); the names below keep the reference's callers as they were.
using collective::equalCapacities;
using collective::kMaxMultipathCycles;
using collective::kMaxPlannedRanks;
using collective::LinkCapacities;
using collective::maxMinRates;
using collective::MultipathPlan;
using collective::multipathPeers;
using collective::multipathShares;
using collective::planMultipath;
using collective::probedCapacities;
using collective::probeHosts;
using collective::ProbeHosts;
using collective::probeRounds;

// From a topology file's text (docs/topology.md; the subset that gives capacities). False +
// "line N: what" when it names no node for one of ranks 0..n-1 or cannot be read.
bool parseTopologyCapacities(const std::string& text, int n, LinkCapacities* out,
                             std::string* error);
// RINGSIDE_TOPOLOGY's file if set, else equalCapacities(); a file that cannot be used gives
// equal capacities too, and `source` says why.
LinkCapacities capacitiesFromEnvironment(int n);

// link_of[peer rank] = index into the communicator's links (-1: none); every
// neighbour of a.rank in the plan's cycles must have a link.
std::unique_ptr<Schedule> makeMultipathSchedule(const CollectiveArgs& a, const MultipathPlan& plan,
                                                const std::vector<int>& link_of);

}  // namespace ringside::reference::detail
