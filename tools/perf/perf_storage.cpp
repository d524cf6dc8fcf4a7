// tools/perf/perf_storage.cpp — throughput of the trace writer and merger.
//
// Prints rows/s for collective rows and for transfer rows written in batches
// of 1k, 10k and 100k (commit included), then the merge rate for 4 rank files.
// Usage: perf_storage [folder] [rows]   (default: a folder under /tmp, 1000000 rows)
//        perf_storage --merge-ranks N [--rows R] [--folder DIR]
//   the merge alone at scale: N generated rank files (tools/trace_gen, ring all-reduces, about R
//   transfer rows in all, default 2000000) written by a child process, then merged here; prints
//   the phases (probe, copy, indexes), rows/s and this process's peak RSS (memory of the merge).
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"
#include "trace_gen.h"

using namespace ringside::storage;

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds of this process (user + system): steadier than wall time when
// other work shares the machine's cores.
double cpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Timing {
  double wall = -1;
  double cpu = -1;
};

const char* const kOps[] = {"allreduce", "allreduce", "broadcast", "allgather", "reduce_scatter"};
const char* const kPhases[] = {"reduce-scatter", "all-gather"};

// Writes `rows` collective rows (and/or transfer rows) in batches of `batch`.
// Returns seconds spent (wall and CPU), wall < 0 on failure.
Timing writeFile(const std::string& path, int rank, int64_t collectives, int64_t transfers, int64_t batch) {
  std::string err;
  auto w = RankWriter::create(path, &err);
  if (!w) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return {};
  }
  RankInfo info;
  info.rank = rank;
  info.world_size = 4;
  info.host = "bench";
  if (!w->setRank(info)) return {};
  const double t0 = now();
  const double c0 = cpuNow();
  int64_t in_batch = 0;
  bool ok = w->begin();
  auto roll = [&]() {
    if (++in_batch == batch) {
      ok = ok && w->commit() && w->begin();
      in_batch = 0;
    }
  };
  for (int64_t i = 0; i < collectives && ok; ++i) {
    CollectiveRow c;
    c.id = i;
    c.rank = rank;
    c.comm = "world";
    c.seq = i;
    c.op = kOps[i % 5];
    c.library = "gloo";
    c.bytes = 4096 * (i % 64 + 1);
    c.count = 1024 * (i % 64 + 1);
    c.dtype = "f32";
    c.reduce_op = i % 5 < 2 ? "sum" : "";
    c.start_ns = 1'000'000 + i * 1000;
    c.end_ns = c.start_ns + 700;
    c.tid = 1234;
    ok = w->addCollective(c);
    roll();
  }
  for (int64_t i = 0; i < transfers && ok; ++i) {
    TransferRow t;
    t.collective_id = collectives > 0 ? i / 2 % collectives : kNone;
    t.src_rank = i % 2 == 0 ? rank : (rank + 3) % 4;
    t.dst_rank = i % 2 == 0 ? (rank + 1) % 4 : rank;
    t.bytes = 65536;
    t.start_ns = 1'000'000 + i * 500;
    t.end_ns = t.start_ns + 300;
    t.side = i % 2 == 0 ? "send" : "recv";
    t.phase = kPhases[(i / 6) % 2];
    t.step = static_cast<int32_t>(i % 6);
    t.chunk = 0;
    t.slot = i;
    ok = w->addTransfer(t);
    roll();
  }
  ok = ok && w->commit();
  const Timing t{now() - t0, cpuNow() - c0};
  ok = ok && w->setMeta("end_state", "clean") && w->close();
  if (!ok) {
    std::fprintf(stderr, "write failed: %s\n", w->error().c_str());
    return {};
  }
  return t;
}

