// tests/unit/reference/values.h — inputs whose all-reduce has a closed form.
//
// Every input is a small integer (or ±1, 2 for prod), so sums and products
// over up to 8 ranks are exact in every dtype, f16 and bf16 included: the
// expected value is computed in double and compared for equality.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ringside/reference/half.h"
#include "ringside/reference/types.h"

namespace ringside::reference::test {

inline double inputValue(ReduceOp op, int rank, size_t i) {
  switch (op) {
    case ReduceOp::kProd: {
      static const double kF[4] = {1, 2, -1, 1};
      return kF[(i + 2 * static_cast<size_t>(rank)) % 4];
    }
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return static_cast<double>(static_cast<int>((i * 13 + static_cast<size_t>(rank) * 7) % 17) -
                                 8);
    default:
      return static_cast<double>(static_cast<int>((i * 7 + static_cast<size_t>(rank) * 3) % 11) -
                                 5);
  }
}

inline double expectedValue(ReduceOp op, int n, size_t i) {
  double acc = inputValue(op, 0, i);
  for (int r = 1; r < n; ++r) {
    double v = inputValue(op, r, i);
    switch (op) {
      case ReduceOp::kProd:
        acc *= v;
        break;
      case ReduceOp::kMin:
        acc = v < acc ? v : acc;
        break;
      case ReduceOp::kMax:
        acc = v > acc ? v : acc;
        break;
      default:
        acc += v;
        break;
    }
  }
  return acc;
}

inline void store(DType t, void* base, size_t i, double v) {
  char* p = static_cast<char*>(base);
  switch (t) {
    case DType::kF32: {
      float f = static_cast<float>(v);
      std::memcpy(p + 4 * i, &f, 4);
      break;
    }
    case DType::kF64:
      std::memcpy(p + 8 * i, &v, 8);
      break;
    case DType::kI32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(p + 4 * i, &x, 4);
      break;
    }
    case DType::kI64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(p + 8 * i, &x, 8);
      break;
    }
    case DType::kF16: {
      uint16_t h = floatToHalf(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      break;
    }
    case DType::kBF16: {
      uint16_t h = floatToBf16(static_cast<float>(v));
      std::memcpy(p + 2 * i, &h, 2);
      break;
    }
    default:
      break;
  }
}

inline double load(DType t, const void* base, size_t i) {
  const char* p = static_cast<const char*>(base);
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case DType::kF64: {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      return d;
    }
    case DType::kI32: {
      int32_t x;
      std::memcpy(&x, p + 4 * i, 4);
      return x;
    }
    case DType::kI64: {
      int64_t x;
      std::memcpy(&x, p + 8 * i, 8);
      return static_cast<double>(x);
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return halfToFloat(h);
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      return bf16ToFloat(h);
    }
    default:
      return 0;
  }
}

// Fills this rank's input (as 8-byte-aligned storage).
inline std::vector<uint64_t> makeInput(DType t, ReduceOp op, int rank, size_t count) {
  std::vector<uint64_t> buf((count * dtypeSize(t) + 7) / 8 + 1);
  for (size_t i = 0; i < count; ++i) store(t, buf.data(), i, inputValue(op, rank, i));
  return buf;
}

// Number of wrong elements; *first describes the first one.
inline size_t countWrong(DType t, ReduceOp op, int n, const void* data, size_t count,
                         std::string* first) {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double got = load(t, data, i), want = expectedValue(op, n, i);
    if (got != want) {
      if (wrong == 0 && first != nullptr)
        *first = "element " + std::to_string(i) + ": got " + std::to_string(got) + ", want " +
                 std::to_string(want);
      ++wrong;
    }
  }
  return wrong;
}

}  // namespace ringside::reference::test
