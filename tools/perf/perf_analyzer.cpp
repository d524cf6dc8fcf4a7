// perf_analyzer: analyze() time and peak memory on a large synthetic trace.
//
// Generates (in a child process, so its memory is not counted) a trace of
// --collectives collective rows and --transfers transfer rows: reference ring
// all-reduces on --ranks ranks, every rank sending to rank+1 in reduce-scatter
// and all-gather steps; writes it with storage::RankWriter and merges it with
// storage::mergeRankFiles into /tmp. Then times analyze() and prints the time
// and the peak RSS (getrusage) of this process; of it, the largest anonymous part seen (heap:
// what analyze() allocates, sampled at each progress call) and the mapped trace (file pages,
// clean and evictable: readers map the file).
//   perf_analyzer [--transfers N] [--collectives N] [--ranks R] [--bins B] [--keep]
//   perf_analyzer --trace PATH   (analyze an existing trace, e.g. one kept by --keep)
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/summary.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"
#include "ringside/storage/trace_reader.h"

namespace {

using Clock = std::chrono::steady_clock;
using ringside::storage::CollectiveRow;
using ringside::storage::TransferRow;

// The process's resident anonymous and file-backed memory now (/proc/self/status), in KiB.
std::pair<long, long> residentKiB() {
  long anon = 0, file = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      std::sscanf(line, "RssAnon: %ld", &anon);
      std::sscanf(line, "RssFile: %ld", &file);
    }
    std::fclose(f);
  }
  return {anon, file};
}

double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

int generate(const std::string& dir, const std::string& trace, int64_t transfers,
             int64_t collectives, int ranks) {
  const int64_t instances = std::max<int64_t>(1, collectives / ranks);
  // Sends per rank per instance: half reduce-scatter, half all-gather.
  const int64_t sends = std::max<int64_t>(2, transfers / (instances * ranks));
  const int64_t half = sends / 2;
  const int64_t bytes = 1 << 20;
  const int64_t chunk = bytes / std::max<int64_t>(1, sends);
  std::vector<std::string> inputs;
  for (int r = 0; r < ranks; ++r) {
    std::string file = dir + "/rank-" + std::to_string(r) + ".sqlite";
    std::string error;
    auto w = ringside::storage::RankWriter::create(file, &error);
    if (!w) {
      std::fprintf(stderr, "perf_analyzer: %s\n", error.c_str());
      return 1;
    }
    ringside::storage::RankInfo info;
    info.rank = r;
    info.world_size = ranks;
    info.local_rank = r;
    info.host = "bench";
    info.pid = 1000 + r;
    info.launcher = "ringside";
    info.identity_source = "env";
    w->setRank(info);
    int64_t rows = 0;
    w->begin();
    for (int64_t i = 0; i < instances; ++i) {
      int64_t t0 = i * 100000 + (r * 37 + i * 13) % 2000;  // a little arrival skew
      CollectiveRow c;
      c.id = i + 1;
      c.rank = r;
      c.comm = "world";
      c.seq = i;
      c.op = "allreduce";
      c.library = "ringside-ring";
      c.bytes = bytes;
      c.count = bytes / 4;
      c.dtype = "f32";
      c.reduce_op = "sum";
      c.start_ns = t0;
      c.end_ns = i * 100000 + 2000 + sends * 1000 + 500;
      w->addCollective(c);
      for (int64_t s = 0; s < sends; ++s) {
        TransferRow t;
        t.collective_id = i + 1;
        t.src_rank = r;
        t.dst_rank = (r + 1) % ranks;
        t.side = "send";
        t.bytes = chunk;
        t.start_ns = i * 100000 + 2000 + s * 1000;
        t.end_ns = t.start_ns + 700 + (r == 0 ? 200 : 0);
        bool rs = s < half;
        t.phase = rs ? "reduce-scatter" : "all-gather";
        t.step = static_cast<int32_t>(rs ? s : s - half);
        t.chunk = 0;
        w->addTransfer(t);
      }
      rows += 1 + sends;
      if (rows >= 200000) {
        w->commit();
        w->begin();
        rows = 0;
      }
    }
    if (!w->commit() || !w->setMeta("end_state", "clean") || !w->close()) {
      std::fprintf(stderr, "perf_analyzer: %s\n", w->error().c_str());
      return 1;
    }
    inputs.push_back(file);
  }
  ringside::storage::MergeOptions options;
  options.inputs = inputs;
  options.output = trace;
  options.overwrite = true;
  ringside::storage::MergeResult result = ringside::storage::mergeRankFiles(options);
  if (!result.ok) {
    std::fprintf(stderr, "perf_analyzer: merge: %s\n", result.error.c_str());
    return 1;
  }
  for (const std::string& file : inputs) std::filesystem::remove(file);
  return 0;
}

