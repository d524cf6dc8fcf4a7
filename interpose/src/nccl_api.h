// NCCL's C ABI as far as ringside needs it, declared here from NCCL's
// documented interface (nccl.h of 2.19 … 2.29) so that nothing of ringside
// needs a CUDA toolkit or NCCL at build time. Only types and values: the
// functions themselves are found at run time (symbols.h: findRealSymbol),
// in whatever object the application (or PyTorch, through private dlopen
// chains) loaded NCCL from.
//
// Everything here must stay layout-identical to NCCL's own definitions:
// enums are passed as int, handles as pointers, ncclUniqueId by value (128
// bytes), cudaStream_t as an opaque pointer.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringside::nccl {

// ncclResult_t
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

// ncclDataType_t (8-bit floats since 2.19; unknown values are passed through)
enum DataType : int {
  kInt8 = 0, kUint8 = 1, kInt32 = 2, kUint32 = 3, kInt64 = 4, kUint64 = 5,
  kFloat16 = 6, kFloat32 = 7, kFloat64 = 8, kBfloat16 = 9, kFloat8e4m3 = 10, kFloat8e5m2 = 11,
};

// ncclRedOp_t: the built-in values; >= 5 are user-made ops (ncclRedOpCreatePreMulSum).
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kAvg = 4 };

inline constexpr size_t kUniqueIdBytes = 128;
struct UniqueId {
  char internal[kUniqueIdBytes];
};

struct Comm;                 // opaque: struct ncclComm
using CommHandle = Comm*;    // ncclComm_t
using Stream = void*;        // cudaStream_t
struct Config;               // ncclConfig_t: only passed through, never read

inline constexpr int kSplitNoColor = -1;  // NCCL_SPLIT_NOCOLOR

// NCCL's name of a result ("ncclRemoteError"); "unknown" for values this table does not know.
inline const char* resultName(int r) {
  switch (r) {
    case kSuccess: return "ncclSuccess";
    case kUnhandledCudaError: return "ncclUnhandledCudaError";
    case kSystemError: return "ncclSystemError";
    case kInternalError: return "ncclInternalError";
    case kInvalidArgument: return "ncclInvalidArgument";
    case kInvalidUsage: return "ncclInvalidUsage";
    case kRemoteError: return "ncclRemoteError";
    case kInProgress: return "ncclInProgress";
    default: return "unknown";
  }
}

// Size in bytes of one element of `t`; 0 for values this table does not know.
inline size_t dataTypeSize(int t) {
  switch (t) {
    case kInt8: case kUint8: case kFloat8e4m3: case kFloat8e5m2: return 1;
    case kFloat16: case kBfloat16: return 2;
    case kInt32: case kUint32: case kFloat32: return 4;
    case kInt64: case kUint64: case kFloat64: return 8;
    default: return 0;
  }
}

}  // namespace ringside::nccl

// The C names, for the exported wrapper definitions.
using ncclResult_t = int;
using ncclDataType_t = int;
using ncclRedOp_t = int;
using ncclComm_t = ringside::nccl::CommHandle;
using ncclUniqueId = ringside::nccl::UniqueId;
using ncclConfig_t = ringside::nccl::Config;
using cudaStream_t = ringside::nccl::Stream;

static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes, passed by value");
