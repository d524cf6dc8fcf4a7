// ringside/bench/model.h — the α-β (latency-bandwidth) model `ringside bench` prints
// beside each measurement, and the nccl-tests bandwidth conventions.
//
// α is the one-way time of a tiny message (seconds), β the time per byte of
// a large one (seconds/byte), both measured between ranks 0 and 1. Every
// estimate assumes each rank sends one message at a time at β and receives
// one at a time at β (full duplex), and charges nothing for the reduction
// itself: a lower-bound style figure. The derivations are in docs/bench.md.
#pragma once

#include <cstdint>

#include "ringside/bench/settings.h"

namespace ringside::bench {

// nccl-tests' bus-bandwidth factor for all-reduce: 2(n-1)/n (0 for n <= 1),
// analyzer::busbwFactor("allreduce", n).
double allreduceBusFactor(int ranks);

// algbw = bytes / seconds; busbw = algbw * allreduceBusFactor(ranks). In
// bytes per second; 0 when seconds <= 0.
double algBandwidth(uint64_t bytes, double seconds);
double busBandwidth(uint64_t bytes, double seconds, int ranks);

// Ring all-reduce (reduce-scatter then all-gather, n-1 steps each, S/n
// bytes per step): 2(n-1)·α + 2(n-1)/n·S·β.
double ringModelSeconds(int ranks, double bytes, double alpha, double beta);

// Pipelined double binary tree with k chunks per tree (S/2 bytes per tree,
// S/(2k) per chunk, depth d = floor(log2 n)): in every pipeline step a rank
// sends at most one chunk per tree, so a step costs α + 2·(S/2k)·β, and the
// reduce and the broadcast take d + k - 1 steps each:
//   T(k) = 2·(d + k - 1)·(α + S·β/k)
double treeModelSeconds(int ranks, double bytes, double alpha, double beta, int64_t chunks);
// The k >= 1 that minimizes T(k): the integer nearest sqrt((d-1)·S·β/α)
// (1 when d <= 1 or α = 0), checked against its neighbours.
int64_t treeBestChunks(int ranks, double bytes, double alpha, double beta);

// Gloo's BCUBE all-reduce on n = 2^d ranks (recursive halving, then
// doubling): 2·d·α + 2(n-1)/n·S·β; for other n, d = ceil(log2 n).
double bcubeModelSeconds(int ranks, double bytes, double alpha, double beta);

// The estimate for one row: ring and gloo use the ring formula, tree the
// tree formula with its best k, gloo-bcube the bcube formula.
double modelSeconds(BenchAlgo algo, int ranks, double bytes, double alpha, double beta);

// α and β from two mean round trips (seconds) measured with
// Communicator::pingPong: α = small_rtt/2; β = (large_rtt/2 - α)/large_bytes,
// never below 0.
double alphaFromPingPong(double small_rtt_s);
double betaFromPingPong(double small_rtt_s, double large_rtt_s, uint64_t small_bytes,
                        uint64_t large_bytes);

}  // namespace ringside::bench
