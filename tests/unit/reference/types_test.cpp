// Conversions, names, reduceInto, and the double binary tree's shape.
#include "ringside/reference/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "half.h"
#include "topology.h"

namespace ringside::reference {
namespace {

using detail::bf16ToFloat;
using detail::floatToBf16;
using detail::floatToHalf;
using detail::halfToFloat;

TEST(Half, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = halfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
      continue;
    }
    EXPECT_EQ(floatToHalf(f), h) << h;
  }
}

TEST(Half, KnownValuesAndRounding) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // tie to even: infinity
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie to even: zero
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);  // 1.5 ulp: tie to even (2)
  // 1 + 2^-11 is halfway between 1 and 1+2^-10: even is 1.
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
}

TEST(BFloat16, RoundTripAndRounding) {
  for (uint32_t b = 0; b < 65536; ++b) {
    float f = bf16ToFloat(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    EXPECT_EQ(floatToBf16(f), b) << b;
  }
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even is 1.
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

TEST(Types, NamesAndSizes) {
  DType t;
  ReduceOp op;
  Algorithm a;
  EXPECT_TRUE(parseDType("bf16", &t) && t == DType::kBF16);
  EXPECT_FALSE(parseDType("u8", &t));
  EXPECT_TRUE(parseReduceOp("max", &op) && op == ReduceOp::kMax);
  EXPECT_FALSE(parseReduceOp("avg", &op));
  EXPECT_TRUE(parseAlgorithm("tree", &a) && a == Algorithm::kTree);
  EXPECT_STREQ(algorithmName(Algorithm::kRing), "ring");
  EXPECT_EQ(dtypeSize(DType::kF16), 2u);
  EXPECT_EQ(dtypeSize(DType::kI64), 8u);
  EXPECT_EQ(dtypeSize(DType::kU8), 0u);
}

TEST(Types, ReduceInto) {
  float a[3] = {1, 5, -2}, b[3] = {2, 3, 4};
  reduceInto(a, b, 3, DType::kF32, ReduceOp::kMax);
  EXPECT_EQ(a[0], 2);
  EXPECT_EQ(a[1], 5);
  EXPECT_EQ(a[2], 4);
  int32_t x[2] = {INT32_MAX, 3}, y[2] = {1, -4};
  reduceInto(x, y, 2, DType::kI32, ReduceOp::kSum);  // wraps, no UB
  EXPECT_EQ(x[0], INT32_MIN);
  EXPECT_EQ(x[1], -1);
  int64_t p[1] = {-3}, q[1] = {7};
  reduceInto(p, q, 1, DType::kI64, ReduceOp::kProd);
  EXPECT_EQ(p[0], -21);
  uint16_t h[2] = {floatToHalf(1.5f), floatToHalf(-1)}, g[2] = {floatToHalf(2.0f), floatToHalf(3)};
  reduceInto(h, g, 2, DType::kF16, ReduceOp::kProd);
  EXPECT_EQ(halfToFloat(h[0]), 3.0f);
  EXPECT_EQ(halfToFloat(h[1]), -3.0f);
  uint16_t bb[1] = {floatToBf16(256)}, cc[1] = {floatToBf16(1)};
  reduceInto(bb, cc, 1, DType::kBF16, ReduceOp::kSum);  // 257 rounds to 256 in bf16
  EXPECT_EQ(bf16ToFloat(bb[0]), 256.0f);
  double d[1] = {1}, e[1] = {-1};
  reduceInto(d, e, 1, DType::kF64, ReduceOp::kMin);
  EXPECT_EQ(d[0], -1);
}

// Each tree is a binary tree spanning all ranks; for even n every rank is a
// leaf in at most one tree, for odd n all but one are (the other is interior in both).
TEST(DoubleBinaryTree, Shape) {
  for (int n = 1; n <= 70; ++n) {
    int leaf_in_both = 0;
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      std::vector<int> child_count(static_cast<size_t>(n), 0);
      for (int r = 0; r < n; ++r) {
        detail::TreeNode node = detail::treeNode(t, r, n);
        if (node.parent < 0) ++roots;
        ASSERT_LE(node.nchildren, 2);
        for (int j = 0; j < node.nchildren; ++j) {
          detail::TreeNode c = detail::treeNode(t, node.children[j], n);
          EXPECT_EQ(c.parent, r) << "n " << n << " tree " << t;
          EXPECT_EQ(c.depth, node.depth + 1);
          ++child_count[static_cast<size_t>(node.children[j])];
        }
      }
      EXPECT_EQ(roots, 1) << n;
      for (int r = 0; r < n; ++r) {
        detail::TreeNode node = detail::treeNode(t, r, n);
        EXPECT_EQ(child_count[static_cast<size_t>(r)], node.parent < 0 ? 0 : 1)
            << "n " << n << " rank " << r;
        EXPECT_LE(node.depth, 2 + static_cast<int>(std::log2(n)));
      }
    }
    for (int r = 0; r < n; ++r)
      if (n > 1 && detail::treeNode(0, r, n).nchildren == 0 &&
          detail::treeNode(1, r, n).nchildren == 0)
        ++leaf_in_both;
    EXPECT_EQ(leaf_in_both, 0) << n;
    if (n > 2) {
      EXPECT_EQ(detail::treeNode(0, 0, n).parent, -1);
      EXPECT_EQ(detail::treeNode(1, n - 1, n).parent, -1);
    }
  }
}

}  // namespace
}  // namespace ringside::reference
