// tests/e2e_clock/clock_rate.cpp — LD_PRELOAD shim: this process's CLOCK_MONOTONIC (and
// CLOCK_BOOTTIME) run fast or slow by a known rate, as a host whose oscillator drifts.
//
//   RINGSIDE_TEST_CLOCK_RATE=1.00002     the clocks' rate (20 ppm fast)
//   RINGSIDE_TEST_CLOCK_T0_NS=<ns>       the instant (on the process's own monotonic clock) from
//                                        which they run at that rate: raw = t0 + (real - t0) * rate
//
// Why not libfaketime's "x<rate>": with a rate it rebases CLOCK_MONOTONIC onto its fake wall
// clock (monotonic reads about 1.8e18 ns), which no host does, and from an instant the test
// cannot know; here the truth is exact. The wall clock stays libfaketime's (offset, steps).
#include <dlfcn.h>
#include <time.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace {

using ClockGettime = int (*)(clockid_t, struct timespec*);

struct Scale {
  double rate = 1.0;
  int64_t t0 = 0;
  ClockGettime real = nullptr;
};

Scale& scale() {
  static Scale s = [] {
    Scale v;
    v.real = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
    if (const char* r = std::getenv("RINGSIDE_TEST_CLOCK_RATE")) v.rate = std::strtod(r, nullptr);
    if (const char* t = std::getenv("RINGSIDE_TEST_CLOCK_T0_NS")) v.t0 = std::strtoll(t, nullptr, 10);
    return v;
  }();
  return s;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int clock_gettime(clockid_t id, struct timespec* ts) {
  Scale& s = scale();
  if (s.real == nullptr) return -1;
  const int rc = s.real(id, ts);
  if (rc != 0 || (id != CLOCK_MONOTONIC && id != CLOCK_BOOTTIME) || s.rate == 1.0) return rc;
  const int64_t real = static_cast<int64_t>(ts->tv_sec) * 1000000000 + ts->tv_nsec;
  const int64_t raw = s.t0 + static_cast<int64_t>(std::llround(static_cast<double>(real - s.t0) * s.rate));
  ts->tv_sec = raw / 1000000000;
  ts->tv_nsec = raw % 1000000000;
  return rc;
}
