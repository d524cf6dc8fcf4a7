// cli/bench_options.h — the command line of `ringside bench`, parsed without
// side effects (no files touched, no processes started, no sockets).
//
// Also the small value parsers the verb needs and the unit tests exercise:
// size lists ("4K:256M", "4K:256M:2", "1K,1M", "65536", binary units) and the
// algorithm list ("ring,tree,gloo,gloo-bcube"); element types and reduce ops
// are the reference's (reference::parseDType, parseReduceOp). What the options
// mean to a rank is bench::BenchSettings (ringside/bench/settings.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "options.h"
#include "ringside/bench/settings.h"

namespace ringside::cli {

using bench::BenchAlgo;
using bench::benchAlgoName;
using bench::isGlooAlgo;
using bench::kMaxBenchBytes;
using bench::kMaxBenchRanks;

// A rank's settings, and how this command starts or joins the ranks.
struct BenchOptions : bench::BenchSettings {
  int ranks = 0;  // 0 = not given: a launcher's rank, or 4 local ranks
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0 = a free port
  bool worker = false;  // hidden: started by `ringside bench --ranks N`
};

// Parses the words after "bench". kError fills *error with one line.
ParseStatus parseBenchArgs(std::span<const std::string> args, BenchOptions* out,
                           std::string* error);

std::string benchHelp();

// A size in format/'s grammar ("4096", "4K", "4KiB", "1.5M", "2G", "64k": binary units,
// case-insensitive), spaces around it allowed. False for anything else, zero, or above
// kMaxBenchBytes.
bool parseByteSize(std::string_view text, uint64_t* out);

// A comma list of sizes and ranges. A range "A:B[:F]" is A, A*F, A*F^2, ...
// up to and including B (F defaults to 4, must be >= 2). Order is kept; repeats are dropped
// (bench: one row per size) or kept (simulate: a step's all-reduces, 25M,25M,12M is three).
// False + one-line reason on error.
enum class Repeats { kDrop, kKeep };
bool parseSizeList(std::string_view text, std::vector<uint64_t>* out, std::string* error,
                   Repeats repeats = Repeats::kDrop);

// "ring,tree,gloo,gloo-bcube" (order kept, repeats dropped).
bool parseAlgoList(std::string_view text, std::vector<BenchAlgo>* out, std::string* error);

// How many local ranks `bench --ranks N` starts on a machine with `cpus` CPUs: 8 per CPU (at
// least 8), never above kMaxBenchRanks. Every rank is a process that spins while it waits, and
// the ranks start and meet one after another: more than this takes minutes before the first
// line of the table, so the verb refuses at once instead. A launcher spreads more ranks over
// several hosts.
inline constexpr int kLocalBenchRanksPerCpu = 8;
int maxLocalBenchRanks(int cpus);
// The CPUs this process may run on (its affinity mask), at least 1.
int usableCpus();

}  // namespace ringside::cli