// perf_storage --merge-ranks N [--rows R] [--folder DIR]
int mergeAtScale(int argc, char** argv) {
  int ranks = 0;
  int64_t rows = 2'000'000;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    if (arg == "--merge-ranks") ranks = std::atoi(argv[i + 1]);
    if (arg == "--rows") rows = std::atoll(argv[i + 1]);
    if (arg == "--folder") dir = argv[i + 1];
  }
  if (ranks < 2 || rows < 1) {
    std::fprintf(stderr, "perf_storage: --merge-ranks N (N >= 2) [--rows R] [--folder DIR]\n");
    return 2;
  }
  const bool own_dir = dir.empty();
  if (own_dir) {
    char tmpl[] = "/tmp/ringside-merge-bench-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    dir = tmpl;
  }
  ringside::gen::GenOptions g;
  g.ranks = ranks;
  g.hosts = std::max(1, ranks / 8);
  // A ring all-reduce is 2(N-1) sends per rank: enough calls for about `rows` transfers.
  g.collectives = std::max<int64_t>(1, rows / (int64_t{ranks} * 2 * (ranks - 1)));
  g.steps = std::min<int64_t>(g.collectives, 4);
  std::vector<std::string> files;
  const double g0 = now();
  // A folder that has the rank files already (a previous run's --folder) is merged as it is.
  const bool have = std::filesystem::exists(dir + "/rank-" + std::to_string(ranks - 1) + ".sqlite");
  const pid_t child = have ? 0 : fork();
  if (!have && child == 0) {
    std::string error;
    if (!ringside::gen::writeRankFiles(g, dir, &files, &error)) {
      std::fprintf(stderr, "perf_storage: %s\n", error.c_str());
      _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  if (!have && (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0)) {
    return 1;
  }
  const double gen_s = now() - g0;
  MergeOptions o;
  for (int r = 0; r < ranks; ++r) o.inputs.push_back(dir + "/rank-" + std::to_string(r) + ".sqlite");
  o.output = dir + "/merged.sqlite";
  o.overwrite = true;
  double t_probed = -1, t_copied = -1;
  const double t0 = now();
  const double c0 = cpuNow();
  o.progress_detail = [&](const MergeProgress& p) {
    if (t_probed < 0) t_probed = now();  // the first call: after the first input's first table
    if (p.input == p.inputs && t_copied < 0) t_copied = now();  // every input copied
  };
  const MergeResult m = mergeRankFiles(o);
  const double dt = now() - t0;
  const double dc = cpuNow() - c0;
  if (!m.ok) {
    std::fprintf(stderr, "merge failed: %s\n", m.error.c_str());
    return 1;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  const double total = static_cast<double>(m.collectives + m.transfers);
  std::printf("merge of %d rank files (%lld calls each, generated in %.1f s): %.0f rows in %.2f s ="
              " %.0f rows/s, %.0f rows/cpu-s (probe %.2f s, copy %.2f s = %.0f rows/s,"
              " indexes+sync %.2f s), peak RSS %.1f MiB\n",
              ranks, static_cast<long long>(g.collectives), gen_s, total, dt, total / dt, total / dc,
              t_probed - t0, t_copied - t_probed, total / (t_copied - t_probed), t0 + dt - t_copied,
              static_cast<double>(ru.ru_maxrss) / 1024.0);
  if (own_dir) std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "--merge-ranks") return mergeAtScale(argc, argv);
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
  } else {
    char tmpl[] = "/tmp/ringside-storage-bench-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    dir = tmpl;
  }
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 1'000'000;
  std::printf("perf_storage: %lld rows per run, files in %s\n", static_cast<long long>(rows), dir.c_str());
  int file_no = 0;
  auto next = [&]() { return dir + "/bench-" + std::to_string(file_no++) + ".sqlite"; };

  for (int64_t batch : {1'000, 10'000, 100'000}) {
    const std::string p1 = next();
    const Timing tc = writeFile(p1, 0, rows, 0, batch);
    const std::string p2 = next();
    const Timing tt = writeFile(p2, 0, 0, rows, batch);
    if (tc.wall < 0 || tt.wall < 0) return 1;
    struct stat sb {};
    ::stat(p1.c_str(), &sb);
    const double n = static_cast<double>(rows);
    std::printf("batch %6lld: collective rows %9.0f rows/s wall, %9.0f rows/cpu-s (%.1f B/row) | "
                "transfer rows %9.0f rows/s wall, %9.0f rows/cpu-s\n",
                static_cast<long long>(batch), n / tc.wall, n / tc.cpu,
                static_cast<double>(sb.st_size) / n, n / tt.wall, n / tt.cpu);
    std::fflush(stdout);
    std::filesystem::remove(p1);
    std::filesystem::remove(p2);
  }

  MergeOptions o;
  const int64_t per_file = rows / 4;
  for (int r = 0; r < 4; ++r) {
    const std::string p = next();
    if (writeFile(p, r, per_file, per_file, 10'000).wall < 0) return 1;
    o.inputs.push_back(p);
  }
  o.output = dir + "/merged.sqlite";
  o.overwrite = true;
  // The last progress call comes after the indexes are built; the one before
  // it at the end of the row copy: their gap is the index build.
  double t_prev = 0, t_last = 0;
  o.progress = [&](int64_t, int64_t) {
    t_prev = t_last;
    t_last = now();
  };
  const double t0 = now();
  const double c0 = cpuNow();
  const MergeResult m = mergeRankFiles(o);
  const double dt = now() - t0;
  const double dc = cpuNow() - c0;
  if (!m.ok) {
    std::fprintf(stderr, "merge failed: %s\n", m.error.c_str());
    return 1;
  }
  const double total = static_cast<double>(m.collectives + m.transfers);
  std::printf("merge of 4 rank files: %.0f rows in %.2f s = %.0f rows/s wall, %.0f rows/cpu-s"
              " (indexes included; validation+copy %.2f s, indexes+sync ~%.2f s)\n",
              total, dt, total / dt, total / dc, t_prev - t0, t_last - t_prev);
  if (argc <= 1) std::filesystem::remove_all(dir);
  return 0;
}
