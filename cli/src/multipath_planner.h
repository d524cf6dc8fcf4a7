// cli/multipath_planner.h — the multipath plan for the what-if and `simulate`: the analyzer
// does not depend on reference/, so the cli hands it reference's planner as a function.
#pragma once

#include <string>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/simulate.h"

namespace ringside::cli {

// topology text, ranks -> the multipath rings' total rate over the ring's alone (<= 0: none).
analyzer::MultipathPlanner multipathPlanner();
// For AnalysisOptions::multipath_rate: the plan on the topology file at `path` ("" none).
std::function<double(int ranks, std::string* basis)> multipathRateFor(const std::string& path);

}  // namespace ringside::cli
