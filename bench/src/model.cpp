#include "ringside/bench/model.h"

#include <algorithm>
#include <cmath>

#include "ringside/collective/cost_model.h"

namespace ringside::bench {

double allreduceBusFactor(int ranks) { return collective::busbwFactor(collective::Op::kAllreduce, ranks); }

double algBandwidth(uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds : 0;
}

double busBandwidth(uint64_t bytes, double seconds, int ranks) {
  return algBandwidth(bytes, seconds) * allreduceBusFactor(ranks);
}

double modelSeconds(BenchAlgo algo, int ranks, double bytes, double alpha, double beta, uint64_t chunk_bytes) {
  switch (algo) {
    case BenchAlgo::kRing:
    case BenchAlgo::kGloo:
    case BenchAlgo::kMultipath:  // one link's alpha-beta: the ring's time, what multipath must beat
      return collective::ringAllreduceTime(ranks, bytes, alpha, beta);
    case BenchAlgo::kTree:
      return collective::treeAllreduceTime(ranks, static_cast<int64_t>(bytes), alpha, beta,
                                           collective::TreeLinks::kSharedNic,
                                           static_cast<int64_t>(chunk_bytes));
    case BenchAlgo::kGlooBcube:
      return collective::bcubeAllreduceTime(ranks, bytes, alpha, beta);
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
