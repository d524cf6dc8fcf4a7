// cli/bench.h — `ringside bench`: all-reduce bandwidth of ringside's ring and
// double binary tree and of Gloo, measured side by side, nccl-tests style.
//
// Three ways in:
// - `ringside bench [--ranks N]` (no launcher variables): starts N local
//   copies of this executable as `ringside bench --worker ...` with
//   torchrun-style variables (cli/launch), waits, merges their rank files
//   into -o; rank 0 prints the table.
// - under a launcher (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set, no
//   --ranks): this process is one rank.
// - `--worker` (hidden): a rank started by the first form.
#pragma once

#include <span>
#include <string>

namespace ringside::cli {

int runBench(std::span<const std::string> args);

// True when RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are all set: a
// launcher (torchrun, a script) started this process as one rank.
bool launchedAsRank();

}  // namespace ringside::cli
