#include "ringside/analyzer/collective_math.h"

#include <cstdint>

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

int ceilLog2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

int floorLog2(int n) {
  int d = 0;
  while ((2 << d) <= n) ++d;
  return d;
}

double busbwFactor(const std::string& op, int n) {
  if (n <= 0) return 0;
  double dn = n;
  if (op == "allreduce") return 2.0 * (dn - 1) / dn;
  if (op == "reducescatter" || op == "allgather" || op == "allgatherv" || op == "alltoall" ||
      op == "alltoallv") {
    return (dn - 1) / dn;
  }
  if (op == "barrier") return 0;
  return 1;  // broadcast, reduce, everything else
}

}  // namespace ringside::analyzer
