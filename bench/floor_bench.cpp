// floor_bench: the floor that the data itself sets for an all-reduce of S bytes
// on n ranks sharing one host over loopback TCP, from this machine's measured
// copy and reduction speeds.
//
// Ring all-reduce moves 2(n-1)/n * S bytes out of and into every rank. Over
// loopback each byte moved is copied twice by the kernel (sender's buffer into
// the socket, socket into the receiver's buffer), and the reduce-scatter half
// is also reduced once (read two streams, write one). All n ranks share the
// host's cores, so
//   floor = n * [ 2 * 2(n-1)/n * S / copy_rate  +  (n-1)/n * S / reduce_rate ] / cores
// (rates per core, for buffers far larger than the caches).
// A model with cold-buffer rates: it overstates the copies of a ring that works
// in cache-sized chunks. `ringside bench --algo ...,floor` measures the same
// copies and reductions in the ring's order, in the same run as the ring
// (docs/bench.md, "The floor row"); that is the floor the ring is judged by.
//   floor_bench [--ranks N] [--bytes S] [--cores C]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "ringside/reference/types.h"

namespace {

double bestSeconds(int reps, auto&& fn) {
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 4;
  double bytes = 64.0 * 1024 * 1024;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--ranks") == 0) n = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--bytes") == 0) bytes = std::atof(argv[i + 1]);
    else if (std::strcmp(argv[i], "--cores") == 0) cores = std::atoi(argv[i + 1]);
  }
  if (n < 2 || cores < 1 || bytes <= 0) {
    std::fprintf(stderr, "usage: floor_bench [--ranks N>=2] [--bytes S] [--cores C]\n");
    return 2;
  }
  const size_t len = 64u << 20;  // far larger than the caches
  std::vector<char> a(len, 1), b(len, 2);
  std::vector<float> x(len / 4, 1.0f), y(len / 4, 2.0f);
  double copy_s = bestSeconds(5, [&] { std::memcpy(b.data(), a.data(), len); });
  double reduce_s = bestSeconds(5, [&] {
    ringside::reference::reduceInto(x.data(), y.data(), x.size(), ringside::collector::DType::kF32,
                                    ringside::collector::ReduceOp::kSum);
  });
  double copy_rate = static_cast<double>(len) / copy_s;      // bytes/s per core
  double reduce_rate = static_cast<double>(len) / reduce_s;  // bytes of output/s per core
  double moved = 2.0 * (n - 1) / n * bytes;                  // per rank, each way
  double per_rank = 2.0 * moved / copy_rate + (n - 1.0) / n * bytes / reduce_rate;
  double floor_s = n * per_rank / cores;
  std::printf("memcpy %.2f GB/s per core, f32 sum-reduce %.2f GB/s per core (64 MiB buffers)\n",
              copy_rate / 1e9, reduce_rate / 1e9);
  std::printf("ring all-reduce of %.0f MiB on %d ranks sharing %d core(s): floor %.1f ms "
              "(busbw ceiling %.2f GB/s)\n",
              bytes / 1048576, n, cores, floor_s * 1e3, moved / floor_s / 1e9);
  return 0;
}
