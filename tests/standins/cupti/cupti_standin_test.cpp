// CUPTI handling tested against a fake libcupti that replays recorded-looking
// activity (one_step.records) through the buffer callbacks, and a fake
// libcuda.so.1 that makes the process look like a CUDA process.
//
// Each test runs in a forked child, because the collector and CUPTI are
// process-wide singletons (as in a traced job); the parent reads the child's
// rank file. The sanitizer builds run these tests too.
#include <dlfcn.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"
#include "ringside/storage/trace_reader.h"
#include "traced_child.h"

namespace col = ringside::collector;
namespace st = ringside::storage;

namespace {

using ringside::test_support::Env;
using ringside::test_support::inChild;
using ringside::test_support::makeTempDir;
using ringside::test_support::rankFiles;

[[maybe_unused]] bool fileExists(const std::string& p) {
  struct stat sb;
  return stat(p.c_str(), &sb) == 0;
}

struct Trace {
  std::map<std::string, std::string> meta;
  std::vector<st::CollectiveRow> collectives;
  struct Gpu {
    std::string kind, name, copy_kind;
    int64_t start_ns, end_ns, stream, bytes, correlation_id, collective_id;
    int32_t device;
  };
  std::vector<Gpu> gpu;
};

Trace readTrace(const std::string& dir) {
  Trace t;
  auto files = rankFiles(dir);
  EXPECT_EQ(files.size(), 1u) << dir;
  if (files.size() != 1) return t;
  std::string err;
  auto r = st::TraceReader::open(files[0], &err);
  EXPECT_TRUE(r) << err;
  if (!r) return t;
  t.meta = r->meta();
  EXPECT_TRUE(r->forEachCollective(
      [&](const st::CollectiveRow& c) {
        t.collectives.push_back(c);
        return true;
      },
      &err))
      << err;
  EXPECT_TRUE(r->forEachGpuActivity(
      [&](int32_t, const st::GpuActivityRow& g) {
        t.gpu.push_back({std::string(g.kind), std::string(g.name), std::string(g.copy_kind), g.start_ns, g.end_ns,
                         g.stream, g.bytes, g.correlation_id, g.collective_id, g.device});
        return true;
      },
      &err))
      << err;
  return t;
}

[[maybe_unused]] std::map<std::string, std::string> readLog(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    out[line.substr(0, sp)] = sp == std::string::npos ? "" : line.substr(sp + 1);
  }
  return out;
}

#ifdef FAKE_CUPTI_PATH
void* openFake() { return dlopen(FAKE_CUPTI_PATH, RTLD_NOW | RTLD_NOLOAD); }

template <class F>
F fakeFn(const char* name) {
  void* h = openFake();
  return h != nullptr ? reinterpret_cast<F>(dlsym(h, name)) : nullptr;
}

// What an NCCL wrapper does around one call: a collective event, and the
// call's id on CUPTI's external-correlation stack while it launches work.
uint64_t ncclCall(int comm, int64_t seq) {
  col::Event e;
  e.kind = col::EventKind::kCollective;
  e.op = static_cast<uint8_t>(col::Op::kAllreduce);
  e.library = static_cast<uint8_t>(col::Library::kNccl);
  e.id = col::newCollectiveId();
  e.key = static_cast<uint64_t>(seq);
  e.comm = static_cast<int16_t>(comm);
  e.bytes = 1 << 20;
  e.aux = 1 << 18;
  e.t0 = col::nowNs();
  col::pushGpuCorrelation(e.id);
  col::popGpuCorrelation();
  e.t1 = col::nowNs();
  col::emit(e);
  return e.id;
}

// Loads the fake driver (the app "uses CUDA"), starts the collector.
int startCudaProcess(bool load_cuda) {
  if (load_cuda && dlopen(FAKE_CUDA_PATH, RTLD_NOW | RTLD_GLOBAL) == nullptr) return 90;
  if (!col::activate()) return 91;
  col::setIdentity(0, 1, "test");
  return 0;
}

