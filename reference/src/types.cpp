// reference/src/types.cpp — names, sizes and the element-wise reduction.
#include "ringside/reference/types.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ringside/reference/half.h"

// 64-byte GCC vectors pass through always-inline helpers only; the note that
// their calling convention differs between instruction sets does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace ringside::reference {

bool parseAlgorithm(std::string_view s, Algorithm* a) {
  Algorithm parsed = Algorithm::kDefault;
  if (!collective::parse(s, &parsed) || !collective::referenceRuns(parsed)) return false;
  *a = parsed;
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
  DType parsed = DType::kUnknown;
  if (!collective::parse(s, &parsed) || dtypeSize(parsed) == 0) return false;
  *t = parsed;
  return true;
}

bool parseReduceOp(std::string_view s, ReduceOp* op) {
  ReduceOp parsed = ReduceOp::kNone;
  if (!collective::parse(s, &parsed) || parsed == ReduceOp::kNone || parsed == ReduceOp::kUnknown) return false;
  *op = parsed;
  return true;
}

namespace {

// ---------------------------------------------------------------------------
// The element-wise reduction, vectorized.
//
// Each kernel works on blocks of 64 bytes held in GCC vector types (the
// compiler maps them onto the widest registers the target has: four SSE or
// two AVX2 registers), then on the remaining elements one by one with the same
// expression. Every lane computes exactly what the scalar expression computes,
// so results do not depend on the block split or on the instruction set:
//   sum, prod  a + b, a * b (integers in their unsigned type: wrap-around,
//              never signed-overflow UB)
//   min, max   b < a ? b : a, a < b ? b : a (a NaN in `out` stays, one in
//              `in` is ignored: the first operand wins when unordered)
//   f16, bf16  widened to float, combined, rounded back to nearest even once.
// Each kernel is compiled twice, for x86-64's baseline and for AVX2 (+F16C for
// f16); the AVX2 build is picked once, at the first call, when the CPU has it.
// The vector loads and stores go through memcpy: no alignment or aliasing
// assumptions (out and in may be the same buffer, never partly overlapping).

#define RS_ALWAYS_INLINE inline __attribute__((always_inline))

typedef float VF32 __attribute__((vector_size(64)));
typedef double VF64 __attribute__((vector_size(64)));
typedef uint32_t VU32 __attribute__((vector_size(64)));
typedef int32_t VI32 __attribute__((vector_size(64)));
typedef uint64_t VU64 __attribute__((vector_size(64)));
typedef int64_t VI64 __attribute__((vector_size(64)));
typedef uint16_t VU16x16 __attribute__((vector_size(32)));

struct SumOp {
  template <class V>
  RS_ALWAYS_INLINE static V apply(V a, V b) { return a + b; }
};
struct ProdOp {
  template <class V>
  RS_ALWAYS_INLINE static V apply(V a, V b) { return a * b; }
};
struct MinOp {
  template <class V>
  RS_ALWAYS_INLINE static V apply(V a, V b) { return b < a ? b : a; }
};
struct MaxOp {
  template <class V>
  RS_ALWAYS_INLINE static V apply(V a, V b) { return a < b ? b : a; }
};

// out[i] = Op(out[i], in[i]) over n elements of T, V = 64 bytes of T.
template <class Op, class V, class T>
RS_ALWAYS_INLINE void blocks(void* out, const void* in, size_t n) {
  constexpr size_t kLanes = sizeof(V) / sizeof(T);
  auto* o = static_cast<unsigned char*>(out);
  const auto* x = static_cast<const unsigned char*>(in);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V a, b;
    std::memcpy(&a, o + i * sizeof(T), sizeof a);
    std::memcpy(&b, x + i * sizeof(T), sizeof b);
    a = Op::apply(a, b);
    std::memcpy(o + i * sizeof(T), &a, sizeof a);
  }
  for (; i < n; ++i) {
    T a, b;
    std::memcpy(&a, o + i * sizeof(T), sizeof a);
    std::memcpy(&b, x + i * sizeof(T), sizeof b);
    a = Op::apply(a, b);
    std::memcpy(o + i * sizeof(T), &a, sizeof a);
  }
}

// Integers: sum and prod in the unsigned type, min and max in the signed one.
template <class VU, class U, class VS, class S>
RS_ALWAYS_INLINE void integers(void* out, const void* in, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return blocks<SumOp, VU, U>(out, in, n);
    case ReduceOp::kProd: return blocks<ProdOp, VU, U>(out, in, n);
    case ReduceOp::kMin: return blocks<MinOp, VS, S>(out, in, n);
    case ReduceOp::kMax: return blocks<MaxOp, VS, S>(out, in, n);
    default: return;
  }
}

template <class V, class T>
RS_ALWAYS_INLINE void floats(void* out, const void* in, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return blocks<SumOp, V, T>(out, in, n);
    case ReduceOp::kProd: return blocks<ProdOp, V, T>(out, in, n);
    case ReduceOp::kMin: return blocks<MinOp, V, T>(out, in, n);
    case ReduceOp::kMax: return blocks<MaxOp, V, T>(out, in, n);
    default: return;
  }
}

// 16-bit floats one by one: widen both to float, combine, round back once.
template <class Op, float (*kToFloat)(uint16_t), uint16_t (*kFromFloat)(float)>
RS_ALWAYS_INLINE void halfTail(uint16_t* o, const uint16_t* x, size_t from, size_t n) {
  for (size_t i = from; i < n; ++i) o[i] = kFromFloat(Op::apply(kToFloat(o[i]), kToFloat(x[i])));
}

