// The process's CPU use and cores (cpu_usage.h).
#include "cpu_usage.h"

#include <fcntl.h>
#include <sched.h>

#include <cstdio>
#include <sys/resource.h>
#include <unistd.h>

namespace ringside::collector::detail {

bool readCpuUsage(int64_t now_ns, storage::CpuSampleRow* out) {
  struct rusage ru;
  if (::getrusage(RUSAGE_SELF, &ru) != 0) return false;
  auto ns = [](const timeval& tv) {
    return static_cast<int64_t>(tv.tv_sec) * 1000000000 + static_cast<int64_t>(tv.tv_usec) * 1000;
  };
  out->t_ns = now_ns;
  out->cpu_ns = ns(ru.ru_utime) + ns(ru.ru_stime);
  out->voluntary = ru.ru_nvcsw;
  out->involuntary = ru.ru_nivcsw;
  // "time on the cpu, time waiting on a runqueue, timeslices" of the main thread, in ns.
  out->run_delay_ns = storage::kNone;
  const int fd = ::open("/proc/self/schedstat", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[128];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    long long run = 0, delay = 0;
    if (n > 0) {
      buf[n] = '\0';
      if (std::sscanf(buf, "%lld %lld", &run, &delay) == 2 && delay >= 0) out->run_delay_ns = delay;
    }
  }
  return true;
}

CpuCores readCpuCores() {
  CpuCores c;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) c.allowed = CPU_COUNT(&set);
  const long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  if (online > 0) c.online = static_cast<int>(online);
  return c;
}

}  // namespace ringside::collector::detail
