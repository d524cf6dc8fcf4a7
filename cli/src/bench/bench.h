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

// True when a launcher started this process as one rank: MASTER_ADDR and
// MASTER_PORT are set, and RANK and WORLD_SIZE (torchrun, scripts), or else
// OMPI_COMM_WORLD_RANK/SIZE (mpirun), PMI_RANK/SIZE or SLURM_PROCID/NTASKS
// (srun), which are then copied into RANK and WORLD_SIZE.
bool adoptLauncherIdentity();

}  // namespace ringside::cli
