#include "multipath_planner.h"

namespace ringside::cli {

analyzer::MultipathPlanner multipathPlanner() {
  return [](const std::string&, int, std::string* basis) {
    if (basis != nullptr) *basis = "no multipath planner in this build";
    return -1.0;
  };
}

std::function<double(int ranks, std::string* basis)> multipathRateFor(const std::string& path) {
  if (path.empty()) return {};
  return [](int, std::string* basis) {
    if (basis != nullptr) *basis = "no multipath planner in this build";
    return -1.0;
  };
}

}  // namespace ringside::cli
