// The NCCL profiler plugin's event model driven as NCCL drives it: the
// application thread starts API and coll events, NCCL's proxy thread the
// proxy ops, steps and kernel channels of earlier calls, concurrently (TSan
// runs this). Each test runs in a forked child: the collector is a
// process-wide singleton and its exit flush writes the rank file.
#include "nccl_profiler.h"

#include "nccl_link.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"
#include "traced_child.h"

#include <sqlite3.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace np = ringside::interpose::nccl_profiler;
using ringside::collector::Algorithm;
using ringside::collector::Op;
using ringside::collector::Protocol;

namespace {

using ringside::test_support::makeTempDir;

// The first rank file in `dir`; "" if there is none.
std::string rankFile(const std::string& dir) {
  const std::vector<std::string> files = ringside::test_support::rankFiles(dir);
  return files.empty() ? "" : files[0];
}

// A forked child as in a traced job, which neither a disabling switch nor an
// event mask of the caller's environment reaches.
template <class F>
int inChild(const std::string& dir, F body) {
  return ringside::test_support::inChild(dir, {}, [&] {
    unsetenv("RINGSIDE_DISABLE");
    unsetenv("RINGSIDE_NCCL_EVENT_MASK");
    return body();
  });
}

int64_t queryInt(const std::string& file, const char* sql) {
  sqlite3* db = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return v;
}

uint64_t realtimeNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

np::Event ev(np::Kind k, void* parent) {
  np::Event e;
  e.kind = k;
  e.parent = parent;
  e.rank = 0;
  return e;
}

constexpr int kCalls = 2000;
constexpr int kSteps = 3;

// NCCL's order for one call, split over two threads: the app thread's API and
// coll events, the proxy thread's children of the (already stopped) coll.
int runConcurrent() {
  void* ctx = nullptr;
  int mask = 0;
  np::InitInfo info;
  info.comm_hash = 0x1234;
  info.nranks = 2;
  info.rank = 0;
  info.nnodes = 2;
  if (np::init(5, &ctx, &mask, info) != 0 || ctx == nullptr) return 10;
  std::mutex m;
  std::condition_variable cv;
  std::deque<void*> colls;
  bool done = false;
  std::thread proxy([&] {
    for (;;) {
      void* coll = nullptr;
      {
        std::unique_lock<std::mutex> lock(m);
        cv.wait(lock, [&] { return done || !colls.empty(); });
        if (colls.empty()) return;
        coll = colls.front();
        colls.pop_front();
      }
      for (int ch = 0; ch < 2; ++ch) {
        np::Event k = ev(np::Kind::kKernelCh, coll);
        k.channel = ch;
        k.gpu_timer = realtimeNs();
        void* kh = nullptr;
        np::startEvent(ctx, &kh, k);
        np::Event o = ev(np::Kind::kProxyOp, coll);
        o.pid = getpid();
        o.channel = ch;
        o.peer = 1;
        o.is_send = ch == 0;
        o.chunk_size = 512;
        void* oh = nullptr;
        np::startEvent(ctx, &oh, o);
        for (int s = 0; s < kSteps; ++s) {
          np::Event st = ev(np::Kind::kProxyStep, oh);
          st.step = s;
          void* sh = nullptr;
          np::startEvent(ctx, &sh, st);
          np::StateArgs a;
          a.trans_size = 100;
          np::recordEventState(sh, o.is_send ? 9 : 10, a);
          np::recordEventState(sh, o.is_send ? 9 : 12, a);
          np::stopEvent(sh);
        }
        np::stopEvent(oh);
        np::StateArgs stop;
        stop.gpu_timer = realtimeNs();
        np::recordEventState(kh, 22, stop);
        np::stopEvent(kh);
      }
    }
  });
  for (int i = 0; i < kCalls; ++i) {
    void* gapi = nullptr;
    np::Event g = ev(np::Kind::kGroupApi, nullptr);
    g.group_depth = 1;
    np::startEvent(ctx, &gapi, g);
    np::Event api = ev(np::Kind::kCollApi, gapi);
    api.op = Op::kAllreduce;
    api.count = 1024;
    api.stream = reinterpret_cast<void*>(0x77);
    void* ah = nullptr;
    np::startEvent(ctx, &ah, api);
    np::stopEvent(ah);
    np::Event c = ev(np::Kind::kColl, ah);
    c.op = Op::kAllreduce;
    c.count = 1024;
    c.dtype = ringside::collector::DType::kF32;
    c.channels = 2;
    c.algorithm = Algorithm::kRing;
    c.protocol = Protocol::kLL128;
    void* ch = nullptr;
    np::startEvent(ctx, &ch, c);
    np::stopEvent(ch);  // enqueued; the proxy thread still names it
    np::stopEvent(gapi);
    {
      std::lock_guard<std::mutex> lock(m);
      colls.push_back(ch);
    }
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> lock(m);
    done = true;
  }
  cv.notify_one();
  proxy.join();
  // A proxy op from another process's proxy (PXN): its parent pointer is not ours.
  np::Event o = ev(np::Kind::kProxyOp, reinterpret_cast<void*>(0x1));
  o.pid = getpid() + 1;
  o.channel = 3;
  o.peer = 1;
  o.is_send = true;
  o.chunk_size = 64;
  void* oh = nullptr;
  np::startEvent(ctx, &oh, o);
  np::Event st = ev(np::Kind::kProxyStep, oh);
  st.step = 0;
  void* sh = nullptr;
  np::startEvent(ctx, &sh, st);
  np::stopEvent(sh);
  np::stopEvent(oh);
  np::finalize(ctx);
  return 0;
}

}  // namespace