// --summary: summarize() alone (what `merge` and `record` print after a merge).
int timeSummary(ringside::storage::TraceReader& reader) {
  ringside::analyzer::Summary summary;
  std::string error;
  auto t0 = Clock::now();
  if (!ringside::analyzer::summarize(reader, &summary, &error)) {
    std::fprintf(stderr, "perf_analyzer: summarize: %s\n", error.c_str());
    return 1;
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("summarize: %zu links, %zu ranks in %.2f s; peak RSS %.0f MiB\n", summary.links.size(),
              summary.ranks.size(), seconds(t0), static_cast<double>(usage.ru_maxrss) / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t transfers = 10000000, collectives = 1000000;
  int ranks = 4, bins = 100;
  bool keep = false, summary_only = false;
  std::string existing;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "perf_analyzer: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--transfers") transfers = std::atoll(value());
    else if (arg == "--collectives") collectives = std::atoll(value());
    else if (arg == "--ranks") ranks = std::atoi(value());
    else if (arg == "--bins") bins = std::atoi(value());
    else if (arg == "--keep") keep = true;
    else if (arg == "--trace") existing = value();
    else if (arg == "--summary") summary_only = true;
    else {
      std::fprintf(stderr,
                   "usage: perf_analyzer [--transfers N] [--collectives N] [--ranks R] "
                   "[--bins B] [--keep] | --trace PATH [--summary]\n");
      return 2;
    }
  }
  if (transfers < 1 || collectives < 1 || ranks < 2) {
    std::fprintf(stderr, "perf_analyzer: bad sizes\n");
    return 2;
  }
  std::string dir, trace = existing;
  if (existing.empty()) {
    char pattern[] = "/tmp/ringside-analyzer-bench-XXXXXX";
    dir = mkdtemp(pattern);
    trace = dir + "/trace.sqlite";
    std::printf("generating %lld collective rows, ~%lld transfer rows on %d ranks into %s ...\n",
                static_cast<long long>(collectives), static_cast<long long>(transfers), ranks,
                trace.c_str());
    std::fflush(stdout);
    auto t_gen = Clock::now();
    pid_t child = fork();
    if (child == 0) _exit(generate(dir, trace, transfers, collectives, ranks));
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
    std::printf("generated in %.1f s\n", seconds(t_gen));
  }

  std::string error;
  auto t_open = Clock::now();
  auto reader = ringside::storage::TraceReader::open(trace, &error);
  if (!reader) {
    std::fprintf(stderr, "perf_analyzer: %s\n", error.c_str());
    return 1;
  }
  std::printf("opened in %.2f s\n", seconds(t_open));
  if (summary_only) return timeSummary(*reader);
  ringside::analyzer::AnalysisOptions options;
  options.bins = bins;
  long peak_anon = 0, peak_file = 0;
  auto sample = [&] {
    auto [anon, file] = residentKiB();
    peak_anon = std::max(peak_anon, anon);
    peak_file = std::max(peak_file, file);
  };
  options.progress = [&](double) { sample(); };
  ringside::analyzer::Analysis analysis;
  auto t0 = Clock::now();
  if (!ringside::analyzer::analyze(*reader, options, &analysis, &error)) {
    std::fprintf(stderr, "perf_analyzer: analyze: %s\n", error.c_str());
    return 1;
  }
  double took = seconds(t0);
  sample();
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("analyze: %lld transfers, %zu instances, %zu phases, %zu links in %.2f s; "
              "peak RSS %.0f MiB (sampled: anonymous %.0f MiB, mapped file %.0f MiB)\n",
              static_cast<long long>(analysis.transfers), analysis.collectives.size(),
              analysis.phases.size(), analysis.links.size(), took,
              static_cast<double>(usage.ru_maxrss) / 1024.0,
              static_cast<double>(peak_anon) / 1024.0, static_cast<double>(peak_file) / 1024.0);
  reader.reset();
  if (existing.empty() && !keep) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  } else if (existing.empty()) {
    std::printf("kept %s\n", trace.c_str());
  }
  return 0;
}
