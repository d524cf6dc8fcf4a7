// ringside/analyzer/collective_math.h — the arithmetic of collectives that the analyzer, the
// benchmark, the reports and the viewer all use: power-of-two size buckets, log2 steps, and the
// bus-bandwidth factor (nccl-tests' convention, docs/analyzer.md).
#pragma once

#include <cstdint>
#include <string>

namespace ringside::analyzer {

// Power-of-two size bucket [lo, hi) of a byte count; 0 bytes -> [0, 1).
int64_t sizeBucketLo(int64_t bytes);
int64_t sizeBucketHi(int64_t bytes);

// Smallest d with 2^d >= n (0 for n <= 1), and largest d with 2^d <= n (0 for n <= 1).
int ceilLog2(int n);
int floorLog2(int n);

// busbw = algbw x factor: allreduce 2(n-1)/n; reduce-scatter, all-gather(v), all-to-all(v)
// (n-1)/n; barrier 0; broadcast, reduce and everything else 1. 0 for n <= 0.
double busbwFactor(const std::string& op, int n);

}  // namespace ringside::analyzer
