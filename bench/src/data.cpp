#include "ringside/bench/data.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ringside/reference/half.h"
#include "ringside/reference/types.h"

namespace ringside::bench {
namespace {

using collector::DType;
using collector::ReduceOp;

// Largest L such that every integer in [0, L] is exact in the type.
int64_t exactIntegerLimit(DType t) {
  switch (t) {
    case DType::kF16: return 2048;
    case DType::kBF16: return 256;
    case DType::kF32: return int64_t{1} << 24;
    case DType::kF64: return int64_t{1} << 53;
    case DType::kI32: return INT32_MAX;
    case DType::kI64: return int64_t{1} << 62;
    default: return 0;
  }
}

// Largest E such that 2^E is exact and finite in the type.
int powerOfTwoLimit(DType t) {
  switch (t) {
    case DType::kF16: return 15;
    case DType::kBF16:
    case DType::kF32: return 127;
    case DType::kF64: return 1023;
    case DType::kI32: return 30;
    case DType::kI64: return 62;
    default: return 0;
  }
}

template <typename T>
T fromDouble(double v) {
  return static_cast<T>(v);
}

}  // namespace

BenchPattern::BenchPattern(DType dtype, ReduceOp op, int ranks)
    : dtype_(dtype), op_(op), ranks_(std::max(1, ranks)) {
  const int64_t n = ranks_;
  switch (op_) {
    case ReduceOp::kSum: {
      limit_ = exactIntegerLimit(dtype_);
      int64_t m = std::min<int64_t>(7, limit_ / n);
      if (m >= 1) {
        period_ = static_cast<int>(m);
      } else {
        indicator_ = true;
        period_ = ranks_;
      }
      break;
    }
    case ReduceOp::kProd: {
      int64_t e = std::max(1, powerOfTwoLimit(dtype_));
      period_ = static_cast<int>(std::max<int64_t>(2, (n + e - 1) / e));
      break;
    }
    default:
      period_ = 7;
      break;
  }
  expected_.resize(static_cast<size_t>(period_));
  for (int i = 0; i < period_; ++i) {
    double acc = input(0, static_cast<uint64_t>(i));
    for (int r = 1; r < ranks_; ++r) {
      double v = input(r, static_cast<uint64_t>(i));
      switch (op_) {
        case ReduceOp::kSum: acc += v; break;
        case ReduceOp::kProd: acc *= v; break;
        case ReduceOp::kMin: acc = std::min(acc, v); break;
        default: acc = std::max(acc, v); break;
      }
    }
    expected_[static_cast<size_t>(i)] = acc;
  }
}

double BenchPattern::value(int residue) const {
  switch (op_) {
    case ReduceOp::kSum:
      if (indicator_) return residue < limit_ ? 1 : 0;
      return residue + 1;
    case ReduceOp::kProd:
      return residue == 0 ? 2 : 1;
    default:
      return residue + 1;
  }
}

double BenchPattern::input(int rank, uint64_t i) const {
  const uint64_t p = static_cast<uint64_t>(period_);
  return value(static_cast<int>((static_cast<uint64_t>(rank) % p + i % p) % p));
}

void BenchPattern::fill(void* data, uint64_t count, int rank) const {
  const size_t element = reference::dtypeSize(dtype_);
  const uint64_t p = static_cast<uint64_t>(period_);
  // One period, then doubling copies: the buffer may be hundreds of MiB.
  const uint64_t first = std::min(count, p);
  for (uint64_t i = 0; i < first; ++i) storeElement(data, i, dtype_, input(rank, i));
  auto* bytes = static_cast<unsigned char*>(data);
  uint64_t filled = first;
  while (filled < count) {
    // Copy whole periods so element i keeps its residue i mod P.
    uint64_t chunk = std::min(filled / p * p, count - filled);
    std::memcpy(bytes + filled * element, bytes, chunk * element);
    filled += chunk;
  }
}

uint64_t BenchPattern::countWrong(const void* data, uint64_t count) const {
  uint64_t wrong = 0;
  const uint64_t p = static_cast<uint64_t>(period_);
  uint64_t residue = 0;
  for (uint64_t i = 0; i < count; ++i) {
    // != is true for NaN, so a NaN counts as wrong.
    if (loadElement(data, i, dtype_) != expected_[residue]) ++wrong;
    if (++residue == p) residue = 0;
  }
  return wrong;
}

double loadElement(const void* data, uint64_t i, DType dtype) {
  switch (dtype) {
    case DType::kF32: return static_cast<const float*>(data)[i];
    case DType::kF64: return static_cast<const double*>(data)[i];
    case DType::kF16: return reference::halfToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kBF16: return reference::bf16ToFloat(static_cast<const uint16_t*>(data)[i]);
    case DType::kI32: return static_cast<const int32_t*>(data)[i];
    case DType::kI64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    default: return std::nan("");
  }
}

void storeElement(void* data, uint64_t i, DType dtype, double value) {
  switch (dtype) {
    case DType::kF32: static_cast<float*>(data)[i] = fromDouble<float>(value); break;
    case DType::kF64: static_cast<double*>(data)[i] = value; break;
    case DType::kF16:
      static_cast<uint16_t*>(data)[i] = reference::floatToHalf(static_cast<float>(value));
      break;
    case DType::kBF16:
      static_cast<uint16_t*>(data)[i] = reference::floatToBf16(static_cast<float>(value));
      break;
    case DType::kI32: static_cast<int32_t*>(data)[i] = fromDouble<int32_t>(value); break;
    case DType::kI64: static_cast<int64_t*>(data)[i] = fromDouble<int64_t>(value); break;
    default: break;
  }
}

}  // namespace ringside::bench
