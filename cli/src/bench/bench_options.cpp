#include "bench/bench_options.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include "ringside/format/units.h"
#include "ringside/reference/types.h"

namespace ringside::cli {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  while (true) {
    size_t at = text.find(sep);
    parts.push_back(trim(text.substr(0, at)));
    if (at == std::string_view::npos) break;
    text.remove_prefix(at + 1);
  }
  return parts;
}

// The options that --help shows; --worker is appended after them, hidden.
std::vector<OptionSpec> benchSpecs(BenchOptions* o) {
  return {
      {"ranks", 'n', "N",
       "start N local ranks, 8 per CPU at most (default: 4, or a launcher's)",
       storeInteger(&o->ranks, 1, kMaxBenchRanks)},
      {"algo", 'a', "LIST", "ring,tree,multipath,gloo[-bcube],floor[-tcp] (default: ring,tree,gloo)",
       [o](std::string_view value, std::string* error) {
         return parseAlgoList(value, &o->algos, error);
       }},
      {"sizes", 's', "LIST",
       "bytes per buffer: 4K:64M (x4 steps, default), 4K:256M:2, 1K,1M, 65536",
       [o](std::string_view value, std::string* error) {
         return parseSizeList(value, &o->sizes, error);
       }},
      {"iters", 'i', "K", "timed iterations per algorithm and size (default: 20)",
       storeInteger(&o->iters, 1, 1000000)},
      {"warmup", 'w', "K", "untimed iterations before them (default: 5)",
       storeInteger(&o->warmup, 0, 1000000)},
      {"dtype", 'd', "TYPE", "element type: f32 (default), f64, f16, bf16, i32, i64",
       [o](std::string_view value, std::string* error) {
         if (reference::parseDType(value, &o->dtype)) return true;
         *error = "expected f32, f64, f16, bf16, i32 or i64";
         return false;
       }},
      {"op", 0, "OP", "reduction: sum (default), prod, min, max",
       [o](std::string_view value, std::string* error) {
         if (reference::parseReduceOp(value, &o->op)) return true;
         *error = "expected sum, prod, min or max";
         return false;
       }},
      {"check", 0, "", "check every result against exact expected values (the default)",
       [o](std::string_view, std::string*) {
         o->check = true;
         return true;
       }},
      {"no-check", 0, "", "do not check results (the wrong column shows '-')",
       [o](std::string_view, std::string*) {
         o->check = false;
         return true;
       }},
      {"output", 'o', "TRACE.sqlite", "write the full trace of every run (merged rank files)",
       storeText(&o->output)},
      {"force", 'f', "", "overwrite an existing trace", setFlag(&o->force)},
      {"json", 0, "FILE", "also write the rows as JSON (schema ringside-bench/1)",
       storeText(&o->json)},
      {"master-addr", 0, "ADDR", "MASTER_ADDR for --ranks (default: 127.0.0.1)",
       storeText(&o->master_addr)},
      {"master-port", 0, "PORT", "MASTER_PORT for --ranks (default: a free port)",
       storeInteger(&o->master_port, 1, 65535)},
      {"timeout-s", 0, "SECONDS", "deadline of every blocking step (default: 30)",
       [o](std::string_view value, std::string* error) {
         if (parseSeconds(value, &o->timeout_s) && o->timeout_s >= 1) return true;
         *error = "expected seconds >= 1, or a duration: 90s, 2m";
         return false;
       }},
      {"chunk-bytes", 0, "BYTES", "pipelining chunk of ring and tree (default: automatic)",
       [o](std::string_view value, std::string* error) {
         if (parseByteSize(value, &o->chunk_bytes)) return true;
         *error = "expected a size in bytes (K, M, G suffixes allowed)";
         return false;
       }},
  };
}

}  // namespace

ParseStatus parseBenchArgs(std::span<const std::string> args, BenchOptions* out,
                           std::string* error) {
  *out = BenchOptions{};
  std::vector<OptionSpec> specs = benchSpecs(out);
  specs.push_back({"worker", 0, "", "", setFlag(&out->worker)});
  std::vector<std::string> positionals;
  ParseStatus status = parseOptions(args, specs, Positionals::kInterleaved, &positionals, error);
  if (status != ParseStatus::kOk) return status;
  if (!positionals.empty()) {
    *error = "unexpected argument '" + positionals.front() + "' (bench takes options only)";
    return ParseStatus::kError;
  }
  if (out->sizes.empty()) parseSizeList("4K:64M", &out->sizes, error);
  size_t element = reference::dtypeSize(out->dtype);
  for (uint64_t size : out->sizes) {
    if (size < element) {
      *error = "size " + std::to_string(size) + " is smaller than one " +
               collector::dtypeName(out->dtype) + " element";
      return ParseStatus::kError;
    }
  }
  return ParseStatus::kOk;
}

