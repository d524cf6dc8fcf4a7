// The reduce-function probe must name every (type, op) that Gloo's math.h
// offers, from the function alone.
#include <gloo/math.h>
#include <gloo/types.h>

#include <gtest/gtest.h>

#include "gloo_probe.h"

using ringside::collector::DType;
using ringside::collector::ReduceOp;
using ringside::interpose::classifyReduce;
using ringside::interpose::ReduceFn;

namespace {

// `same_bits`: a type whose sum and product are bit-identical to another's
// (two's complement i8 and u8): only min and max can tell them apart.
template <class T>
void expectAll(DType t, DType same_bits = DType::kUnknown) {
  std::function<void(void*, const void*, const void*, size_t)> f;
  struct Case {
    ReduceFn fn;
    ReduceOp op;
  } cases[] = {
      {&gloo::sum<T>, ReduceOp::kSum},
      {&gloo::product<T>, ReduceOp::kProd},
      {&gloo::min<T>, ReduceOp::kMin},
      {&gloo::max<T>, ReduceOp::kMax},
  };
  for (const auto& c : cases) {
    f = c.fn;
    auto k = classifyReduce(f, sizeof(T));
    bool modular = c.op == ReduceOp::kSum || c.op == ReduceOp::kProd;
    if (modular && same_bits != DType::kUnknown)
      EXPECT_TRUE(k.dtype == t || k.dtype == same_bits);
    else
      EXPECT_EQ(k.dtype, t) << "sizeof " << sizeof(T);
    EXPECT_EQ(k.op, c.op) << "sizeof " << sizeof(T);
  }
}

}  // namespace

TEST(ReduceProbe, Float) { expectAll<float>(DType::kF32); }
TEST(ReduceProbe, Double) { expectAll<double>(DType::kF64); }
TEST(ReduceProbe, Int32) { expectAll<int32_t>(DType::kI32); }
TEST(ReduceProbe, Int64) { expectAll<int64_t>(DType::kI64); }
TEST(ReduceProbe, UInt8) { expectAll<uint8_t>(DType::kU8, DType::kI8); }
TEST(ReduceProbe, Int8) { expectAll<int8_t>(DType::kI8, DType::kU8); }
TEST(ReduceProbe, Half) { expectAll<gloo::float16>(DType::kF16); }

TEST(ReduceProbe, LambdaIsNeverCalled) {
  bool called = false;
  std::function<void(void*, const void*, const void*, size_t)> f = [&](void*, const void*, const void*, size_t) {
    called = true;
  };
  auto k = classifyReduce(f, 4);
  EXPECT_FALSE(called);
  EXPECT_EQ(k.dtype, DType::kUnknown);
}
