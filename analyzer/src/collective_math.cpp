#include "ringside/analyzer/collective_math.h"

#include <cstdint>

#include "ringside/format/units.h"

namespace ringside::analyzer {

int64_t sizeBucketLo(int64_t bytes) {
  if (bytes <= 0) return 0;
  int64_t lo = 1;
  while (lo <= bytes / 2) lo *= 2;
  return lo;
}

int64_t sizeBucketHi(int64_t bytes) {
  int64_t lo = sizeBucketLo(bytes);
  if (lo == 0) return 1;
  return lo > INT64_MAX / 2 ? INT64_MAX : lo * 2;
}

std::string sizeText(int64_t min_bytes, int64_t max_bytes) {
  if (max_bytes <= min_bytes) return format::bytes(min_bytes);
  return format::bytes(min_bytes) + "-" + format::bytes(max_bytes);
}

}  // namespace ringside::analyzer