TEST(NcclProfiler, ConcurrentAppAndProxyThreads) {
  std::string dir = makeTempDir("nccl-profiler");
  ASSERT_FALSE(dir.empty());
  ASSERT_EQ(inChild(dir, runConcurrent), 0);
  std::string f = rankFile(dir);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(queryInt(f, "select count(*) from collective where op = 'allreduce' and library = 'nccl'"), kCalls);
  EXPECT_EQ(queryInt(f, "select count(*) from collective where algorithm = 'ring' and protocol = 'LL128'"
                        " and channels = 2 and stream = 119 and gpu_start_ns <= gpu_end_ns"),
            kCalls);
  EXPECT_EQ(queryInt(f, "select count(*) from collective where group_id is not null"), 0);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer where collective_id is not null"), kCalls * 2 * kSteps);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer where bytes = 100 and channel in (0, 1) and step >= 0"),
            kCalls * 2 * kSteps);
  // PXN: kept, without its collective
  EXPECT_EQ(queryInt(f, "select count(*) from transfer where collective_id is null and channel = 3 and bytes = 64"),
            1);
  EXPECT_EQ(queryInt(f, "select count(*) from communicator where comm = 'nccl/0000000000001234' and comm_size = 2"
                        " and topology like '%nodes: 2%'"),
            1);
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'nccl_profiler_events' and value like '%pxn_remote=1%'"),
            1);
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'events_dropped' and value = '0'"), 1);
}

// A call on a communicator the wrapper registered that the plugin cannot
// match: the wrapper has its row already, so the plugin adds none.
TEST(NcclProfiler, UnmatchedCallsOnWrappedCommunicatorsAddNoRow) {
  std::string dir = makeTempDir("nccl-profiler");
  int rc = inChild(dir, [] {
    namespace col = ringside::collector;
    namespace nl = ringside::interpose::nccl_link;
    if (!col::activate()) return 10;
    static int key;
    int32_t comm = col::registerCommNamed(&key, 0, 2, "nccl", "nccl/00000000000000aa");
    nl::markWrapped(comm);
    nl::CreationWindow w = nl::openCreationWindow(0);
    void* ctx = nullptr;
    int mask = 0;
    np::InitInfo info;
    info.nranks = 2;
    info.rank = 0;
    if (np::init(4, &ctx, &mask, info) != 0) return 11;
    if (nl::bindCreatedContexts(w, comm, 0, 2, -1, 1) != 1) return 12;
    np::Event c = ev(np::Kind::kColl, nullptr);
    c.op = Op::kAllreduce;
    c.channels = 4;
    c.algorithm = Algorithm::kTree;
    c.protocol = Protocol::kSimple;
    void* h = nullptr;
    np::startEvent(ctx, &h, c);
    np::stopEvent(h);
    np::finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string f = rankFile(dir);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data"), 0);
  EXPECT_EQ(queryInt(f, "select count(*) from collective_gpu_data where channels = 4"), 1);
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'nccl_profiler_events'"
                        " and value like '%own=0 %' and value like '%unmatched=1%'"),
            1);
}

TEST(NcclProfiler, DisabledCollectorDeclinesInit) {
  std::string dir = makeTempDir("nccl-profiler");
  int rc = inChild(dir, [] {
    setenv("RINGSIDE_DISABLE", "1", 1);
    void* ctx = reinterpret_cast<void*>(0x1);
    int mask = 0;
    int r = np::init(4, &ctx, &mask, np::InitInfo{});
    return r != 0 && ctx == nullptr ? 0 : 1;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(rankFile(dir).empty());
}

TEST(NcclProfiler, Vocabulary) {
  EXPECT_EQ(np::opFromName("AllReduce"), Op::kAllreduce);
  EXPECT_EQ(np::opFromName("AlltoAll"), Op::kAlltoall);
  EXPECT_EQ(np::opFromName("ReduceScatter"), Op::kReducescatter);
  EXPECT_EQ(np::opFromName(nullptr), Op::kUnknown);
  EXPECT_EQ(np::dtypeFromName("ncclFloat32"), ringside::collector::DType::kF32);
  EXPECT_EQ(np::dtypeFromName("ncclBfloat16"), ringside::collector::DType::kBF16);
  EXPECT_EQ(np::algorithmFromName("NVLSTree"), Algorithm::kNvlsTree);
  EXPECT_EQ(np::algorithmFromName("CollNetDirect"), Algorithm::kCollnetDirect);
  EXPECT_EQ(np::algorithmFromName("PAT"), Algorithm::kPat);
  EXPECT_EQ(np::protocolFromName("LL128"), Protocol::kLL128);
  EXPECT_EQ(np::opFromV1(4), Op::kAllreduce);
  EXPECT_EQ(np::opFromV1(0), Op::kBroadcast);
  EXPECT_EQ(np::algorithmFromV1(1), Algorithm::kRing);
  EXPECT_EQ(np::algorithmFromV1(0), Algorithm::kTree);
  EXPECT_EQ(np::protocolFromV1(2), Protocol::kSimple);
}
