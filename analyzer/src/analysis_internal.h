// analyzer/analysis_internal.h — helpers shared by analysis.cpp and diff.cpp.
#pragma once

#include <cstdint>

namespace ringside::analyzer {

// Power-of-two size bucket [lo, hi) of a byte count; 0 bytes -> [0, 1).
int64_t sizeBucketLo(int64_t bytes);
int64_t sizeBucketHi(int64_t bytes);

}  // namespace ringside::analyzer
