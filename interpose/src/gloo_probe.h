// Telling a reduction's element type and operation from its function.
//
// Gloo receives a reduce function (e.g. PyTorch passes &gloo::sum<float>) and
// an element size, never a dtype or an op name; the instantiations are often
// hidden symbols, so their names can't be read either. A plain function
// pointer is pure arithmetic over its arguments: we call it once on two small
// scratch vectors chosen so that every (type, op) pair gives different bits,
// and remember the answer per function. Functors and lambdas are never called.
#pragma once

#include <cstddef>
#include <functional>

#include "ringside/collector/event.h"

namespace ringside::interpose {

using ReduceFn = void (*)(void*, const void*, const void*, size_t);

struct ReduceKind {
  collector::DType dtype = collector::DType::kUnknown;
  collector::ReduceOp op = collector::ReduceOp::kUnknown;
};

// Probes `fn` (cached per function and element size). Thread-safe.
ReduceKind classifyReduceFn(ReduceFn fn, size_t element_size);

inline ReduceKind classifyReduce(const std::function<void(void*, const void*, const void*, size_t)>& f,
                                 size_t element_size) {
  if (const ReduceFn* p = f.target<ReduceFn>(); p != nullptr && *p != nullptr)
    return classifyReduceFn(*p, element_size);
  return {};
}

}  // namespace ringside::interpose
