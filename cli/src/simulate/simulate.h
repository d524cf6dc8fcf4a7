// cli/simulate.h — `ringside simulate`: the recorded job's per-step all-reduces (or sizes given)
// predicted per algorithm on a cluster the user describes, 8 to 16,384 ranks (docs/whatif.md).
#pragma once

#include <span>
#include <string>

namespace ringside::cli {

int runSimulate(std::span<const std::string> args);
std::string simulateHelp();

}  // namespace ringside::cli
