#include "multipath_planner.h"

#include <memory>

#include "ringside/analyzer/topology.h"
#include "ringside/fileio/input_file.h"
#include "ringside/reference/multipath_plan.h"

namespace ringside::cli {

analyzer::MultipathPlanner multipathPlanner() {
  return [](const std::string& topology_text, int ranks, std::string* basis) {
    return reference::multipathRateRatio(topology_text, ranks, basis);
  };
}

std::function<double(int ranks, std::string* basis)> multipathRateFor(const std::string& path) {
  if (path.empty()) return {};
  // Read once, by fileio's rule for configuration files (the analyzer read it the same way
  // just before; a file replaced meanwhile by a FIFO or /dev/zero gives an empty plan).
  auto text = std::make_shared<std::string>();
  std::string ignored;
  fileio::readConfigFile(path, analyzer::kMaxTopologyFileBytes, "topology file", text.get(),
                         &ignored);
  return [text, path](int ranks, std::string* basis) {
    std::string plan;
    const double r = reference::multipathRateRatio(*text, ranks, &plan);
    if (basis != nullptr) *basis = plan + " (" + path + ")";
    return r;
  };
}

}  // namespace ringside::cli
