// perf_emit: the floor of the hot path — ns per collector::emit() on one
// thread and on two, with the writer thread draining as in a traced job.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "ringside/collector/collector.h"

namespace col = ringside::collector;

namespace {

// Each thread warms up (its first event allocates its ring), then times a
// burst that fits in its ring. Returns the slowest thread's ns per event.
double nsPerEmit(int threads, long per_thread) {
  std::vector<double> ns(static_cast<size_t>(threads));
  auto body = [per_thread, &ns](int t) {
    col::Event e;
    e.kind = col::EventKind::kCollective;
    e.op = static_cast<uint8_t>(col::Op::kAllreduce);
    e.id = col::newCollectiveId();
    col::emit(e);
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < per_thread; ++i) {
      e.t0 = col::nowNs();
      e.id = col::newCollectiveId();
      e.key = static_cast<uint64_t>(i);
      col::emit(e);
    }
    auto t1 = std::chrono::steady_clock::now();
    ns[static_cast<size_t>(t)] = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(per_thread);
  };
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
  double worst = 0;
  for (double x : ns) worst = std::max(worst, x);
  return worst;
}

double nsPerClockRead(long n) {
  auto t0 = std::chrono::steady_clock::now();
  int64_t sink = 0;
  for (long i = 0; i < n; ++i) sink += col::nowNs();
  auto t1 = std::chrono::steady_clock::now();
  if (sink == 42) std::puts("");
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n);
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/ringside-emit-bench-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) return 1;
  setenv("RINGSIDE_DIR", dir, 1);
  if (!col::activate()) {
    std::fprintf(stderr, "perf_emit: collector did not activate\n");
    return 1;
  }
  col::setIdentity(0, 1, "bench");
  std::printf("clock read (CLOCK_MONOTONIC)    %6.1f ns\n", nsPerClockRead(2000000));
  // Bursts small enough for the rings, with pauses so the writer keeps up.
  double best1 = 1e9, best2 = 1e9;
  for (int round = 0; round < 5; ++round) {
    best1 = std::min(best1, nsPerEmit(1, 8000));
    usleep(30000);
    best2 = std::min(best2, nsPerEmit(2, 8000));
    usleep(30000);
  }
  std::printf("emit, 1 thread (clock + record) %6.1f ns/event\n", best1);
  std::printf("emit, 2 threads                 %6.1f ns/event per thread\n", best2);
  col::shutdown();
  auto c = col::counters();
  std::printf("events emitted %llu, recorded %llu, dropped %llu (rank file in %s)\n",
              static_cast<unsigned long long>(c.emitted), static_cast<unsigned long long>(c.recorded),
              static_cast<unsigned long long>(c.dropped), dir);
  return 0;
}
