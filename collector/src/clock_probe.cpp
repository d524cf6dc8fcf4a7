// collector/src/clock_probe.cpp — see clock_probe.h.
#include "clock_probe.h"

#include <time.h>

#include <climits>
#include <cstdio>
#include <cstring>

namespace ringside::collector::detail {

storage::ClockAnchorRow takeAnchor() {
  storage::ClockAnchorRow best;
  best.spread_ns = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    timespec a{}, w{}, b{};
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &w);
    clock_gettime(CLOCK_MONOTONIC, &b);
    const int64_t t0 = static_cast<int64_t>(a.tv_sec) * 1000000000 + a.tv_nsec;
    const int64_t t1 = static_cast<int64_t>(b.tv_sec) * 1000000000 + b.tv_nsec;
    const int64_t spread = (t1 - t0) / 2;
    if (spread < best.spread_ns) {
      best.clock_ns = t0 + spread;
      best.unix_ns = static_cast<int64_t>(w.tv_sec) * 1000000000 + w.tv_nsec;
      best.spread_ns = spread;
    }
  }
  return best;
}

std::string readBootId() {
  char buf[64] = {};
  FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "re");
  if (f == nullptr) return {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string id(buf, n);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

int64_t readTimensOffsetNs() {
  FILE* f = std::fopen("/proc/self/timens_offsets", "re");
  if (f == nullptr) return 0;
  char line[128];
  int64_t out = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    char name[32] = {};
    long long sec = 0, nsec = 0;
    if (std::sscanf(line, "%31s %lld %lld", name, &sec, &nsec) == 3 &&
        std::strcmp(name, "monotonic") == 0) {
      out = static_cast<int64_t>(sec) * 1000000000 + nsec;
    }
  }
  std::fclose(f);
  return out;
}

}  // namespace ringside::collector::detail