Env baseEnv(const std::string& dir) {
  Env e;
  e["RINGSIDE_CUPTI_LIB"] = FAKE_CUPTI_PATH;
  e["FAKE_CUPTI_RECORDS"] = RECORDS_PATH;
  e["FAKE_CUPTI_LOG"] = dir + "/fake.log";
  return e;
}

const Trace::Gpu* byCorrelation(const Trace& t, int64_t corr) {
  for (const auto& g : t.gpu)
    if (g.correlation_id == corr) return &g;
  return nullptr;
}
#endif

}  // namespace

#ifndef FAKE_CUPTI_PATH

// Built without the CUDA toolkit: CUPTI is a no-op and the trace says why.
TEST(CuptiStandin, NotBuiltIsSaid) {
  std::string dir = makeTempDir("cupti");
  int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 91;
    col::setIdentity(0, 1, "test");
    if (col::startGpuActivity()) return 10;
    col::pushGpuCorrelation(1);
    col::popGpuCorrelation();
    col::flushGpuActivity();
    return 0;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(readTrace(dir).meta["cupti"], "not built");
}

#else

TEST(CuptiStandin, ReplayedStepIsRecordedExactly) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  env["RINGSIDE_FLUSH_MS"] = "10";  // the periodic flusher runs beside the app's calls
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(true)) return e;
    if (!col::startGpuActivity()) return 10;
    if (!col::startGpuActivity()) return 11;  // idempotent
    int comm = col::registerCommNamed(reinterpret_cast<void*>(0x10), 0, 1, "nccl", "nccl/abc");
    for (int i = 0; i < 3; ++i) ncclCall(comm, i);
    usleep(50 * 1000);
    col::flushGpuActivity();  // flush 1
    auto worker = fakeFn<void (*)()>("fake_cupti_worker_delivery");
    auto destroy = fakeFn<void (*)(uint32_t)>("fake_cupti_destroy_context");
    auto left = fakeFn<size_t (*)()>("fake_cupti_groups_left");
    if (worker == nullptr || destroy == nullptr || left == nullptr) return 12;
    worker();    // flush 2, from CUPTI's (the fake's) own thread
    usleep(50 * 1000);
    destroy(1);  // flush 3, forced by the context going away
    if (left() != 1) return 13;
    return 0;    // flush 4 at exit
  });
  ASSERT_EQ(rc, 0);
  auto log = readLog(dir + "/fake.log");
  ASSERT_TRUE(log.count("base_host_ns")) << "the fake never saw the buffer callbacks";
  const int64_t base = std::stoll(log["base_host_ns"]);

  Trace t = readTrace(ranks);
  EXPECT_EQ(t.meta["cupti"].rfind("recording (CUPTI ", 0), 0u) << t.meta["cupti"];
  EXPECT_EQ(t.meta["cupti_records_dropped"], "5");
  EXPECT_EQ(t.meta["cupti_records_invalid"], "1");  // the record cut by validSize
  EXPECT_EQ(t.meta["end_state"], "clean");
  ASSERT_EQ(t.collectives.size(), 3u);
  std::vector<int64_t> ids;
  for (const auto& c : t.collectives) ids.push_back(c.id);

  std::map<std::string, int> per_kind;
  for (const auto& g : t.gpu) ++per_kind[g.kind];
  EXPECT_EQ(per_kind["kernel"], 7);
  EXPECT_EQ(per_kind["memcpy"], 3);
  EXPECT_EQ(per_kind["memset"], 1);
  EXPECT_EQ(per_kind["sync"], 1);
  EXPECT_EQ(per_kind["nvtx"], 2);
  EXPECT_EQ(t.gpu.size(), 14u);

  // Host clock: every time is the fake's relative time after its base
  // instant, give or take the offset measurement (a few microseconds).
  const int64_t tol = 200000;
  struct Expect {
    int64_t corr;
    const char* kind;
    const char* name;
    int64_t start, end, bytes;
    const char* copy;
    int collective;  // 1-based call index, 0: none
    int64_t stream;
  };
  const Expect expect[] = {
      {101, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs*)", 1000000, 1400000, -1, "", 1, 13},
      {102, "kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgs*)", 2000000, 2300000, -1, "", 2, 13},
      {103, "kernel", "ncclDevKernel_AllGather_Sum_f32_RING_LL(ncclDevKernelArgs*)", 2600000, 2900000, -1, "", 3, 13},
      {50, "kernel", "gemm_kernel(float const*, float const*, float*, int, int, int)", 900000, 1200000, -1, "", 0, 7},
      {51, "kernel", "gemm_kernel(float const*, float const*, float*, int, int, int)", 1200000, 2100000, -1, "", 0, 7},
      {52, "kernel", "softmax_kernel(float*, int)", 2400000, 2500000, -1, "", 0, 7},
      {81, "kernel", "relu_kernel", 3300000, 3350000, -1, "", 0, 7},
      {40, "memcpy", "", 100000, 600000, 4194304, "HtoD", 0, 7},
      {70, "memcpy", "", 2950000, 3050000, 262144, "DtoH", 0, 7},
      {80, "memcpy", "", 3200000, 3300000, 65536, "DtoH", 0, 7},
      {41, "memset", "", 650000, 700000, 1048576, "", 0, 7},
      {60, "sync", "stream_synchronize", 2300000, 2400000, -1, "", 0, 7},
  };
  for (const Expect& x : expect) {
    SCOPED_TRACE("correlation " + std::to_string(x.corr));
    const Trace::Gpu* g = byCorrelation(t, x.corr);
    ASSERT_NE(g, nullptr);
    EXPECT_EQ(g->kind, x.kind);
    EXPECT_EQ(g->name, x.name);
    EXPECT_EQ(g->bytes, x.bytes);
    EXPECT_EQ(g->copy_kind, x.copy);
    EXPECT_EQ(g->device, 0);
    EXPECT_EQ(g->stream, x.stream);
    EXPECT_EQ(g->end_ns - g->start_ns, x.end - x.start);  // one offset per record: durations exact
    EXPECT_NEAR(static_cast<double>(g->start_ns), static_cast<double>(base + x.start), tol);
    EXPECT_EQ(g->collective_id, x.collective > 0 ? ids[static_cast<size_t>(x.collective - 1)] : -1);
  }
  EXPECT_EQ(byCorrelation(t, 71), nullptr);  // cut by validSize: skipped, counted invalid

  // NVTX: the range opened in flush 1 and closed in flush 4; an instant marker.
  int nvtx = 0;
  for (const auto& g : t.gpu) {
    if (g.kind != "nvtx") continue;
    ++nvtx;
    EXPECT_EQ(g.device, -1);
    if (g.name == "train_step 0") {
      EXPECT_NEAR(static_cast<double>(g.start_ns), static_cast<double>(base + 50000), tol);
      EXPECT_NEAR(static_cast<double>(g.end_ns), static_cast<double>(base + 5000000), tol);
    } else {
      EXPECT_EQ(g.name, "checkpoint");
      EXPECT_EQ(g.start_ns, g.end_ns);
    }
  }
  EXPECT_EQ(nvtx, 2);
}

