#include "ringside/bench/model.h"

#include <algorithm>
#include <cmath>

#include "ringside/analyzer/collective_math.h"

namespace ringside::bench {

using analyzer::ceilLog2;
using analyzer::floorLog2;

double allreduceBusFactor(int ranks) { return analyzer::busbwFactor("allreduce", ranks); }

double algBandwidth(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
}

double busBandwidth(uint64_t bytes, double seconds, int ranks) {
  return algBandwidth(bytes, seconds) * allreduceBusFactor(ranks);
}

double ringModelSeconds(int ranks, double bytes, double alpha, double beta) {
  if (ranks <= 1) return 0;
  return 2.0 * (ranks - 1) * alpha + allreduceBusFactor(ranks) * bytes * beta;
}

double treeModelSeconds(int ranks, double bytes, double alpha, double beta, int64_t chunks) {
  if (ranks <= 1) return 0;
  const double k = static_cast<double>(std::max<int64_t>(1, chunks));
  const int d = floorLog2(ranks);
  return 2.0 * (d + k - 1) * (alpha + bytes * beta / k);
}

int64_t treeBestChunks(int ranks, double bytes, double alpha, double beta) {
  const int d = floorLog2(ranks);
  if (d <= 1 || alpha <= 0 || bytes * beta <= 0) return 1;
  const double continuous = std::sqrt((d - 1) * bytes * beta / alpha);
  // T(k) is convex in k: the best integer is next to the continuous optimum.
  int64_t best = std::max<int64_t>(1, static_cast<int64_t>(std::floor(continuous)));
  if (treeModelSeconds(ranks, bytes, alpha, beta, best + 1) <
      treeModelSeconds(ranks, bytes, alpha, beta, best)) {
    ++best;
  }
  return best;
}

double bcubeModelSeconds(int ranks, double bytes, double alpha, double beta) {
  if (ranks <= 1) return 0;
  return 2.0 * ceilLog2(ranks) * alpha + allreduceBusFactor(ranks) * bytes * beta;
}

double modelSeconds(BenchAlgo algo, int ranks, double bytes, double alpha, double beta) {
  switch (algo) {
    case BenchAlgo::kRing:
    case BenchAlgo::kGloo:
    case BenchAlgo::kMultipath:  // one link's alpha-beta: the ring's time, what multipath must beat
      return ringModelSeconds(ranks, bytes, alpha, beta);
    case BenchAlgo::kTree:
      return treeModelSeconds(ranks, bytes, alpha, beta,
                              treeBestChunks(ranks, bytes, alpha, beta));
    case BenchAlgo::kGlooBcube:
      return bcubeModelSeconds(ranks, bytes, alpha, beta);
    case BenchAlgo::kFloor:
    case BenchAlgo::kFloorTcp:
      return -1;  // not a collective: no model
  }
  return 0;
}

double alphaFromPingPong(double small_rtt_s) { return std::max(0.0, small_rtt_s / 2); }

double betaFromPingPong(double small_rtt_s, double large_rtt_s, uint64_t small_bytes,
                        uint64_t large_bytes) {
  if (large_bytes <= small_bytes) return 0;
  double beta = (large_rtt_s - small_rtt_s) / 2 / static_cast<double>(large_bytes - small_bytes);
  return std::max(0.0, beta);
}

}  // namespace ringside::bench
