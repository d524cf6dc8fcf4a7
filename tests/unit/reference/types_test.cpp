// Conversions, names, reduceInto, and the double binary tree's shape.
#include "ringside/reference/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <cstdio>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "ringside/reference/half.h"
#include "topology.h"

namespace ringside::reference {
namespace {

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

// reduceInto (vectorized, in blocks with a scalar tail) against the plain
// scalar definition, bit for bit: every f16 and bf16 bit pattern (NaNs,
// infinities, subnormals, signed zeros), random bit patterns for the others,
// at unaligned offsets and lengths that leave tails.
template <class T>
T scalarOp(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return a + b;
    case ReduceOp::kProd: return a * b;
    case ReduceOp::kMin: return b < a ? b : a;
    default: return a < b ? b : a;
  }
}

template <class T>
std::string bitsHex(const T& v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof v);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%llx", static_cast<unsigned long long>(u));
  return buf;
}

// Bit for bit, except that a sum or product of two NaNs may carry either
// one's payload (the operands of a commutative instruction are the compiler's
// choice, in the scalar code as much as in the vector code): any NaN will do.
template <class T, class IsNan>
void expectSameBits(const std::vector<T>& got, const std::vector<T>& want, const char* what,
                    ReduceOp op, IsNan is_nan) {
  ASSERT_EQ(got.size(), want.size());
  const bool any_nan = op == ReduceOp::kSum || op == ReduceOp::kProd;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0 &&
        !(any_nan && is_nan(got[i]) && is_nan(want[i])) && bad++ < 5)
      ADD_FAILURE() << what << " op " << static_cast<int>(op) << " element " << i << ": got "
                    << bitsHex(got[i]) << ", want " << bitsHex(want[i]);
  EXPECT_EQ(bad, 0u) << what;
}

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax};

TEST(Types, ReduceIntoMatchesScalarForEvery16BitPattern) {
  for (int bf = 0; bf < 2; ++bf) {
    const DType t = bf ? DType::kBF16 : DType::kF16;
    auto toF = bf ? bf16ToFloat : halfToFloat;
    auto fromF = bf ? floatToBf16 : floatToHalf;
    for (uint32_t mult : {1u, 7919u, 40503u}) {
      for (ReduceOp op : kOps) {
        const size_t n = 65536 + 13;  // a tail after the blocks
        std::vector<uint16_t> a(n + 1), b(n + 1);
        for (size_t i = 0; i < n + 1; ++i) {
          a[i] = static_cast<uint16_t>(i);
          b[i] = static_cast<uint16_t>((i * mult + 12345u) & 0xffffu);
        }
        std::vector<uint16_t> want(n);
        for (size_t i = 0; i < n; ++i)
          want[i] = fromF(scalarOp(toF(a[i + 1]), toF(b[i]), op));
        std::vector<uint16_t> got(a.begin() + 1, a.end());
        // `in` one element off the 64-byte grid of `out`'s copy
        reduceInto(got.data(), b.data(), n, t, op);
        expectSameBits(got, want, bf ? "bf16" : "f16", op,
                       [&](uint16_t h) { return std::isnan(toF(h)); });
      }
    }
  }
}

template <class T, class Bits>
void randomBitsAgainstScalar(DType t, uint64_t seed) {
  uint64_t x = seed;
  auto next = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (ReduceOp op : kOps) {
    for (size_t n : {size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{1000}, size_t{4099}}) {
      std::vector<T> a(n), b(n + 1), want(n);
      for (size_t i = 0; i < n; ++i) {
        Bits u = static_cast<Bits>(next());
        Bits v = static_cast<Bits>(next());
        if (i % 3 == 0) v = u ^ 1;  // near-equal values, ties in min/max
        std::memcpy(&a[i], &u, sizeof u);
        std::memcpy(&b[i + 1], &v, sizeof v);
      }
      for (size_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<T>) {
          using U = std::make_unsigned_t<T>;
          if (op == ReduceOp::kSum)
            want[i] = static_cast<T>(static_cast<U>(a[i]) + static_cast<U>(b[i + 1]));
          else if (op == ReduceOp::kProd)
            want[i] = static_cast<T>(static_cast<U>(a[i]) * static_cast<U>(b[i + 1]));
          else
            want[i] = scalarOp(a[i], b[i + 1], op);
        } else {
          want[i] = scalarOp(a[i], b[i + 1], op);
        }
      }
      reduceInto(a.data(), b.data() + 1, n, t, op);
      expectSameBits(a, want, collector::dtypeName(t), op, [](T v) {
        if constexpr (std::is_integral_v<T>)
          return false;
        else
          return std::isnan(v);
      });
    }
  }
}

TEST(Types, ReduceIntoMatchesScalarOnRandomBits) {
  randomBitsAgainstScalar<float, uint32_t>(DType::kF32, 1);
  randomBitsAgainstScalar<double, uint64_t>(DType::kF64, 2);
  randomBitsAgainstScalar<int32_t, uint32_t>(DType::kI32, 3);
  randomBitsAgainstScalar<int64_t, uint64_t>(DType::kI64, 4);
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
