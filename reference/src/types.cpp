// reference/src/types.cpp — names, sizes and the element-wise reduction.
#include "ringside/reference/types.h"

#include <cstdint>
#include <cstring>

#include "half.h"

namespace ringside::reference {

const char* algorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRing:
      return "ring";
    case Algorithm::kTree:
      return "tree";
  }
  return "";
}

bool parseAlgorithm(std::string_view s, Algorithm* a) {
  if (s == "ring")
    *a = Algorithm::kRing;
  else if (s == "tree")
    *a = Algorithm::kTree;
  else
    return false;
  return true;
}

size_t dtypeSize(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    default:
      return 0;
  }
}

bool parseDType(std::string_view s, DType* t) {
  if (s == "f32")
    *t = DType::kF32;
  else if (s == "f64")
    *t = DType::kF64;
  else if (s == "f16")
    *t = DType::kF16;
  else if (s == "bf16")
    *t = DType::kBF16;
  else if (s == "i32")
    *t = DType::kI32;
  else if (s == "i64")
    *t = DType::kI64;
  else
    return false;
  return true;
}

bool parseReduceOp(std::string_view s, ReduceOp* op) {
  if (s == "sum")
    *op = ReduceOp::kSum;
  else if (s == "prod")
    *op = ReduceOp::kProd;
  else if (s == "min")
    *op = ReduceOp::kMin;
  else if (s == "max")
    *op = ReduceOp::kMax;
  else
    return false;
  return true;
}

namespace {

// The four operations on one value type. Integers add and multiply in their
// unsigned type: wrap-around, never signed-overflow UB.
template <class T>
struct Ops {
  static T sum(T a, T b) { return a + b; }
  static T prod(T a, T b) { return a * b; }
};
template <>
struct Ops<int32_t> {
  static int32_t sum(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
  }
  static int32_t prod(int32_t a, int32_t b) {
    return static_cast<int32_t>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
  }
};
template <>
struct Ops<int64_t> {
  static int64_t sum(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  }
  static int64_t prod(int64_t a, int64_t b) {
    return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
};

template <class T, class F>
void loop(void* out, const void* in, size_t n, F f) {
  T* o = static_cast<T*>(out);
  const T* x = static_cast<const T*>(in);
  for (size_t i = 0; i < n; ++i) o[i] = f(o[i], x[i]);
}

template <class T>
void reduceTyped(void* out, const void* in, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      loop<T>(out, in, n, [](T a, T b) { return Ops<T>::sum(a, b); });
      break;
    case ReduceOp::kProd:
      loop<T>(out, in, n, [](T a, T b) { return Ops<T>::prod(a, b); });
      break;
    case ReduceOp::kMin:
      loop<T>(out, in, n, [](T a, T b) { return b < a ? b : a; });
      break;
    case ReduceOp::kMax:
      loop<T>(out, in, n, [](T a, T b) { return a < b ? b : a; });
      break;
    default:
      break;
  }
}

// 16-bit floats: widen both to float, combine, round back once.
template <float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
void reduce16(void* out, const void* in, size_t n, ReduceOp op) {
  uint16_t* o = static_cast<uint16_t*>(out);
  const uint16_t* x = static_cast<const uint16_t*>(in);
  for (size_t i = 0; i < n; ++i) {
    float a = kToFloat(o[i]), b = kToFloat(x[i]), r = a;
    switch (op) {
      case ReduceOp::kSum:
        r = a + b;
        break;
      case ReduceOp::kProd:
        r = a * b;
        break;
      case ReduceOp::kMin:
        r = b < a ? b : a;
        break;
      case ReduceOp::kMax:
        r = a < b ? b : a;
        break;
      default:
        break;
    }
    o[i] = kFromFloat(r);
  }
}

}  // namespace

void reduceInto(void* out, const void* in, size_t count, DType t, ReduceOp op) {
  if (count == 0) return;
  switch (t) {
    case DType::kF32:
      reduceTyped<float>(out, in, count, op);
      break;
    case DType::kF64:
      reduceTyped<double>(out, in, count, op);
      break;
    case DType::kI32:
      reduceTyped<int32_t>(out, in, count, op);
      break;
    case DType::kI64:
      reduceTyped<int64_t>(out, in, count, op);
      break;
    case DType::kF16:
      reduce16<detail::halfToFloat, detail::floatToHalf>(out, in, count, op);
      break;
    case DType::kBF16:
      reduce16<detail::bf16ToFloat, detail::floatToBf16>(out, in, count, op);
      break;
    default:
      break;
  }
}

}  // namespace ringside::reference
