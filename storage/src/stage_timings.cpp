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

clockid_t cpuClock(StageTimer::Cpu cpu) {
  return cpu == StageTimer::kThreadCpu ? CLOCK_THREAD_CPUTIME_ID : CLOCK_PROCESS_CPUTIME_ID;
}

// The tally of this thread (StageTally), if any.
thread_local StageTally* t_tally = nullptr;

void copyName(std::string_view stage, char (&to)[64]) {
  const size_t n = stage.size() < sizeof to - 1 ? stage.size() : sizeof to - 1;
  std::memcpy(to, stage.data(), n);
  to[n] = '\0';
}

void printLine(const char* stage, double wall, double cpu) {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);  // ru_maxrss: KiB on Linux
  std::fprintf(stderr, "ringside: timing %-14s %8.3f s wall, %8.3f s cpu, peak RSS %ld MiB\n",
               stage, wall, cpu, usage.ru_maxrss / 1024);
}

}  // namespace

bool stageTimingsOn() {
  static const bool on = [] {
    const char* v = std::getenv("RINGSIDE_TIMINGS");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

StageTimer::StageTimer(std::string_view stage, Cpu cpu) : on_(stageTimingsOn()), cpu_(cpu) {
  if (!on_) return;
  copyName(stage, stage_);
  wall0_ = seconds(CLOCK_MONOTONIC);
  cpu0_ = seconds(cpuClock(cpu_));
}


void StageTimer::stop() {
  if (!on_) return;
  on_ = false;
  const double wall = seconds(CLOCK_MONOTONIC) - wall0_;
  const double cpu = seconds(cpuClock(cpu_)) - cpu0_;
  if (t_tally != nullptr && std::strcmp(t_tally->stage_, stage_) == 0) {
    ++t_tally->count_;
    t_tally->wall_ += wall;
    t_tally->cpu_ += cpu;
    return;
  }
  printLine(stage_, wall, cpu);
}

StageTally::StageTally(std::string_view stage, std::string_view label, StageSums* into)
    : into_(into) {
  if (!stageTimingsOn() || t_tally != nullptr) return;
  copyName(stage, stage_);
  copyName(label.empty() ? stage : label, label_);
  active_ = true;
  t_tally = this;
}

StageTally::~StageTally() {
  if (!active_) return;
  t_tally = nullptr;
  if (into_ != nullptr) {
    *into_ = {count_, wall_, cpu_};
    return;
  }
  if (count_ == 0) return;
  char name[96];
  std::snprintf(name, sizeof name, "%s x%ld", label_, count_);
  printLine(name, wall_, cpu_);
}

void StageTally::add(std::string_view stage, const StageSums& sums) {
  if (!stageTimingsOn() || sums.count == 0) return;
  char name[64];
  copyName(stage, name);
  if (t_tally != nullptr && std::strcmp(t_tally->stage_, name) == 0) {
    t_tally->count_ += sums.count;
    t_tally->wall_ += sums.wall;
    t_tally->cpu_ += sums.cpu;
    return;
  }
  char line[96];
  std::snprintf(line, sizeof line, "%s x%ld", name, sums.count);
  printLine(line, sums.wall, sums.cpu);
}

}  // namespace ringside::storage
