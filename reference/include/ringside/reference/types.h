// reference/types.h — the vocabulary of ringside's reference all-reduce.
//
// Element types and reduce ops are the collector's (the trace's) enums, so a
// reference run and a recorded library call describe themselves identically.
#pragma once

#include <cstddef>
#include <string_view>

#include "ringside/collector/event.h"

namespace ringside::reference {

using collector::DType;
using collector::ReduceOp;

// The product's one Algorithm (collective/names.h). The reference runs three of them
// (collective::referenceRuns): kRing (reduce-scatter then all-gather, n-1 steps each, chunked
// and pipelined), kTree (double binary tree: pipelined reduce up, broadcast down; half the data
// per tree) and kMultipath (rings packed over every link, RINGSIDE_TOPOLOGY's capacities, each
// on a share of the buffer in proportion to its rate, all at once: docs/reference.md).
using collective::Algorithm;
using collective::algorithmName;
// "ring" | "tree" | "multipath": collective's names of what the reference runs.
bool parseAlgorithm(std::string_view s, Algorithm* a);

// Supported: f32 f64 f16 bf16 i32 i64. Returns 0 for anything else.
size_t dtypeSize(DType t);
bool parseDType(std::string_view s, DType* t);          // "f32", "f64", "f16", "bf16", "i32", "i64"
bool parseReduceOp(std::string_view s, ReduceOp* op);   // "sum", "prod", "min", "max"

// out[i] = out[i] (op) in[i] for `count` elements of type t. f16/bf16 are
// accumulated in float and rounded to nearest even once per step.
void reduceInto(void* out, const void* in, size_t count, DType t, ReduceOp op);

}  // namespace ringside::reference
