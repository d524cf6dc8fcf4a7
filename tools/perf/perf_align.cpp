// perf_align: clock alignment (align::realignTrace) time, peak memory and accuracy on a large
// synthetic multi-host trace with known clocks.
//
// Generates (in a child process, so its memory is not counted) --ranks ranks on --hosts hosts,
// each host's clock hours off the first's and drifting by up to 4 ppm, running ring all-reduces
// (--calls of them) whose messages total --messages matched messages (each recorded on both
// sides: two transfer rows per message); writes the rank files with storage::RankWriter and
// merges them (without alignment). Then fits and stores the clock model, and prints its time,
// the peak RSS (getrusage) and the error of every domain against the truth.
//   perf_align [--ranks 1024] [--hosts 128] [--messages 10000000] [--calls 200] [--keep]
//   perf_align --trace PATH   (a trace kept by --keep)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ringside/align/align.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Setup {
  int ranks = 1024;
  int hosts = 128;
  int64_t messages = 10'000'000;
  int64_t calls = 200;
};

constexpr int64_t kHourNs = 3'600'000'000'000;

int64_t hostOffset(int h) { return (h + 1) * kHourNs + h * 7'919'113; }
double hostRate(int h) { return ((h % 9) - 4) * 1e-6; }  // -4 .. +4 ppm
int64_t raw(int h, int64_t true_ns) {
  return hostOffset(h) + true_ns + static_cast<int64_t>(std::llround(static_cast<double>(true_ns) * hostRate(h)));
}

