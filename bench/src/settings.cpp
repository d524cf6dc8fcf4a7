#include "ringside/bench/settings.h"

namespace ringside::bench {

const char* benchAlgoName(BenchAlgo algo) {
  switch (algo) {
    case BenchAlgo::kRing: return "ring";
    case BenchAlgo::kTree: return "tree";
    case BenchAlgo::kMultipath: return "multipath";
    case BenchAlgo::kGloo: return "gloo";
    case BenchAlgo::kGlooBcube: return "gloo-bcube";
    case BenchAlgo::kFloor: return "floor";
    case BenchAlgo::kFloorTcp: return "floor-tcp";
  }
  return "?";
}

bool isGlooAlgo(BenchAlgo algo) { return algo == BenchAlgo::kGloo || algo == BenchAlgo::kGlooBcube; }
bool isFloorAlgo(BenchAlgo algo) { return algo == BenchAlgo::kFloor || algo == BenchAlgo::kFloorTcp; }

}  // namespace ringside::bench
