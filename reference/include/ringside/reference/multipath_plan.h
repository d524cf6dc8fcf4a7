// reference/multipath_plan.h — the multipath all-reduce's plan, for tools that predict it (the
// what-if and `ringside simulate`, docs/whatif.md): the same planner the algorithm runs.
#pragma once

#include <string>

namespace ringside::reference {

// The plan for `ranks` ranks on the topology file `topology_text` (docs/topology.md): its rings'
// total rate over the plain ring's (1 when multipath runs as the ring), or -1 when the text gives
// no capacities for these ranks (*basis says why). *basis: the plan in one line ("multipath: 6
// rings over 12 of 12 links, 3.00x the ring's rate; ...").
double multipathRateRatio(const std::string& topology_text, int ranks, std::string* basis);

}  // namespace ringside::reference
