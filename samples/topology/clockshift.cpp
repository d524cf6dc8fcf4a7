// samples/topology/clockshift.cpp — libringside_clockshift.so, an LD_PRELOAD library that gives
// the processes of one emulated host (samples/topology/emulate.sh --clocks) a wall clock a few
// milliseconds off and, optionally, a monotonic clock that runs a few ppm fast or slow, with a
// known truth. The hours of monotonic offset come from a time namespace, not from here.
//
//   RINGSIDE_CLOCKSHIFT_WALL_NS    added to CLOCK_REALTIME(_COARSE), gettimeofday() and time()
//   RINGSIDE_CLOCKSHIFT_PPM        rate error of CLOCK_MONOTONIC(_RAW, _COARSE) and
//                                  CLOCK_BOOTTIME: reading m becomes m + (m - origin) * ppm / 1e6
//   RINGSIDE_CLOCKSHIFT_ORIGIN_NS  that origin, a CLOCK_MONOTONIC reading of this host; every
//                                  process of the host gets the same one, so all agree
//
// Why not libfaketime (Debian's faketime 0.9.10): with FAKETIME_DONT_FAKE_MONOTONIC=1 it moves
// time.time() as wanted, but its clock_nanosleep wrapper then fails Python's time.sleep() with
// EINVAL; without it, CLOCK_MONOTONIC becomes the faked wall clock (the time namespace's
// offset is lost) and an "x" rate runs from each process's own start, so processes of one host
// disagree. Sleeps and timers are left alone here: at a few ms and ppm that changes nothing.
#include <dlfcn.h>
#include <sys/time.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>

namespace {

using ClockGettime = int (*)(clockid_t, timespec*);

ClockGettime g_real = nullptr;
int64_t g_wall_ns = 0;
long double g_ppm = 0;
int64_t g_origin_ns = 0;

int64_t envInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::strtoll(v, nullptr, 10) : 0;
}

__attribute__((constructor)) void init() {
  g_real = reinterpret_cast<ClockGettime>(dlsym(RTLD_NEXT, "clock_gettime"));
  g_wall_ns = envInt("RINGSIDE_CLOCKSHIFT_WALL_NS");
  const char* ppm = std::getenv("RINGSIDE_CLOCKSHIFT_PPM");
  g_ppm = ppm != nullptr ? std::strtold(ppm, nullptr) : 0;
  g_origin_ns = envInt("RINGSIDE_CLOCKSHIFT_ORIGIN_NS");
}

int64_t toNs(const timespec& ts) { return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec; }

timespec fromNs(int64_t ns) {
  timespec ts{};
  ts.tv_sec = ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1000000000;
    ts.tv_sec -= 1;
  }
  return ts;
}

int realClock(clockid_t id, timespec* ts) {
  if (g_real == nullptr) init();  // called before our constructor ran (another library's)
  return g_real(id, ts);
}

int64_t shifted(clockid_t id, int64_t ns) {
  switch (id) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
      return ns + g_wall_ns;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_RAW:
    case CLOCK_MONOTONIC_COARSE:
    case CLOCK_BOOTTIME:
      if (g_ppm == 0) return ns;
      return ns + static_cast<int64_t>(static_cast<long double>(ns - g_origin_ns) * g_ppm / 1e6L);
    default:
      return ns;
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) int clock_gettime(clockid_t id, timespec* ts) noexcept {
  int rc = realClock(id, ts);
  if (rc == 0) *ts = fromNs(shifted(id, toNs(*ts)));
  return rc;
}

__attribute__((visibility("default"))) int gettimeofday(timeval* tv, void* /*tz*/) noexcept {
  timespec ts{};
  int rc = clock_gettime(CLOCK_REALTIME, &ts);
  if (rc == 0) {  // glibc declares tv nonnull
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
  }
  return rc;
}

__attribute__((visibility("default"))) time_t time(time_t* out) noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  if (out != nullptr) *out = ts.tv_sec;
  return ts.tv_sec;
}

}  // extern "C"