int generate(const std::string& dir, const std::string& trace, const Setup& s) {
  const int per_host = std::max(1, s.ranks / s.hosts);
  // Messages per rank per call (sends; each is also a receive on the next rank).
  const int64_t sends = std::max<int64_t>(1, s.messages / (s.calls * s.ranks));
  const int64_t period = 2'000'000 + sends * 2'000;
  std::vector<std::string> inputs;
  for (int r = 0; r < s.ranks; ++r) {
    const int h = r / per_host;
    const int next = (r + 1) % s.ranks;
    const int prev = (r + s.ranks - 1) % s.ranks;
    const std::string file = dir + "/rank-" + std::to_string(r) + ".sqlite";
    std::string error;
    auto w = ringside::storage::RankWriter::create(file, &error);
    if (!w) {
      std::fprintf(stderr, "perf_align: %s\n", error.c_str());
      return 1;
    }
    ringside::storage::RankInfo info;
    info.rank = r;
    info.world_size = s.ranks;
    info.host = "node" + std::to_string(h);
    info.boot_id = "boot-" + std::to_string(h);
    info.pid = 1000 + r;
    info.start_ns = raw(h, 0);
    info.start_unix_ns = 1'700'000'000'000'000'000 + (h % 7) * 1'000'000;  // wall clocks off by ms
    w->setRank(info);
    w->begin();
    w->addClockAnchor({info.start_ns, info.start_unix_ns, 20});
    int64_t rows = 0;
    for (int64_t i = 0; i < s.calls; ++i) {
      const int64_t t0 = 1'000'000'000 + i * period;
      auto jitter = [&](int rank) { return ((rank * 7919 + i * 104729) % 300) * 1000; };
      ringside::storage::CollectiveRow c;
      c.id = i + 1;
      c.rank = r;
      c.comm = "world";
      c.seq = i;
      c.op = "allreduce";
      c.library = "ringside-ring";
      c.bytes = sends * 4096;
      c.count = c.bytes / 4;
      c.start_ns = raw(h, t0 + jitter(r));
      const int64_t begin = t0 + 300'000;  // every rank has entered
      c.end_ns = raw(h, begin + sends * 2'000 + 50'000);
      w->addCollective(c);
      for (int64_t k = 0; k < sends; ++k) {
        ringside::storage::TransferRow t;
        t.collective_id = c.id;
        t.bytes = 4096;
        t.slot = i;
        t.src_rank = r;
        t.dst_rank = next;
        t.side = "send";
        t.start_ns = raw(h, begin + k * 2'000);
        t.end_ns = raw(h, begin + k * 2'000 + 800);
        w->addTransfer(t);
        const int hp = prev / per_host;
        (void)hp;
        t.src_rank = prev;
        t.dst_rank = r;
        t.side = "recv";
        t.start_ns = raw(h, begin + k * 2'000 - 500);
        t.end_ns = raw(h, begin + k * 2'000 + 1'500);  // 1.5 us after the sender posted it
        w->addTransfer(t);
      }
      rows += 1 + 2 * sends;
      if (rows >= 200000) {
        w->commit();
        w->begin();
        rows = 0;
      }
    }
    if (!w->commit() || !w->setMeta("end_state", "clean") || !w->close()) {
      std::fprintf(stderr, "perf_align: %s\n", w->error().c_str());
      return 1;
    }
    inputs.push_back(file);
  }
  ringside::storage::MergeOptions options;
  options.inputs = inputs;
  options.output = trace;
  options.overwrite = true;
  const ringside::storage::MergeResult result = ringside::storage::mergeRankFiles(options);
  if (!result.ok) {
    std::fprintf(stderr, "perf_align: merge: %s\n", result.error.c_str());
    return 1;
  }
  for (const std::string& file : inputs) std::filesystem::remove(file);
  std::printf("generated: %d ranks on %d hosts, %lld calls, %lld transfer rows\n", s.ranks, s.hosts,
              static_cast<long long>(result.collectives), static_cast<long long>(result.transfers));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Setup s;
  bool keep = false;
  std::string existing;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "perf_align: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--ranks") s.ranks = std::atoi(value());
    else if (arg == "--hosts") s.hosts = std::atoi(value());
    else if (arg == "--messages") s.messages = std::atoll(value());
    else if (arg == "--calls") s.calls = std::atoll(value());
    else if (arg == "--keep") keep = true;
    else if (arg == "--trace") existing = value();
    else {
      std::fprintf(stderr,
                   "usage: perf_align [--ranks R] [--hosts H] [--messages N] [--calls C] [--keep] "
                   "| --trace PATH\n");
      return 2;
    }
  }
  if (s.ranks < 2 || s.hosts < 1 || s.hosts > s.ranks || s.calls < 1) {
    std::fprintf(stderr, "perf_align: need 2+ ranks, 1..ranks hosts, 1+ calls\n");
    return 2;
  }
  std::string trace = existing;
  std::string dir;
  if (trace.empty()) {
    char tmpl[] = "/tmp/align-bench-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 1;
    dir = tmpl;
    trace = dir + "/trace.sqlite";
    const auto started = Clock::now();
    const pid_t pid = fork();
    if (pid == 0) _exit(generate(dir, trace, s));
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    std::printf("generate + merge: %.1f s\n",
                std::chrono::duration<double>(Clock::now() - started).count());
  }
  ringside::storage::ClockModel model;
  ringside::align::AlignStats stats;
  std::string error;
  const auto started = Clock::now();
  if (!ringside::align::realignTrace(trace, {}, &model, &stats, &error)) {
    std::fprintf(stderr, "perf_align: %s\n", error.c_str());
    return 1;
  }
  const double total = std::chrono::duration<double>(Clock::now() - started).count();
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("align: %.2f s (reading calls %.2f s, reading and pairing messages %.2f s, fitting "
              "%.2f s, the rest opening and storing), peak RSS %.0f MiB\n",
              total, stats.read_calls_seconds, stats.read_messages_seconds,
              stats.seconds - stats.read_calls_seconds - stats.read_messages_seconds,
              static_cast<double>(ru.ru_maxrss) / 1024.0);
  std::printf("evidence: %lld calls across domains, %lld messages between domains; %s\n",
              static_cast<long long>(stats.instances), static_cast<long long>(stats.messages),
              ringside::align::describeModel(model).c_str());
  if (existing.empty()) {
    // Error against the truth, per domain, at the first call's start.
    std::vector<double> errs;
    const int per_host = std::max(1, s.ranks / s.hosts);
    const ringside::storage::ClockMap map(model);
    for (const auto& d : model.domains) {
      if (d.ranks.empty()) continue;
      const int h = d.ranks.front() / per_host;
      for (int64_t t : {int64_t{1'000'000'000}, 1'000'000'000 + (s.calls - 1) * (2'000'000 + 2'000 * std::max<int64_t>(1, s.messages / (s.calls * s.ranks)))}) {
        const int64_t got = map.map(d.ranks.front(), raw(h, t));
        errs.push_back(std::fabs(static_cast<double>(got - raw(0, t))));
      }
    }
    std::sort(errs.begin(), errs.end());
    std::printf("error against the truth (start and end of each domain): median %.2f us, worst %.2f us\n",
                errs[errs.size() / 2] / 1e3, errs.back() / 1e3);
  }
  if (!keep && !dir.empty()) std::filesystem::remove_all(dir);
  if (keep && !dir.empty()) std::printf("kept: %s\n", trace.c_str());
  return 0;
}
