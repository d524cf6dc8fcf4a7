// ringside/collective/names.h — the words of collectives, declared once: ops, element types,
// reduce ops, libraries, algorithms, protocols, phases and transfer sides, each an enum with the
// trace's name for every value (the names a trace stores, reports print and options accept).
//
// Every list below is an X-macro: (enumerator, trace name). The enum, name() and parse() are
// derived from it, so a new op or algorithm is one line here. The values are one byte each
// (collector::Event stores them) and are never written to a file: a trace holds the names.
// This module sits below every other (format/ alone is beneath it); it holds no state.
#pragma once

#include <cstdint>
#include <string_view>

namespace ringside::collective {

#define RINGSIDE_OPS(X)                                                                       \
  X(kUnknown, "unknown") X(kAllreduce, "allreduce") X(kBroadcast, "broadcast")               \
  X(kAllgather, "allgather") X(kAllgatherv, "allgatherv") X(kReduce, "reduce")               \
  X(kReducescatter, "reducescatter") X(kGather, "gather") X(kScatter, "scatter")             \
  X(kAlltoall, "alltoall") X(kAlltoallv, "alltoallv") X(kBarrier, "barrier") X(kSend, "send") \
  X(kRecv, "recv")

#define RINGSIDE_LIBRARIES(X)                                                               \
  X(kUnknown, "unknown") X(kGloo, "gloo") X(kNccl, "nccl") X(kRingsideRing, "ringside-ring") \
  X(kRingsideTree, "ringside-tree") X(kRingsideMultipath, "ringside-multipath")

#define RINGSIDE_DTYPES(X)                                                                     \
  X(kUnknown, "") X(kF32, "f32") X(kF64, "f64") X(kF16, "f16") X(kBF16, "bf16") X(kI8, "i8")  \
  X(kU8, "u8") X(kI32, "i32") X(kU32, "u32") X(kI64, "i64") X(kU64, "u64") X(kBool, "bool")

#define RINGSIDE_REDUCE_OPS(X) \
  X(kNone, "") X(kUnknown, "unknown") X(kSum, "sum") X(kProd, "prod") X(kMin, "min") X(kMax, "max")

// kDefault: the library chose and did not say. NCCL's own between kHalvingDoubling and
// kMultipath; kMultipath is ringside's rings over every link.
#define RINGSIDE_ALGORITHMS(X)                                                                  \
  X(kDefault, "") X(kRing, "ring") X(kTree, "tree") X(kBcube, "bcube")                         \
  X(kHalvingDoubling, "halving-doubling") X(kCollnetDirect, "collnet_direct")                  \
  X(kCollnetChain, "collnet_chain") X(kNvls, "nvls") X(kNvlsTree, "nvls_tree") X(kPat, "pat") \
  X(kMultipath, "multipath")

// NCCL's protocols.
#define RINGSIDE_PROTOCOLS(X) X(kUnknown, "") X(kLL, "LL") X(kLL128, "LL128") X(kSimple, "Simple")

// The parts of a collective a message belongs to.
#define RINGSIDE_PHASES(X)                                                                \
  X(kNone, "") X(kReduceScatter, "reduce-scatter") X(kAllGather, "all-gather")            \
  X(kReduce, "reduce") X(kBroadcast, "broadcast")

#define RINGSIDE_ENUMERATOR(id, text) id,
enum class Op : uint8_t { RINGSIDE_OPS(RINGSIDE_ENUMERATOR) };
enum class Library : uint8_t { RINGSIDE_LIBRARIES(RINGSIDE_ENUMERATOR) };
enum class DType : uint8_t { RINGSIDE_DTYPES(RINGSIDE_ENUMERATOR) };
enum class ReduceOp : uint8_t { RINGSIDE_REDUCE_OPS(RINGSIDE_ENUMERATOR) };
enum class Algorithm : uint8_t { RINGSIDE_ALGORITHMS(RINGSIDE_ENUMERATOR) };
enum class Protocol : uint8_t { RINGSIDE_PROTOCOLS(RINGSIDE_ENUMERATOR) };
enum class Phase : uint8_t { RINGSIDE_PHASES(RINGSIDE_ENUMERATOR) };
#undef RINGSIDE_ENUMERATOR
// A transfer's side; 0 is left for "not set" in collector::Event.
enum class Side : uint8_t { kSend = 1, kRecv = 2 };

// The trace's name of a value ("" or "unknown" for the unknown/none value, as listed above);
// an out-of-range value gets the first value's name; a Side other than kSend is "recv".
const char* name(Op v);
const char* name(Library v);
const char* name(DType v);
const char* name(ReduceOp v);
const char* name(Algorithm v);
const char* name(Protocol v);
const char* name(Phase v);
const char* name(Side v);

// The value whose name is exactly `text` (case matters: NCCL's "LL128"). False, *out untouched,
// for any other text.
bool parse(std::string_view text, Op* out);
bool parse(std::string_view text, Library* out);
bool parse(std::string_view text, DType* out);
bool parse(std::string_view text, ReduceOp* out);
bool parse(std::string_view text, Algorithm* out);
bool parse(std::string_view text, Protocol* out);
bool parse(std::string_view text, Phase* out);
bool parse(std::string_view text, Side* out);

// Whether a name read from a trace is this value's: is(c.op, Op::kAllreduce).
template <typename Enum>
bool is(std::string_view text, Enum v) {
  return text == name(v);
}

// The names the collector gives its enums (the trace's vocabulary, collector/event.h).
inline const char* opName(Op v) { return name(v); }
inline const char* libraryName(Library v) { return name(v); }
inline const char* dtypeName(DType v) { return name(v); }
inline const char* reduceOpName(ReduceOp v) { return name(v); }
inline const char* algorithmName(Algorithm v) { return name(v); }
inline const char* protocolName(Protocol v) { return name(v); }
inline const char* phaseName(Phase v) { return name(v); }
inline const char* sideName(Side v) { return name(v); }

// --- the all-reduces ringside runs itself (reference/, bench, record --allreduce) -------------

// Ring, tree and multipath: what ringside's reference all-reduce runs.
bool referenceRuns(Algorithm a);
// The library name a reference all-reduce records ("ringside-ring", ...), kUnknown otherwise.
Library referenceLibrary(Algorithm a);
// RINGSIDE_ALLREDUCE and `record --allreduce`: an algorithm the reference runs, or "gloo" (Gloo's
// own: *out = kDefault). False for anything else; kAllreduceChoices names them for messages.
bool parseAllreduceChoice(std::string_view text, Algorithm* out);
inline constexpr const char* kAllreduceChoices = "ring, tree, multipath or gloo";

}  // namespace ringside::collective
