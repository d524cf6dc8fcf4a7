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
// collective::busbwFactor(Op::kAllreduce, n).
double allreduceBusFactor(int ranks);

// algbw = bytes / seconds; busbw = algbw * allreduceBusFactor(ranks). In
// bytes per second; 0 when seconds <= 0.
double algBandwidth(uint64_t bytes, double seconds);
double busBandwidth(uint64_t bytes, double seconds, int ranks);

// The estimate for one row, from collective/cost_model.h (the model the report's what-if and
// simulate use too): ring, gloo and multipath the ring formula, tree the double binary tree
// with the chunks tree.cpp cuts (chunk_bytes: --chunk, 0 automatic), gloo-bcube the bcube
// formula; -1 for the floor rows.
double modelSeconds(BenchAlgo algo, int ranks, double bytes, double alpha, double beta,
                    uint64_t chunk_bytes = 0);

// α and β from two mean round trips (seconds) measured with
// Communicator::pingPong: α = small_rtt/2; β = (large_rtt/2 - α)/large_bytes,
// never below 0.
double alphaFromPingPong(double small_rtt_s);
double betaFromPingPong(double small_rtt_s, double large_rtt_s, uint64_t small_bytes,
                        uint64_t large_bytes);

}  // namespace ringside::bench
