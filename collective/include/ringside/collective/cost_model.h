// ringside/collective/cost_model.h — the alpha-beta cost of the all-reduces ringside knows, and
// the bus-bandwidth factors: the one model `ringside bench`, the report's what-if and algorithm
// rule, and `simulate` all use (docs/bench.md derives each formula).
//
// alpha is the one-way time of a tiny message, beta the time per byte of a large one, in any
// time unit (seconds or nanoseconds); a result is in that unit. Every estimate assumes a rank
// sends one message at a time at beta and receives one at a time (full duplex), and charges
// nothing for the reduction itself: a lower-bound style figure.
#pragma once

#include <cstdint>
#include <string_view>

#include "ringside/collective/names.h"

namespace ringside::collective {

// Smallest d with 2^d >= n (0 for n <= 1), and largest d with 2^d <= n (0 for n <= 1).
int ceilLog2(int n);
int floorLog2(int n);

// nccl-tests' bus-bandwidth factor, busbw = algbw x factor: allreduce 2(n-1)/n; reduce-scatter,
// all-gather(v), all-to-all(v) (n-1)/n; barrier 0; broadcast, reduce and everything else 1.
// 0 for n <= 0. The string form takes a trace's op name.
double busbwFactor(Op op, int n);
double busbwFactor(std::string_view op, int n);

// Latency steps of one call (how many alphas the fitted model charges): allreduce 2(n-1), or
// 2 ceil(log2 n) on a tree; reduce-scatter, all-gather(v), all-to-all(v) n-1; broadcast, reduce,
// barrier ceil(log2 n); anything else 1; 0 for n <= 1.
int modelSteps(Op op, bool tree, int n);

// Ring all-reduce (reduce-scatter then all-gather, n-1 steps each, S/n bytes per step):
// 2(n-1) alpha + 2(n-1)/n S beta.
double ringAllreduceTime(int n, double bytes, double alpha, double beta);

// The double binary tree reference/src/tree.cpp runs: two trees of depth d = ceil(log2 n) (the
// trees reference/src/topology.cpp builds), each carrying half the buffer in k chunks of c bytes
// (tree.cpp's rule: treeChunkBytes, treeChunks), the reduce up and the broadcast down pipelined.
// What a step costs depends on the links under a rank's tree edges:
enum class TreeLinks {
  // Every edge its own link (a mesh of cables, one rank a host; simulate's pipeline bound, which
  // it caps by the cables the trees share): one chunk a step on each link, the broadcast of a
  // chunk overlapping the reduce of the next: (2d + k - 1)(alpha + c beta).
  kPerPeer,
  // A rank's edges share one link (ranks on one host, or one NIC to a switch: bench's ranks and,
  // by default, a recorded job's): both trees' chunks go through it, S/k bytes a step, and the
  // reduce and the broadcast take d + k - 1 steps each: 2(d + k - 1)(alpha + S beta / k).
  kSharedNic,
};
double treeAllreduceTime(int n, int64_t bytes, double alpha, double beta, TreeLinks links,
                         int64_t chunk_bytes = 0);
// The kSharedNic formula for a given k (bench's unit tests take k as given).
double treeAllreduceTime(int n, double bytes, double alpha, double beta, int64_t chunks);
// tree.cpp's chunk: chunk_bytes when given (bench --chunk), else an eighth of the tree's half
// held to [32 KiB, 256 KiB]; never more than the half. And the chunks of one half (at least 1).
inline constexpr int64_t kTreeChunkDivisor = 8;
inline constexpr int64_t kTreeChunkMinBytes = int64_t{32} << 10;
inline constexpr int64_t kTreeChunkMaxBytes = int64_t{256} << 10;
int64_t treeChunkBytes(int64_t bytes, int64_t chunk_bytes = 0);
int64_t treeChunks(int64_t bytes, int64_t chunk_bytes = 0);

// Gloo's BCUBE all-reduce on n = 2^d ranks (recursive halving, then doubling):
// 2 d alpha + 2(n-1)/n S beta; for other n, d = ceil(log2 n).
double bcubeAllreduceTime(int n, double bytes, double alpha, double beta);

// Multipath: every ring runs the pipelined ring on its share of the buffer, all at once: the
// ring's latency terms, its bandwidth term over the rings' total rate (rate_ratio: the rings'
// total rate over the plain ring's, from the planner). -1 when rate_ratio <= 0 (no plan).
double multipathAllreduceTime(int n, double bytes, double alpha, double beta, double rate_ratio);

}  // namespace ringside::collective
