// perf_flight: the flight recorder's cost on the hot path — ns per collective (enter + leave)
// and per message (post + done) on one thread, with the ring file mapped as in a traced job, and
// the ring's memory. Prints figures; run by hand (docs/flight-recorder.md).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringside/collector/collector.h"
#include "ringside/collector/flight.h"
#include "ringside/storage/flight_ring.h"

namespace col = ringside::collector;
namespace flight = ringside::collector::flight;

namespace {

// The best of five rounds (the machine is shared: the best round is the cost, the rest is noise).
template <typename Body>
double nsPer(long n, Body body) {
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) body(i);
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(n));
  }
  return best;
}

}  // namespace

int main() {
  char tmpl[] = "/tmp/ringside-flight-bench-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (dir == nullptr) return 1;
  setenv("RINGSIDE_DIR", dir, 1);
  if (!col::activate()) {
    std::fprintf(stderr, "perf_flight: the collector did not activate\n");
    return 1;
  }
  static int key = 0;
  const int32_t comm = col::registerComm(&key, 0, 4, "gloo");
  const long n = 1000000;
  const double call_ns = nsPer(n, [&](long i) {
    const int64_t t = col::nowNs();
    const flight::CallHandle outer = flight::current();
    const flight::CallHandle h = flight::enter(comm, i, col::Op::kAllreduce, col::Library::kGloo,
                                               col::DType::kF32, 4096, 1024, -1, t);
    flight::leave(h, t + 1, true, nullptr, outer);
  });
  const double clock_ns = nsPer(n, [](long) { (void)col::nowNs(); });
  const double msg_ns = nsPer(n, [&](long i) {
    const uint64_t k = static_cast<uint64_t>(i & 7);
    flight::post(comm, k, 1, col::Side::kSend, 4096, 1);
    flight::done(k, 1, col::Side::kSend, 2);
  });
  std::printf("flight ring: %zu bytes per process (%d communicators x %d calls, %d messages, %d dumps)\n",
              ringside::storage::flight::kFileBytes, ringside::storage::flight::kComms,
              ringside::storage::flight::kCallsPerComm, ringside::storage::flight::kMessages,
              ringside::storage::flight::kDumps);
  std::printf("per collective (enter + leave, no clock reads): %.1f ns\n", call_ns);
  std::printf("per message (post + done): %.1f ns\n", msg_ns);
  std::printf("one clock read (for scale): %.1f ns\n", clock_ns);
  col::shutdown();
  const std::string rm = std::string("rm -rf ") + dir;
  return std::system(rm.c_str()) == 0 ? 0 : 1;
}
