// collector/src/cpu_usage.h — the traced process's CPU use, read by the writer thread and once
// by the call that activates the collector (never on the hot path): why a rank is late (issue 24)
// needs its CPU time against wall time, its context switches and the cores its host gives it
// (docs/schema.md, cpu_sample_data).
#pragma once

#include <cstdint>

#include "ringside/storage/records.h"

namespace ringside::collector::detail {

// User + system time of every thread of the process and its context switches so far
// (getrusage(RUSAGE_SELF)), and the main thread's time waiting for a core (/proc/self/schedstat;
// kNone without it). False when getrusage fails (nothing is stored then).
bool readCpuUsage(int64_t now_ns, storage::CpuSampleRow* out);

// The cores this process may run on (sched_getaffinity) and the host's online cores; -1 unknown.
struct CpuCores {
  int allowed = -1;
  int online = -1;
};
CpuCores readCpuCores();

// How often the writer samples: often enough for steps of tens of milliseconds, 100 rows a
// second at most.
inline constexpr int64_t kCpuSampleIntervalNs = 10 * 1000 * 1000;

}  // namespace ringside::collector::detail