TEST(CuptiStandin, BusyWhenAnotherSubscriberHoldsCupti) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  env["FAKE_CUPTI_MODE"] = "busy";
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(true)) return e;
    if (col::startGpuActivity()) return 10;
    int comm = col::registerCommNamed(reinterpret_cast<void*>(0x10), 0, 1, "nccl", "nccl/abc");
    for (int i = 0; i < 3; ++i) ncclCall(comm, i);  // NCCL data carries on
    col::flushGpuActivity();
    return 0;
  });
  ASSERT_EQ(rc, 0);
  Trace t = readTrace(ranks);
  EXPECT_EQ(t.meta["cupti"].rfind("busy: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", 0), 0u)
      << t.meta["cupti"];
  EXPECT_EQ(t.collectives.size(), 3u);
  EXPECT_TRUE(t.gpu.empty());
  EXPECT_EQ(t.meta["end_state"], "clean");
}

TEST(CuptiStandin, BusyWhenActivityEnableIsRefused) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  env["FAKE_CUPTI_MODE"] = "busy_enable";
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(true)) return e;
    if (col::startGpuActivity()) return 10;
    ncclCall(col::registerCommNamed(reinterpret_cast<void*>(0x10), 0, 1, "nccl", "nccl/abc"), 0);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  Trace t = readTrace(ranks);
  EXPECT_EQ(t.meta["cupti"].rfind("busy: cuptiActivityEnable(kernel)", 0), 0u) << t.meta["cupti"];
  EXPECT_EQ(t.collectives.size(), 1u);
  EXPECT_TRUE(t.gpu.empty());
  EXPECT_TRUE(readLog(dir + "/fake.log").count("unsubscribed"));  // gave CUPTI back
}

