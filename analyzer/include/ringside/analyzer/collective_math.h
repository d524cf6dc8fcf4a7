// ringside/analyzer/collective_math.h — the arithmetic of collectives that the analyzer, the
// benchmark, the reports and the viewer all use: power-of-two size buckets, log2 steps, and the
// bus-bandwidth factor (nccl-tests' convention, docs/analyzer.md).
#pragma once

#include <cstdint>
#include <string>

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

// Smallest d with 2^d >= n (0 for n <= 1), and largest d with 2^d <= n (0 for n <= 1).
int ceilLog2(int n);
int floorLog2(int n);

// busbw = algbw x factor: allreduce 2(n-1)/n; reduce-scatter, all-gather(v), all-to-all(v)
// (n-1)/n; barrier 0; broadcast, reduce and everything else 1. 0 for n <= 0.
double busbwFactor(const std::string& op, int n);

}  // namespace ringside::analyzer
