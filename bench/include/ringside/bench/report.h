// ringside/bench/report.h — what `ringside bench` prints and writes: the header,
// the nccl-tests style table (100 columns), and the versioned JSON document.
// Pure formatting: no I/O, no clocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/bench/settings.h"
#include "ringside/collector/event.h"

namespace ringside::bench {

inline constexpr const char* kBenchJsonSchema = "ringside-bench/1";

struct BenchRow {
  uint64_t bytes = 0;
  uint64_t count = 0;
  BenchAlgo algo = BenchAlgo::kRing;
  double seconds = 0;        // max over ranks of the mean time per iteration
  double model_seconds = 0;  // α-β estimate; < 0 when unknown (no α/β)
  int64_t wrong = -1;        // wrong elements summed over ranks; -1 = not checked
  std::string error;         // non-empty: the row could not be measured (e.g. Gloo refused)
  double median_seconds = 0;  // max over ranks of the median time per iteration
  double min_seconds = 0;     // max over ranks of the fastest iteration
  double cpu_seconds = 0;     // sum over ranks of the mean process CPU time per iteration
};

struct BenchRun {
  int ranks = 0;
  std::vector<std::string> hosts;  // distinct host names, in rank order of first appearance
  collector::DType dtype = collector::DType::kF32;
  collector::ReduceOp op = collector::ReduceOp::kSum;
  int iters = 0;
  int warmup = 0;
  bool check = true;
  bool floor_rows = false;       // floor or floor-tcp rows in the table (not all-reduces)
  bool have_alpha_beta = false;  // false with one rank
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  std::vector<BenchRow> rows;
};

// The lines before the table: the run line (ranks, hosts, dtype, op, iters),
// α and β, the one-host note when it applies, the model caveat, what the floor rows are.
std::string formatBenchHeader(const BenchRun& run);
// The column titles, and one row.
std::string formatBenchColumns();
std::string formatBenchRow(const BenchRow& row, int ranks);

// {"schema":"ringside-bench/1","ranks":N,"hosts":[...],"alpha_s":..,
//  "beta_s_per_byte":..,...,"rows":[{...},...]}; unknown numbers are null.
std::string benchJson(const BenchRun& run);

// JSON string literal with quotes and escapes; every control character as
// \u00XX (format::jsonString writes \n, \r, \t: the schema's bytes stay as they were).
std::string jsonString(const std::string& text);

}  // namespace ringside::bench
