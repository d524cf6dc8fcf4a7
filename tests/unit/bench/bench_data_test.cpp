#include "ringside/bench/data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "ringside/reference/half.h"
#include "ringside/reference/types.h"

namespace ringside::bench {
namespace {

using collector::DType;
using collector::ReduceOp;
using reference::bf16ToFloat;
using reference::floatToBf16;
using reference::floatToHalf;
using reference::halfToFloat;

constexpr DType kTypes[] = {DType::kF32, DType::kF64, DType::kF16,
                            DType::kBF16, DType::kI32, DType::kI64};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};

// Reduces the ranks' inputs in the element type itself, one rank at a time
// (in the given order), rounding after every step like a real all-reduce.
std::vector<unsigned char> reduceInType(const BenchPattern& pattern, DType t, ReduceOp op,
                                        int ranks, uint64_t count, bool reverse) {
  const size_t element = reference::dtypeSize(t);
  std::vector<unsigned char> acc(count * element);
  std::vector<unsigned char> in(count * element);
  pattern.fill(acc.data(), count, reverse ? ranks - 1 : 0);
  for (int k = 1; k < ranks; ++k) {
    int r = reverse ? ranks - 1 - k : k;
    pattern.fill(in.data(), count, r);
    for (uint64_t i = 0; i < count; ++i) {
      double a = loadElement(acc.data(), i, t);
      double b = loadElement(in.data(), i, t);
      double c = op == ReduceOp::kSum    ? a + b
                 : op == ReduceOp::kProd ? a * b
                 : op == ReduceOp::kMin  ? std::min(a, b)
                                         : std::max(a, b);
      storeElement(acc.data(), i, t, c);
    }
  }
  return acc;
}

TEST(BenchData, ExactForEveryTypeOpAndRankCount) {
  for (DType t : kTypes) {
    for (ReduceOp op : kOps) {
      for (int ranks : {1, 2, 3, 4, 7, 8, 16, 37, 300, 1024}) {
        BenchPattern pattern(t, op, ranks);
        const uint64_t count = 2 * static_cast<uint64_t>(pattern.period()) + 5;
        for (bool reverse : {false, true}) {
          auto result = reduceInType(pattern, t, op, ranks, count, reverse);
          EXPECT_EQ(pattern.countWrong(result.data(), count), 0u)
              << collector::dtypeName(t) << " " << collector::reduceOpName(op) << " ranks "
              << ranks;
        }
      }
    }
  }
}

TEST(BenchData, ExpectedMatchesTheSumOfInputs) {
  BenchPattern pattern(DType::kF32, ReduceOp::kSum, 4);
  EXPECT_EQ(pattern.period(), 7);
  for (uint64_t i = 0; i < 20; ++i) {
    double sum = 0;
    for (int r = 0; r < 4; ++r) {
      double v = pattern.input(r, i);
      EXPECT_EQ(v, static_cast<double>((r + i) % 7 + 1));  // the documented pattern
      sum += v;
    }
    EXPECT_EQ(pattern.expected(i), sum);
  }
}

TEST(BenchData, SmallTypesShrinkTheRange) {
  // bf16 is exact up to 256: 37 ranks x 7 would not be.
  BenchPattern bf16(DType::kBF16, ReduceOp::kSum, 37);
  EXPECT_LE(bf16.period() * 37, 256);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_LE(bf16.expected(i), 256);
  // 300 ranks > 256: inputs become 0/1 with exactly 256 ones per element.
  BenchPattern many(DType::kBF16, ReduceOp::kSum, 300);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(many.expected(i), 256);
  // f16 prod: at most 2^15.
  BenchPattern prod(DType::kF16, ReduceOp::kProd, 1024);
  for (uint64_t i = 0; i < 100; ++i) EXPECT_LE(prod.expected(i), 32768);
}

TEST(BenchData, RanksDiffer) {
  // A rank that sent another rank's data must be caught.
  for (ReduceOp op : kOps) {
    BenchPattern pattern(DType::kF32, op, 4);
    bool differ = false;
    for (uint64_t i = 0; i < 14; ++i) differ |= pattern.input(0, i) != pattern.input(1, i);
    EXPECT_TRUE(differ) << collector::reduceOpName(op);
  }
}

TEST(BenchData, CountsWrongElementsAndNaN) {
  BenchPattern pattern(DType::kF32, ReduceOp::kSum, 3);
  const uint64_t count = 1000;
  std::vector<float> data(count);
  for (uint64_t i = 0; i < count; ++i) data[i] = static_cast<float>(pattern.expected(i));
  EXPECT_EQ(pattern.countWrong(data.data(), count), 0u);
  data[3] += 1;
  data[999] = std::nanf("");
  data[500] = -data[500];
  EXPECT_EQ(pattern.countWrong(data.data(), count), 3u);
}

TEST(BenchData, FillTilesWholePeriods) {
  BenchPattern pattern(DType::kI32, ReduceOp::kMin, 5);
  for (uint64_t count : {1u, 6u, 7u, 8u, 13u, 14u, 15u, 1000u, 4099u}) {
    std::vector<int32_t> data(count, -1);
    pattern.fill(data.data(), count, 3);
    for (uint64_t i = 0; i < count; ++i) {
      ASSERT_EQ(data[i], static_cast<int32_t>(pattern.input(3, i))) << count << " " << i;
    }
  }
}

TEST(BenchData, HalfConversions) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(floatToHalf(2049.0f), floatToHalf(2048.0f));  // tie to even
  EXPECT_EQ(floatToHalf(2051.0f), floatToHalf(2052.0f));
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  for (int v = -2048; v <= 2048; ++v) {
    EXPECT_EQ(halfToFloat(floatToHalf(static_cast<float>(v))), static_cast<float>(v));
  }
  for (uint32_t h = 0; h < 0x7c00; ++h) {  // every finite positive half round-trips
    ASSERT_EQ(floatToHalf(halfToFloat(static_cast<uint16_t>(h))), h);
  }
}

TEST(BenchData, Bf16Conversions) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(257.0f), floatToBf16(256.0f));  // tie to even
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  for (int v = -256; v <= 256; ++v) {
    EXPECT_EQ(bf16ToFloat(floatToBf16(static_cast<float>(v))), static_cast<float>(v));
  }
}

}  // namespace
}  // namespace ringside::bench
