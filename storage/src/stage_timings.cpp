// storage/src/stage_timings.cpp — RINGSIDE_TIMINGS stage lines (stage_timings.h).
#include "ringside/storage/stage_timings.h"

#include <sys/resource.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ringside::storage {
namespace {

double seconds(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

bool stageTimingsOn() {
  static const bool on = [] {
    const char* v = std::getenv("RINGSIDE_TIMINGS");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

StageTimer::StageTimer(std::string_view stage) : on_(stageTimingsOn()) {
  if (!on_) return;
  const size_t n = stage.size() < sizeof stage_ - 1 ? stage.size() : sizeof stage_ - 1;
  std::memcpy(stage_, stage.data(), n);
  wall0_ = seconds(CLOCK_MONOTONIC);
  cpu0_ = seconds(CLOCK_PROCESS_CPUTIME_ID);
}

void StageTimer::stop() {
  if (!on_) return;
  on_ = false;
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: KiB on Linux
  std::fprintf(stderr, "ringside: timing %-14s %8.3f s wall, %8.3f s cpu, peak RSS %ld MiB\n",
               stage_, seconds(CLOCK_MONOTONIC) - wall0_, seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0_,
               usage.ru_maxrss / 1024);
}

}  // namespace ringside::storage
