#include "multipath_planner.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "ringside/reference/multipath_plan.h"

namespace ringside::cli {

analyzer::MultipathPlanner multipathPlanner() {
  return [](const std::string& topology_text, int ranks, std::string* basis) {
    return reference::multipathRateRatio(topology_text, ranks, basis);
  };
}

std::function<double(int ranks, std::string* basis)> multipathRateFor(const std::string& path) {
  if (path.empty()) return {};
  // Read once (the analyzer already checked the file: a regular file of at most 16 MiB).
  auto text = std::make_shared<std::string>();
  {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    *text = s.str();
  }
  return [text, path](int ranks, std::string* basis) {
    std::string plan;
    const double r = reference::multipathRateRatio(*text, ranks, &plan);
    if (basis != nullptr) *basis = plan + " (" + path + ")";
    return r;
  };
}

}  // namespace ringside::cli