TEST(CuptiStandin, NoCudaNoCupti) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(false)) return e;
    if (col::startGpuActivity()) return 10;
    ncclCall(col::registerCommNamed(reinterpret_cast<void*>(0x10), 0, 1, "nccl", "nccl/abc"), 0);
    col::flushGpuActivity();
    return openFake() == nullptr ? 0 : 11;  // never loaded
  });
  ASSERT_EQ(rc, 0);
  EXPECT_FALSE(fileExists(dir + "/fake.log"));  // the fake's constructor never ran
  Trace t = readTrace(ranks);
  EXPECT_EQ(t.meta.count("cupti"), 0u);
  EXPECT_TRUE(t.gpu.empty());
  EXPECT_EQ(t.collectives.size(), 1u);
}

TEST(CuptiStandin, OffByEnvironment) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  env["RINGSIDE_CUPTI"] = "0";
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(true)) return e;
    if (col::startGpuActivity()) return 10;
    return openFake() == nullptr ? 0 : 11;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_FALSE(fileExists(dir + "/fake.log"));
  EXPECT_EQ(readTrace(ranks).meta["cupti"], "off (RINGSIDE_CUPTI=0)");
}

TEST(CuptiStandin, MissingLibraryIsSaid) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  env["RINGSIDE_CUPTI_LIB"] = dir + "/no-such-libcupti.so";
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(true)) return e;
    return col::startGpuActivity() ? 10 : 0;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(readTrace(ranks).meta["cupti"].rfind("unavailable: RINGSIDE_CUPTI_LIB=", 0), 0u);
}

// A burst of records larger than the buffer pool: memory stays bounded (the
// fake never holds more buffers than the pool has), and every record is
// either in the trace or counted as dropped.
TEST(CuptiStandin, FloodStaysBoundedAndCounted) {
  std::string dir = makeTempDir("cupti");
  std::string ranks = dir + "/ranks";
  Env env = baseEnv(dir);
  constexpr uint64_t kFlood = 20000;
  env["FAKE_CUPTI_FLOOD"] = std::to_string(kFlood);
  env["FAKE_CUPTI_RECORDS"] = "/dev/null";
  env["RINGSIDE_CUPTI_BUFFER_KB"] = "64";
  env["RINGSIDE_CUPTI_BUFFERS"] = "4";
  int rc = inChild(ranks, env, [] {
    if (int e = startCudaProcess(true)) return e;
    if (!col::startGpuActivity()) return 10;
    col::flushGpuActivity();
    auto held = fakeFn<size_t (*)()>("fake_cupti_max_held");
    if (held == nullptr) return 12;
    return held() <= 4 ? 0 : 13;
  });
  ASSERT_EQ(rc, 0);
  Trace t = readTrace(ranks);
  uint64_t rows = t.gpu.size();
  uint64_t dropped = std::stoull(t.meta["cupti_records_dropped"]);
  uint64_t queue_dropped = t.meta.count("gpu_activity_dropped") ? std::stoull(t.meta["gpu_activity_dropped"]) : 0;
  EXPECT_GT(dropped, 0u);
  EXPECT_GT(rows, 0u);
  EXPECT_EQ(rows + dropped + queue_dropped, kFlood);
  EXPECT_NE(t.meta["cupti_buffers_refused"], "0");
  EXPECT_EQ(t.meta["cupti_buffers_max_in_use"], "4 of 4 x 64 KiB");
}

#endif  // FAKE_CUPTI_PATH