std::string benchHelp() {
  BenchOptions scratch;
  std::vector<OptionSpec> specs = benchSpecs(&scratch);
  return "Usage: ringside bench [options]\n"
         "\n"
         "Measures all-reduce on this machine (or across a launcher's ranks): for every size,\n"
         "one row per algorithm with its time, algbw, busbw (x 2(n-1)/n), an alpha-beta model\n"
         "estimate and the number of wrong elements. ringside's ring, double binary tree and\n"
         "multipath (rings over every link, shares by RINGSIDE_TOPOLOGY's link capacities)\n"
         "and Debian's Gloo run in the same processes on the same buffers. Alpha and beta are\n"
         "measured by ping-pong between ranks 0 and 1 before the first row.\n"
         "Without --ranks, when RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set (torchrun,\n"
         "a script), this process is one rank of the launcher's job.\n"
         "Rank 0 prints the table on stdout, one size at a time. Exit status: 0 when every row\n"
         "is correct, 1 when a check failed or a rank reported an error, 2 for bad usage, and\n"
         "a rank's own status when it died (128+N for signal N).\n"
         "\n" +
         formatOptionsHelp(specs) +
         "\n"
         "Examples:\n"
         "  ringside bench\n"
         "  ringside bench --ranks 8 --algo ring,tree --sizes 1M:1G:2 --dtype bf16\n"
         "  torchrun --nnodes 2 --nproc-per-node 4 ... $(which ringside) bench --json b.json\n"
         "See docs/bench.md for the model and multi-host runs.\n";
}

bool parseByteSize(std::string_view text, uint64_t* out) {
  int64_t bytes = 0;
  if (!format::parseSize(trim(text), &bytes) || bytes <= 0 || static_cast<uint64_t>(bytes) > kMaxBenchBytes) {
    return false;
  }
  *out = static_cast<uint64_t>(bytes);
  return true;
}

bool parseSizeList(std::string_view text, std::vector<uint64_t>* out, std::string* error, Repeats repeats) {
  std::vector<uint64_t> sizes;
  auto add = [&sizes, repeats](uint64_t size) {
    if (repeats == Repeats::kKeep || std::find(sizes.begin(), sizes.end(), size) == sizes.end()) {
      sizes.push_back(size);
    }
  };
  const std::string expected = " (a size is a number of bytes, K, M, G or T suffixes allowed: 4096, 64K, 1.5M; at most 16G)";
  for (std::string_view item : split(text, ',')) {
    std::vector<std::string_view> parts = split(item, ':');
    if (item.empty() || parts.size() > 3) {
      *error = "expected SIZE, FIRST:LAST or FIRST:LAST:FACTOR, got '" + std::string(item) + "'";
      return false;
    }
    uint64_t first = 0;
    uint64_t last = 0;
    if (!parseByteSize(parts[0], &first)) {
      *error = "bad size '" + std::string(parts[0]) + "'" + expected;
      return false;
    }
    if (parts.size() == 1) {
      add(first);
      continue;
    }
    if (!parseByteSize(parts[1], &last)) {
      *error = "bad size '" + std::string(parts[1]) + "'" + expected;
      return false;
    }
    int64_t factor = 4;
    if (parts.size() == 3 && !parseInteger(parts[2], 2, 1024, &factor)) {
      *error = "bad factor '" + std::string(parts[2]) + "' (an integer from 2 to 1024)";
      return false;
    }
    if (last < first) {
      *error = "range '" + std::string(item) + "' ends below its start";
      return false;
    }
    for (uint64_t size = first; size <= last; size *= static_cast<uint64_t>(factor)) {
      add(size);
      if (size > last / static_cast<uint64_t>(factor)) break;
    }
  }
  *out = std::move(sizes);
  return true;
}

bool parseAlgoList(std::string_view text, std::vector<BenchAlgo>* out, std::string* error) {
  std::vector<BenchAlgo> algos;
  for (std::string_view item : split(text, ',')) {
    const BenchAlgo* found = std::find_if(
        std::begin(bench::kBenchAlgos), std::end(bench::kBenchAlgos),
        [item](BenchAlgo algo) { return item == benchAlgoName(algo); });
    if (found == std::end(bench::kBenchAlgos)) {
      *error = "unknown algorithm '" + std::string(item) +
               "' (ring, tree, multipath, gloo, gloo-bcube, floor, floor-tcp)";
      return false;
    }
    if (std::find(algos.begin(), algos.end(), *found) == algos.end()) algos.push_back(*found);
  }
  *out = std::move(algos);
  return true;
}

int maxLocalBenchRanks(int cpus) {
  const int64_t limit = static_cast<int64_t>(std::max(cpus, 1)) * kLocalBenchRanksPerCpu;
  return static_cast<int>(std::min<int64_t>(limit, kMaxBenchRanks));
}

int usableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(std::min<long>(online, kMaxBenchRanks)) : 1;
}

}  // namespace ringside::cli
