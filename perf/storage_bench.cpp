// perf/storage_bench.cpp — throughput of the trace writer and merger.
//
// Prints rows/s for collective rows and for transfer rows written in batches
// of 1k, 10k and 100k (commit included), then the merge rate for 4 rank files.
// Usage: storage_bench [folder] [rows]   (default: a folder under /tmp, 1000000 rows)
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"

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

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  if (argc > 1) {
    dir = argv[1];
  } else {
    char tmpl[] = "/tmp/ringside-storage-bench-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    dir = tmpl;
  }
  const int64_t rows = argc > 2 ? std::atoll(argv[2]) : 1'000'000;
  std::printf("storage_bench: %lld rows per run, files in %s\n", static_cast<long long>(rows), dir.c_str());
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
  if (std::getenv("BENCH_TRACE"))
    o.progress_detail = [&](const MergeProgress& p) {
      std::printf("  %.3f s cpu %.3f: input %d/%d rows %lld\n", now() - t0, cpuNow() - c0, p.input,
                  p.inputs, static_cast<long long>(p.done));
    };
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
