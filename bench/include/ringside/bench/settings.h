// ringside/bench/settings.h — what one `ringside bench` run measures: the rows'
// algorithms, the sizes, iterations, element type and op, and where the trace
// and the JSON go. The command line that fills them is the CLI's (cli's
// bench_options.h); everything here is plain data and names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/collector/event.h"

namespace ringside::bench {

// What one row of the bench table measures.
enum class BenchAlgo {
  kRing,       // ringside's reference ring (reduce-scatter + all-gather)
  kTree,       // ringside's reference double binary tree
  kMultipath,  // ringside's reference rings over every link (RINGSIDE_TOPOLOGY's capacities)
  kGloo,       // gloo::allreduce, Gloo's default (ring) algorithm
  kGlooBcube,  // gloo::allreduce with AllreduceOptions::setAlgorithm(BCUBE)
  kFloor,      // no all-reduce: the copies and reductions the ring's data needs, in memory (floor.h)
  kFloorTcp,   // no all-reduce: the ring's frames and reductions over its TCP links, no step waiting
               // on another (reference::Communicator::ringFloor)
};

// Every algorithm, in the order --help lists them.
inline constexpr BenchAlgo kBenchAlgos[] = {BenchAlgo::kRing,  BenchAlgo::kTree,
                                            BenchAlgo::kMultipath, BenchAlgo::kGloo,
                                            BenchAlgo::kGlooBcube, BenchAlgo::kFloor,
                                            BenchAlgo::kFloorTcp};

const char* benchAlgoName(BenchAlgo algo);  // "ring", "tree", "multipath", "gloo", "gloo-bcube", "floor", "floor-tcp"
bool isGlooAlgo(BenchAlgo algo);
bool isFloorAlgo(BenchAlgo algo);  // floor, floor-tcp: not an all-reduce (no check, no model)

inline constexpr int kMaxBenchRanks = 1024;
inline constexpr uint64_t kMaxBenchBytes = uint64_t{16} << 30;  // 16 GiB per buffer

// Process exit statuses of a rank (the CLI's kExitOk, kExitDataError, kExitUsage).
inline constexpr int kBenchExitOk = 0;
inline constexpr int kBenchExitFailed = 1;  // a wrong element or an error
inline constexpr int kBenchExitUsage = 2;   // bad settings or environment

struct BenchSettings {
  std::vector<BenchAlgo> algos = {BenchAlgo::kRing, BenchAlgo::kTree, BenchAlgo::kGloo};
  std::vector<uint64_t> sizes;  // bytes; the CLI fills 4K:64M when --sizes is not given
  int iters = 20;
  int warmup = 5;
  collector::DType dtype = collector::DType::kF32;
  collector::ReduceOp op = collector::ReduceOp::kSum;
  bool check = true;
  std::string output;  // -o: merged trace ("" = no trace)
  bool force = false;  // overwrite an existing trace
  std::string json;    // --json FILE ("" = none)
  double timeout_s = 30;
  uint64_t chunk_bytes = 0;  // reference pipelining chunk; 0 = automatic
};

}  // namespace ringside::bench
