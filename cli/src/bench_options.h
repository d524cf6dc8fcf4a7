// cli/bench_options.h — the command line of `ringside bench`, parsed without
// side effects (no files touched, no processes started, no sockets).
//
// Also the small value parsers the verb needs and the unit tests exercise:
// size lists ("4K:256M", "4K:256M:2", "1K,1M", "65536", binary units), the
// algorithm list ("ring,tree,gloo,gloo-bcube"), element types and reduce ops.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "options.h"
#include "ringside/collector/event.h"

namespace ringside::cli {

// What one row of the bench table measures.
enum class BenchAlgo {
  kRing,       // ringside's reference ring (reduce-scatter + all-gather)
  kTree,       // ringside's reference double binary tree
  kGloo,       // gloo::allreduce, Gloo's default (ring) algorithm
  kGlooBcube,  // gloo::allreduce with AllreduceOptions::setAlgorithm(BCUBE)
  kFloor,      // no all-reduce: the copies and reductions the ring's data needs, in memory (bench_floor.h)
  kFloorTcp,   // no all-reduce: the ring's frames and reductions over its TCP links, no step waiting
               // on another (reference::Communicator::ringFloor)
};

const char* benchAlgoName(BenchAlgo algo);  // "ring", "tree", "gloo", "gloo-bcube", "floor", "floor-tcp"
bool isGlooAlgo(BenchAlgo algo);
bool isFloorAlgo(BenchAlgo algo);  // floor, floor-tcp: not an all-reduce (no check, no model)

inline constexpr int kMaxBenchRanks = 1024;
inline constexpr uint64_t kMaxBenchBytes = uint64_t{16} << 30;  // 16 GiB per buffer

struct BenchOptions {
  int ranks = 0;  // 0 = not given: a launcher's rank, or 4 local ranks
  std::vector<BenchAlgo> algos = {BenchAlgo::kRing, BenchAlgo::kTree, BenchAlgo::kGloo};
  std::vector<uint64_t> sizes;  // bytes; filled with 4K:64M when --sizes is not given
  int iters = 20;
  int warmup = 5;
  collector::DType dtype = collector::DType::kF32;
  collector::ReduceOp op = collector::ReduceOp::kSum;
  bool check = true;
  std::string output;  // -o: merged trace ("" = no trace)
  bool force = false;  // overwrite an existing trace
  std::string json;    // --json FILE ("" = none)
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0 = a free port
  double timeout_s = 30;
  uint64_t chunk_bytes = 0;  // reference pipelining chunk; 0 = automatic
  bool worker = false;       // hidden: started by `ringside bench --ranks N`
};

// Parses the words after "bench". kError fills *error with one line.
ParseStatus parseBenchArgs(std::span<const std::string> args, BenchOptions* out,
                           std::string* error);

std::string benchHelp();

// "4096", "4K", "4KiB", "1M", "2G", "64k" (binary units, case-insensitive,
// optional trailing "B"). False for anything else, zero, or above
// kMaxBenchBytes.
bool parseByteSize(std::string_view text, uint64_t* out);

// A comma list of sizes and ranges. A range "A:B[:F]" is A, A*F, A*F^2, ...
// up to and including B (F defaults to 4, must be >= 2). Order is kept,
// repeats dropped. False + one-line reason on error.
bool parseSizeList(std::string_view text, std::vector<uint64_t>* out, std::string* error);

// "ring,tree,gloo,gloo-bcube" (order kept, repeats dropped).
bool parseAlgoList(std::string_view text, std::vector<BenchAlgo>* out, std::string* error);

// f32 f64 f16 bf16 i32 i64 / sum prod min max: the types and ops the
// reference all-reduce supports.
bool parseBenchDType(std::string_view text, collector::DType* out);
bool parseBenchReduceOp(std::string_view text, collector::ReduceOp* out);
size_t benchDTypeSize(collector::DType t);  // 0 for an unsupported type

// "4 KiB", "64 MiB", "1.5 MiB", "100 B": the size column.
std::string formatByteSize(uint64_t bytes);

}  // namespace ringside::cli
