// ringside/analyzer/collective_math.h — the analyzer's arithmetic that the reports and the viewer
// use too: saturating sums and power-of-two size buckets; log2 steps and the bus-bandwidth
// factor (nccl-tests' convention, docs/analyzer.md) come from collective/cost_model.h.
#pragma once

#include <cstdint>
#include <string>

#include "ringside/collective/cost_model.h"

namespace ringside::analyzer {

// a + b, held at INT64_MAX / INT64_MIN instead of overflowing: sums of byte counts read from
// a trace (a damaged one may hold any value).
inline int64_t addSaturated(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? INT64_MAX : INT64_MIN;
}

// Power-of-two size bucket [lo, hi) of a byte count; 0 bytes -> [0, 1); hi held at INT64_MAX.
int64_t sizeBucketLo(int64_t bytes);
int64_t sizeBucketHi(int64_t bytes);

// The one way the report, diff and the viewer show the sizes of a group of calls (docs/metrics.md,
// "Units"): the calls' actual per-rank payloads, one size ("26.5 KiB") or "min-max", never the
// edges of their power-of-two bucket. Any int64 is safe (sizes come from a trace).
std::string sizeText(int64_t min_bytes, int64_t max_bytes);

// log2 steps and the bus-bandwidth factor are collective/'s (cost_model.h), the one model.
using collective::busbwFactor;
using collective::ceilLog2;
using collective::floorLog2;

}  // namespace ringside::analyzer