// bf16 in blocks of 16: the widening is a shift, the rounding integer
// arithmetic identical to floatToBf16.
template <class Op>
RS_ALWAYS_INLINE void bf16Blocks(void* out, const void* in, size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(in);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    VU16x16 a16, b16;
    std::memcpy(&a16, o + i, sizeof a16);
    std::memcpy(&b16, x + i, sizeof b16);
    VU32 a = __builtin_convertvector(a16, VU32) << 16;
    VU32 b = __builtin_convertvector(b16, VU32) << 16;
    VF32 rf = Op::apply(reinterpret_cast<VF32>(a), reinterpret_cast<VF32>(b));
    VU32 r = reinterpret_cast<VU32>(rf);
    VU32 rounded = (r + 0x7fffu + ((r >> 16) & 1u)) >> 16;
    VU32 quiet = (r >> 16) | 0x40u;
    VU32 bits = (r & 0x7fffffffu) > 0x7f800000u ? quiet : rounded;
    VU16x16 r16 = __builtin_convertvector(bits, VU16x16);
    std::memcpy(o + i, &r16, sizeof r16);
  }
  halfTail<Op, bf16ToFloat, floatToBf16>(o, x, i, n);
}

template <class Op>
RS_ALWAYS_INLINE void f16Scalar(void* out, const void* in, size_t n) {
  halfTail<Op, halfToFloat, floatToHalf>(static_cast<uint16_t*>(out),
                                                         static_cast<const uint16_t*>(in), 0, n);
}

template <template <class> class K>
RS_ALWAYS_INLINE void byOp(void* out, const void* in, size_t n, ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return K<SumOp>::run(out, in, n);
    case ReduceOp::kProd: return K<ProdOp>::run(out, in, n);
    case ReduceOp::kMin: return K<MinOp>::run(out, in, n);
    case ReduceOp::kMax: return K<MaxOp>::run(out, in, n);
    default: return;
  }
}
template <class Op>
struct Bf16K {
  RS_ALWAYS_INLINE static void run(void* o, const void* x, size_t n) { bf16Blocks<Op>(o, x, n); }
};
template <class Op>
struct F16ScalarK {
  RS_ALWAYS_INLINE static void run(void* o, const void* x, size_t n) { f16Scalar<Op>(o, x, n); }
};

// Everything but f16's vector path, for one instruction set.
RS_ALWAYS_INLINE void reduceAll(void* out, const void* in, size_t n, DType t, ReduceOp op) {
  switch (t) {
    case DType::kF32: return floats<VF32, float>(out, in, n, op);
    case DType::kF64: return floats<VF64, double>(out, in, n, op);
    case DType::kI32: return integers<VU32, uint32_t, VI32, int32_t>(out, in, n, op);
    case DType::kI64: return integers<VU64, uint64_t, VI64, int64_t>(out, in, n, op);
    case DType::kBF16: return byOp<Bf16K>(out, in, n, op);
    case DType::kF16: return byOp<F16ScalarK>(out, in, n, op);
    default: return;
  }
}

void reduceBaseline(void* out, const void* in, size_t n, DType t, ReduceOp op) {
  reduceAll(out, in, n, t, op);
}

#if defined(__x86_64__)
// f16 in blocks of 8 with F16C's conversions (round to nearest even, NaN
// kept a quiet NaN with the same sign and upper payload bits: what
// halfToFloat/floatToHalf give).
template <class Op>
__attribute__((target("avx2,f16c"))) RS_ALWAYS_INLINE void f16Blocks(void* out, const void* in,
                                                                      size_t n) {
  auto* o = static_cast<uint16_t*>(out);
  const auto* x = static_cast<const uint16_t*>(in);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i a, b;
    std::memcpy(&a, o + i, sizeof a);
    std::memcpy(&b, x + i, sizeof b);
    __m256 r = Op::apply(_mm256_cvtph_ps(a), _mm256_cvtph_ps(b));
    __m128i h = _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(o + i, &h, sizeof h);
  }
  halfTail<Op, halfToFloat, floatToHalf>(o, x, i, n);
}
__attribute__((target("avx2,f16c"))) void reduceAvx2(void* out, const void* in, size_t n, DType t,
                                                     ReduceOp op) {
  if (t != DType::kF16) return reduceAll(out, in, n, t, op);
  switch (op) {
    case ReduceOp::kSum: return f16Blocks<SumOp>(out, in, n);
    case ReduceOp::kProd: return f16Blocks<ProdOp>(out, in, n);
    case ReduceOp::kMin: return f16Blocks<MinOp>(out, in, n);
    case ReduceOp::kMax: return f16Blocks<MaxOp>(out, in, n);
    default: return;
  }
}
#endif

using ReduceFn = void (*)(void*, const void*, size_t, DType, ReduceOp);

ReduceFn pickReduce() {
#if defined(__x86_64__)
  if (std::getenv("RINGSIDE_REDUCE_BASELINE") == nullptr) {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c")) return reduceAvx2;
  }
#endif
  return reduceBaseline;
}

}  // namespace

void reduceInto(void* out, const void* in, size_t count, DType t, ReduceOp op) {
  if (count == 0) return;
  static const ReduceFn fn = pickReduce();
  fn(out, in, count, t, op);
}

}  // namespace ringside::reference
