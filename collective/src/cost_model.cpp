// collective/cost_model.cpp — cost_model.h's formulas.
#include "ringside/collective/cost_model.h"

#include <algorithm>

namespace ringside::collective {

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

double busbwFactor(Op op, int n) {
  if (n <= 0) return 0;
  const double dn = n;
  switch (op) {
    case Op::kAllreduce: return 2.0 * (dn - 1) / dn;
    case Op::kReducescatter:
    case Op::kAllgather:
    case Op::kAllgatherv:
    case Op::kAlltoall:
    case Op::kAlltoallv: return (dn - 1) / dn;
    case Op::kBarrier: return 0;
    default: return 1;  // broadcast, reduce, everything else
  }
}

double busbwFactor(std::string_view op, int n) {
  Op parsed = Op::kUnknown;
  parse(op, &parsed);
  return busbwFactor(parsed, n);
}

int modelSteps(Op op, bool tree, int n) {
  if (n <= 1) return 0;
  switch (op) {
    case Op::kAllreduce: return tree ? 2 * ceilLog2(n) : 2 * (n - 1);
    case Op::kReducescatter:
    case Op::kAllgather:
    case Op::kAllgatherv:
    case Op::kAlltoall:
    case Op::kAlltoallv: return n - 1;
    case Op::kBroadcast:
    case Op::kReduce:
    case Op::kBarrier: return ceilLog2(n);
    default: return 1;
  }
}

double ringAllreduceTime(int n, double bytes, double alpha, double beta) {
  if (n <= 1) return 0;
  // 2(n-1) steps of S/n bytes (the same sum as 2(n-1) alpha + 2(n-1)/n S beta).
  return 2.0 * (n - 1) * (alpha + bytes / n * beta);
}

double treeAllreduceTime(int n, double bytes, double alpha, double beta, int64_t chunks) {
  if (n <= 1) return 0;
  const double k = static_cast<double>(std::max<int64_t>(1, chunks));
  return 2.0 * (ceilLog2(n) + k - 1) * (alpha + bytes * beta / k);
}

int64_t treeChunkBytes(int64_t bytes, int64_t chunk_bytes) {
  const int64_t half = (std::max<int64_t>(0, bytes) + 1) / 2;
  const int64_t chunk =
      chunk_bytes > 0 ? chunk_bytes
                      : std::clamp(half / kTreeChunkDivisor, kTreeChunkMinBytes, kTreeChunkMaxBytes);
  return std::min(half, chunk);
}

int64_t treeChunks(int64_t bytes, int64_t chunk_bytes) {
  const int64_t half = (std::max<int64_t>(0, bytes) + 1) / 2;
  const int64_t chunk = treeChunkBytes(bytes, chunk_bytes);
  return chunk > 0 ? (half + chunk - 1) / chunk : 1;
}

double treeAllreduceTime(int n, int64_t bytes, double alpha, double beta, TreeLinks links,
                         int64_t chunk_bytes) {
  if (n <= 1) return 0;
  const int64_t chunks = treeChunks(bytes, chunk_bytes);
  if (links == TreeLinks::kSharedNic) {
    return treeAllreduceTime(n, static_cast<double>(bytes), alpha, beta, chunks);
  }
  const double steps = 2.0 * ceilLog2(n) + static_cast<double>(chunks - 1);
  return steps * (alpha + static_cast<double>(treeChunkBytes(bytes, chunk_bytes)) * beta);
}

double bcubeAllreduceTime(int n, double bytes, double alpha, double beta) {
  if (n <= 1) return 0;
  return 2.0 * ceilLog2(n) * alpha + busbwFactor(Op::kAllreduce, n) * bytes * beta;
}

double multipathAllreduceTime(int n, double bytes, double alpha, double beta, double rate_ratio) {
  if (!(rate_ratio > 0)) return -1;
  return ringAllreduceTime(n, bytes, alpha, beta / rate_ratio);
}

}  // namespace ringside::collective
