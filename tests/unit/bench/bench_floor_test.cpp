// The floor row's work (ringside/bench/floor.h): it stays inside the buffer for every
// rank count, element type and size class.
#include "ringside/bench/floor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace ringside::bench {
namespace {

using collector::DType;
using collector::ReduceOp;

// Guard bytes around the buffer must survive every run.
TEST(BenchFloor, StaysInsideTheBuffer) {
  constexpr size_t kGuard = 4096;
  for (DType t : {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64}) {
    const size_t e = reference::dtypeSize(t);
    for (int n : {1, 2, 3, 4, 7}) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{5}, size_t{65536 + 3}, size_t{300000}}) {
        std::vector<unsigned char> buf(count * e + 2 * kGuard, 0xa5);
        for (int r = 0; r < n; ++r) {
          FloorWork work(r, n, t, ReduceOp::kMax);
          work.run(buf.data() + kGuard, count);
        }
        for (size_t i = 0; i < kGuard; ++i) {
          ASSERT_EQ(buf[i], 0xa5) << "before, n " << n << " count " << count;
          ASSERT_EQ(buf[buf.size() - 1 - i], 0xa5) << "after, n " << n << " count " << count;
        }
      }
    }
  }
}

// One rank has no peer: nothing to copy, nothing to reduce.
TEST(BenchFloor, OneRankDoesNothing) {
  std::vector<float> data(1000, 3.0f);
  FloorWork work(0, 1, DType::kF32, ReduceOp::kSum);
  work.run(data.data(), data.size());
  for (float v : data) ASSERT_EQ(v, 3.0f);
}

}  // namespace
}  // namespace ringside::bench
