// ringside/bench/data.h — `ringside bench` inputs whose all-reduce is known exactly.
//
// Element i of rank r is value((r + i) mod P) for a small period P chosen per
// (dtype, op, ranks), and every value, every partial result and the final
// result is an integer (or a power of two) that the element type holds
// exactly, whatever order the ranks are combined in:
//   sum:     value(x) = x + 1 with P = min(7, L / n), L the largest integer up to
//            which the type is exact (f16 2048, bf16 256, f32 2^24, ...), so the
//            sum stays <= L; when n > L, value(x) = 1 for x < L else 0 (P = n).
//   prod:    value(x) = 2 for x = 0 else 1, with P large enough that at most E
//            ranks contribute a 2 (2^E exact and finite: f16 15, i32 30, ...).
//   min/max: value(x) = x + 1 with P = 7.
// So a checker compares every element with the exact expected value, and
// counts the ones that differ (NaN included).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ringside/collector/event.h"

namespace ringside::bench {

class BenchPattern {
 public:
  // dtype must be one reference::dtypeSize() knows; op sum, prod, min or max.
  BenchPattern(collector::DType dtype, collector::ReduceOp op, int ranks);

  int period() const { return period_; }
  // Input element i of `rank`, and the all-reduce result at element i.
  double input(int rank, uint64_t i) const;
  double expected(uint64_t i) const { return expected_[i % static_cast<uint64_t>(period_)]; }

  // Writes `count` input elements of `rank` into data (dtype's encoding).
  void fill(void* data, uint64_t count, int rank) const;
  // Elements of data (count of them) that differ from expected().
  uint64_t countWrong(const void* data, uint64_t count) const;

 private:
  double value(int residue) const;

  collector::DType dtype_;
  collector::ReduceOp op_;
  int ranks_;
  int period_ = 1;
  int64_t limit_ = 0;         // sum: largest exactly representable integer bound used
  bool indicator_ = false;    // sum with ranks > limit: values 0/1
  std::vector<double> expected_;  // one period
};

// One element of `dtype` at data[i] as a double, and the reverse (f16 and
// bf16 through reference/half.h, round to nearest even).
double loadElement(const void* data, uint64_t i, collector::DType dtype);
void storeElement(void* data, uint64_t i, collector::DType dtype, double value);

}  // namespace ringside::bench
