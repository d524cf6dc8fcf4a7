// What the stand-in NCCL job does (built into libnccl_workload.so, linked to
// the stand-in libnccl.so.2). nccl_app links it directly; nccl_app_private
// dlopen()s it with RTLD_LOCAL, as Python loads PyTorch and PyTorch NCCL.
//
// Rank and size from RANK/WORLD_SIZE; ranks meet through FAKE_NCCL_DIR.
// Every result is checked against its closed form; rank 0 prints one line per
// step. Options: --abort (end with ncclCommAbort), --exit N (exit status),
// --loop N (after the steps: N one-element all-reduces, rank 0 prints the
// mean wall time per call: the per-call cost of the stand-in plus tracing),
// --stall-rank R --stall-at K (in the loop, rank R stops calling before its
// K-th all-reduce: it sleeps --stall-s S seconds, 600 by default, then exits 4
// without another NCCL call: a rank that stops joining, for the flight recorder).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "nccl_c_api.h"

namespace {

int g_rank = 0, g_size = 1;
int g_failures = 0;

#define CHECK_NCCL(call)                                                          \
  do {                                                                            \
    ncclResult_t r_ = (call);                                                     \
    if (r_ != ncclSuccess) {                                                      \
      std::fprintf(stderr, "rank %d: %s failed: %d\n", g_rank, #call, int(r_));  \
      std::exit(3);                                                               \
    }                                                                             \
  } while (0)

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: wrong result: %s\n", g_rank, what);
    ++g_failures;
  } else if (g_rank == 0) {
    std::printf("OK %s\n", what);
  }
}

ncclUniqueId shareId(const std::string& dir) {
  ncclUniqueId id;
  std::string path = dir + "/id";
  if (g_rank == 0) {
    CHECK_NCCL(ncclGetUniqueId(&id));
    std::ofstream(path + ".tmp", std::ios::binary).write(id.internal, sizeof id.internal);
    std::rename((path + ".tmp").c_str(), path.c_str());
    return id;
  }
  for (int i = 0; i < 60000; ++i) {
    std::ifstream f(path, std::ios::binary);
    if (f && f.read(id.internal, sizeof id.internal)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "rank %d: no unique id in %s\n", g_rank, dir.c_str());
  std::exit(3);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int nccl_workload_main(int argc, char** argv) {
  bool abort_at_end = false;
  int exit_code = 0;
  long loop = 0, stall_at = -1;
  int stall_rank = -1, stall_s = 600;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--stall-rank") == 0 && i + 1 < argc) stall_rank = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--stall-at") == 0 && i + 1 < argc) stall_at = std::atol(argv[++i]);
    if (std::strcmp(argv[i], "--stall-s") == 0 && i + 1 < argc) stall_s = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--abort") == 0) abort_at_end = true;
    if (std::strcmp(argv[i], "--exit") == 0 && i + 1 < argc) exit_code = std::atoi(argv[++i]);
    if (std::strcmp(argv[i], "--loop") == 0 && i + 1 < argc) loop = std::atol(argv[++i]);
  }
  if (const char* r = std::getenv("RANK")) g_rank = std::atoi(r);
  if (const char* s = std::getenv("WORLD_SIZE")) g_size = std::atoi(s);
  const char* d = std::getenv("FAKE_NCCL_DIR");
  std::string dir = d != nullptr ? d : "/tmp";
  cudaStream_t stream = reinterpret_cast<cudaStream_t>(0x5000 + g_rank);
  const int n = g_size;

  ncclComm_t world = nullptr;
  CHECK_NCCL(ncclCommInitRank(&world, n, shareId(dir), g_rank));

  // 1. all-reduce, outside a group
  std::vector<float> a(1024, static_cast<float>(g_rank + 1));
  CHECK_NCCL(ncclAllReduce(a.data(), a.data(), a.size(), ncclFloat32, ncclSum, world, stream));
  expect(a[0] == static_cast<float>(n * (n + 1) / 2) && a[1023] == a[0], "allreduce f32 sum");

  // 2. a group of an all-reduce and a broadcast
  std::vector<int32_t> b(256, g_rank + 1), c(64, g_rank == 0 ? 42 : -1);
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclAllReduce(b.data(), b.data(), b.size(), ncclInt32, ncclMax, world, stream));
  CHECK_NCCL(ncclBroadcast(c.data(), c.data(), c.size(), ncclInt32, 0, world, stream));
  CHECK_NCCL(ncclGroupEnd());
  expect(b[0] == n && c[63] == 42, "group allreduce i32 max + broadcast");

  // 3. a ring exchange with send/recv in a group
  std::vector<double> out(128, 10.0 * g_rank), in(128, -1.0);
  int next = (g_rank + 1) % n, prev = (g_rank + n - 1) % n;
  CHECK_NCCL(ncclGroupStart());
  CHECK_NCCL(ncclSend(out.data(), out.size(), ncclFloat64, next, world, stream));
  CHECK_NCCL(ncclRecv(in.data(), in.size(), ncclFloat64, prev, world, stream));
  CHECK_NCCL(ncclGroupEnd());
  expect(in[0] == 10.0 * prev, "send/recv ring");

  // 4. reduce-scatter and all-gather
  std::vector<int64_t> rs(static_cast<size_t>(16 * n), 1), rsout(16, 0), ag(static_cast<size_t>(16 * n), 0);
  CHECK_NCCL(ncclReduceScatter(rs.data(), rsout.data(), 16, ncclInt64, ncclSum, world, stream));
  std::vector<int64_t> mine(16, g_rank);
  CHECK_NCCL(ncclAllGather(mine.data(), ag.data(), 16, ncclInt64, world, stream));
  expect(rsout[0] == n && ag[static_cast<size_t>(16 * (n - 1))] == n - 1, "reduce_scatter + allgather");

  // 5. a split (every rank, reversed order) and an all-reduce on it
  ncclComm_t sub = nullptr;
  CHECK_NCCL(ncclCommSplit(world, 0, -g_rank, &sub, nullptr));
  int sub_rank = -1;
  CHECK_NCCL(ncclCommUserRank(sub, &sub_rank));
  std::vector<float> s(32, 1.0f);
  CHECK_NCCL(ncclAllReduce(s.data(), s.data(), s.size(), ncclFloat32, ncclSum, sub, stream));
  expect(sub_rank == n - 1 - g_rank && s[0] == static_cast<float>(n), "split + allreduce");
  CHECK_NCCL(ncclCommDestroy(sub));

  if (loop > 0) {
    float x = 1.0f;
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < loop; ++i) {
      if (g_rank == stall_rank && i == stall_at) {
        std::this_thread::sleep_for(std::chrono::seconds(stall_s));
        std::_Exit(4);
      }
      CHECK_NCCL(ncclAllReduce(&x, &x, 1, ncclFloat32, ncclMax, world, stream));
    }
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (g_rank == 0) std::printf("loop: %ld calls, %.0f ns per call\n", loop, ns / static_cast<double>(loop));
  }

  if (abort_at_end) {
    CHECK_NCCL(ncclCommAbort(world));
  } else {
    CHECK_NCCL(ncclCommDestroy(world));
  }
  if (g_rank == 0) std::printf("nccl_app done\n");
  std::fflush(stdout);
  return g_failures != 0 ? 1 : exit_code;
}
