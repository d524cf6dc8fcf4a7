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
#include <sys/mman.h>
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
    // Tens of thousands of events in a burst (sanitizer builds write slowly):
    // room for all of them, every transfer row kept.
    setenv("RINGSIDE_BUFFER_MB", "256", 1);
    setenv("RINGSIDE_MESSAGE_ROWS", "100000000", 1);
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

// ---- NCCL's contract as NCCL implements it (docs/nccl.md, "What NCCL does") ----

// What a wrapped call leaves before NCCL runs it: its collective row (count =
// `count`, so a row tells which call it is) and its Pending entry.
uint64_t wrappedCall(int32_t comm, Op op, uint64_t count, uint64_t stream) {
  namespace col = ringside::collector;
  namespace nl = ringside::interpose::nccl_link;
  col::Event e;
  e.kind = col::EventKind::kCollective;
  e.op = static_cast<uint8_t>(op);
  e.library = static_cast<uint8_t>(col::Library::kNccl);
  e.comm = static_cast<int16_t>(comm);
  e.key = static_cast<uint64_t>(col::nextSeq(comm));
  e.aux = count;
  e.id = col::newCollectiveId();
  e.t0 = col::nowNs();
  e.t1 = e.t0 + 1;
  nl::Pending p;
  p.id = e.id;
  p.comm = comm;
  p.op = static_cast<uint8_t>(op);
  p.stream = stream;
  nl::pushPending(p);
  col::emit(e);
  return e.id;
}

// Runs f(0) ... f(n-1) in order, 500 at a time on a thread of its own: each
// thread gets its own event ring, so a burst of tens of thousands of events
// is never dropped for a full ring (as NCCL's calls and proxy thread would
// be spread in time).
template <class F>
void batched(int n, F f) {
  for (int first = 0; first < n; first += 500) {
    std::thread t([&] {
      for (int i = first; i < n && i < first + 500; ++i) f(i);
    });
    t.join();
  }
}

// A communicator the wrapper registered, with its plugin context (v5).
void* wrappedComm(int32_t* comm_out) {
  namespace col = ringside::collector;
  namespace nl = ringside::interpose::nccl_link;
  if (!col::activate()) return nullptr;
  static int key;
  int32_t comm = col::registerCommNamed(&key, 0, 2, "nccl", "nccl/00000000000000bb");
  nl::markWrapped(comm);
  nl::CreationWindow w = nl::openCreationWindow(0);
  void* ctx = nullptr;
  int mask = 0;
  np::InitInfo info;
  info.comm_hash = 0xbb;
  info.nranks = 2;
  info.rank = 0;
  if (np::init(5, &ctx, &mask, info) != 0) return nullptr;
  if (nl::bindCreatedContexts(w, comm, 0, 2, -1, 1) != 1) return nullptr;
  *comm_out = comm;
  return ctx;
}

// The channel count each test call's coll event announces: tells from the
// GPU row which coll event wrote it (2048 and 8192 are not multiples of 61,
// so the call that took over a slot announces another count).
int channelsFor(uint64_t count) { return 1 + static_cast<int>(count % 61); }

void* collEvent(void* ctx, void* api, uint64_t count) {
  np::Event c = ev(np::Kind::kColl, api);
  c.op = Op::kAllreduce;
  c.count = count;
  c.channels = channelsFor(count);
  c.algorithm = Algorithm::kRing;
  c.protocol = Protocol::kSimple;
  void* h = nullptr;
  np::startEvent(ctx, &h, c);
  np::stopEvent(h);  // enqueued; NCCL goes on naming it
  return h;
}

void* apiEvent(void* ctx, void* group_api, uint64_t count, uint64_t stream) {
  np::Event a = ev(np::Kind::kCollApi, group_api);
  a.op = Op::kAllreduce;
  a.count = count;
  a.stream = reinterpret_cast<void*>(stream);
  void* h = nullptr;
  np::startEvent(ctx, &h, a);
  np::stopEvent(h);  // the API call returned; its coll event comes later
  return h;
}

// The proxy thread's work for one coll: a kernel channel, one proxy op with
// one step of `bytes`.
void proxyWork(void* ctx, void* coll, uint64_t bytes) {
  np::Event k = ev(np::Kind::kKernelCh, coll);
  k.channel = 0;
  void* kh = nullptr;
  np::startEvent(ctx, &kh, k);
  np::Event o = ev(np::Kind::kProxyOp, coll);
  o.pid = getpid();
  o.channel = 0;
  o.peer = 1;
  o.is_send = true;
  void* oh = nullptr;
  np::startEvent(ctx, &oh, o);
  np::Event st = ev(np::Kind::kProxyStep, oh);
  st.step = 0;
  void* sh = nullptr;
  np::startEvent(ctx, &sh, st);
  np::StateArgs a;
  a.trans_size = bytes;
  np::recordEventState(sh, 9, a);
  np::stopEvent(sh);
  np::stopEvent(oh);
  np::recordEventState(kh, 22, np::StateArgs{});
  np::stopEvent(kh);
}

// PXN (src/proxy.cc, src/plugin/profiler.cc ncclProfilerStartProxyOpEvent):
// a proxy op another process posted reaches this process's proxy with that
// process's context and parent. Here they point into a PROT_NONE page, so any
// read or write of them kills the child; a parent that looks like one of our
// own slot handles (the other process runs ringside too) must not be decoded.
TEST(NcclProfiler, PxnProxyOpsNeverTouchForeignPointers) {
  std::string dir = makeTempDir("nccl-profiler");
  int rc = inChild(dir, [] {
    int32_t comm = -1;
    void* ctx = wrappedComm(&comm);
    if (ctx == nullptr) return 10;
    long page = sysconf(_SC_PAGESIZE);
    void* guard = mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (guard == MAP_FAILED) return 11;
    auto* g = static_cast<char*>(guard);
    // One local call whose coll handle a foreign op will carry by accident.
    wrappedCall(comm, Op::kAllreduce, 7, 0x70);
    void* local_coll = collEvent(ctx, apiEvent(ctx, nullptr, 7, 0x70), 7);
    void* parents[] = {g + 64, g + 1, g + page - 7, local_coll, nullptr};
    pid_t pids[] = {getpid() + 1, 0};
    // The poster's context: an address of its own, or null (its plugin
    // declined init, or with pid 0 it loaded none).
    void* contexts[] = {g + 128, nullptr};
    int n = 0;
    for (void* foreign_ctx : contexts) {
      for (pid_t pid : pids) {
        for (void* parent : parents) {
          np::Event o = ev(np::Kind::kProxyOp, parent);
          o.pid = pid;
          o.rank = 3;
          o.channel = 5;
          o.peer = 6;
          o.is_send = (n % 2) == 0;
          o.chunk_size = 4096;
          void* oh = nullptr;
          // NCCL passes the other process's context: sub->profilerContext.
          np::startEvent(foreign_ctx, &oh, o);
          if (oh == nullptr) return 12;
          np::recordEventState(oh, 1, np::StateArgs{});
          for (int s = 0; s < 2; ++s) {
            np::Event st = ev(np::Kind::kProxyStep, oh);
            st.step = s;
            void* sh = nullptr;
            np::startEvent(foreign_ctx, &sh, st);
            np::StateArgs a;
            a.trans_size = 4096;
            np::recordEventState(sh, o.is_send ? 9 : 12, a);
            np::stopEvent(sh);
          }
          np::stopEvent(oh);
          ++n;
        }
      }
    }
    np::finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0) << "a foreign context or parent was dereferenced (signal " << rc - 128 << ")";
  std::string f = rankFile(dir);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(queryInt(f, "select count(*) from transfer where collective_id is null and channel = 5 and bytes = 4096"),
            40);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer where collective_id is not null"), 0);
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'nccl_profiler_events'"
                        " and value like '%pxn_remote=20 %' and value like '%stale_parent=0%'"),
            1);
}

// A group of 10,000 calls (an all-to-all over 10,000 peers): NCCL starts each
// call's collApi event inside the call, and every coll event in ncclGroupEnd,
// after all of them, naming its collApi event (src/enqueue.cc); the proxy and
// kernel-channel events come after the launch. The API pool (2048) and the
// coll pool (8192) are overrun: the calls whose slots were reused are counted
// stale, and no GPU row or transfer goes to another call.
TEST(NcclProfiler, GroupOfTenThousandCallsNeverMisattributes) {
  constexpr int kN = 10000, kApiPool = 2048, kCollPool = 8192;
  std::string dir = makeTempDir("nccl-profiler");
  int rc = inChild(dir, [] {
    int32_t comm = -1;
    void* ctx = wrappedComm(&comm);
    if (ctx == nullptr) return 10;
    np::Event ga = ev(np::Kind::kGroupApi, nullptr);
    ga.group_depth = 2;
    void* gapi = nullptr;
    np::startEvent(ctx, &gapi, ga);
    std::vector<void*> api(kN), coll(kN);
    batched(kN, [&](int i) {
      wrappedCall(comm, Op::kAllreduce, static_cast<uint64_t>(i), 0x100);
      api[i] = apiEvent(ctx, gapi, static_cast<uint64_t>(i), 0x100);
    });
    // ncclGroupEnd: the group event, every coll event, then the launch.
    np::Event ge = ev(np::Kind::kGroup, gapi);
    void* group = nullptr;
    np::startEvent(ctx, &group, ge);
    batched(kN, [&](int i) { coll[i] = collEvent(ctx, api[i], static_cast<uint64_t>(i)); });
    np::stopEvent(group);
    np::stopEvent(gapi);
    batched(kN, [&](int i) { proxyWork(ctx, coll[i], 1000 + static_cast<uint64_t>(i)); });
    np::finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string f = rankFile(dir);
  ASSERT_FALSE(f.empty());
  const int claimed = kApiPool;                 // the last 2048 API events kept their slots
  const int stale_api = kN - kApiPool;          // 7952
  const int stale_coll = kN - kCollPool;        // the first 1808 coll slots went to later calls
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data"), kN);
  // Every GPU row of a wrapped call was written by that call's own coll event.
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data c join collective_gpu_data g"
                        " on g.collective_id = c.id"),
            claimed);
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data c join collective_gpu_data g"
                        " on g.collective_id = c.id where g.channels != 1 + c.count % 61"),
            0);
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data c join collective_gpu_data g"
                        " on g.collective_id = c.id where g.gpu_start_ns is not null and g.stream = 256"
                        " and c.count >= 7952"),
            claimed);
  // The others' GPU side is kept apart (unmatched), under ids of its own.
  EXPECT_EQ(queryInt(f, "select count(*) from collective_gpu_data where collective_id not in"
                        " (select id from collective_data)"),
            stale_api);
  // Transfers: each under its own call or none.
  EXPECT_EQ(queryInt(f, "select count(*) from transfer t join collective_data c on t.collective_id = c.id"
                        " where t.bytes != 1000 + c.count"),
            0);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer t join collective_data c on t.collective_id = c.id"), claimed);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer where collective_id is null"), stale_coll);
  char counters[256];
  std::snprintf(counters, sizeof counters,
                "select count(*) from meta where key = 'nccl_profiler_events' and value like '%%claimed=%d %%'"
                " and value like '%%unmatched=%d %%' and value like '%%stale_parent=%d'",
                claimed, stale_api, stale_api + 2 * stale_coll);
  EXPECT_EQ(queryInt(f, counters), 1) << counters;
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'events_dropped' and value = '0'"), 1);
}

// A CUDA graph that captured a group: on every replay NCCL starts the
// captured calls' coll events again, naming the collApi events of the capture
// (src/enqueue.cc: hostStreamPlanCallback; src/plugin/profiler.cc
// ncclProfilerStartTaskEvents). Replays before the API pool is overrun go to
// the captured calls; 10,000 replays after 3,000 later calls are stale, and
// none lands on a later call.
TEST(NcclProfiler, GraphReplaysAfterPoolOverrunNeverMisattribute) {
  constexpr int kCaptured = 2, kEarly = 100, kLater = 3000, kReplays = 10000;
  std::string dir = makeTempDir("nccl-profiler");
  int rc = inChild(dir, [] {
    int32_t comm = -1;
    void* ctx = wrappedComm(&comm);
    if (ctx == nullptr) return 10;
    // Capture: one group of two calls.
    np::Event ga = ev(np::Kind::kGroupApi, nullptr);
    ga.group_depth = 2;
    void* gapi = nullptr;
    np::startEvent(ctx, &gapi, ga);
    void* captured[kCaptured];
    for (int k = 0; k < kCaptured; ++k) {
      wrappedCall(comm, Op::kAllreduce, 100000 + k, 0x200);
      captured[k] = apiEvent(ctx, gapi, 100000 + k, 0x200);
    }
    np::stopEvent(gapi);
    auto replay = [&] {
      np::Event ge = ev(np::Kind::kGroup, nullptr);
      void* group = nullptr;
      np::startEvent(ctx, &group, ge);
      void* colls[kCaptured];
      for (int k = 0; k < kCaptured; ++k) colls[k] = collEvent(ctx, captured[k], 100000 + k);
      np::stopEvent(group);
      for (int k = 0; k < kCaptured; ++k) proxyWork(ctx, colls[k], 500);
    };
    for (int r = 0; r < kEarly; ++r) replay();
    // Later calls, each on its own: more than the API pool holds.
    batched(kLater, [&](int j) {
      wrappedCall(comm, Op::kAllreduce, static_cast<uint64_t>(j), 0x300);
      void* a = apiEvent(ctx, nullptr, static_cast<uint64_t>(j), 0x300);
      proxyWork(ctx, collEvent(ctx, a, static_cast<uint64_t>(j)), 1000 + static_cast<uint64_t>(j));
    });
    batched(kReplays, [&](int) { replay(); });
    np::finalize(ctx);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string f = rankFile(dir);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data"), kCaptured + kLater);
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data c join collective_gpu_data g"
                        " on g.collective_id = c.id where g.channels != 1 + c.count % 61"),
            0);
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data c join collective_gpu_data g"
                        " on g.collective_id = c.id where g.stream = 768 and c.count < 3000"),
            kLater);
  EXPECT_EQ(queryInt(f, "select count(*) from collective_data c join collective_gpu_data g"
                        " on g.collective_id = c.id where g.stream = 512 and c.count >= 100000"),
            kCaptured);
  // The early replays' transfers went to the captured calls, the later calls'
  // to themselves; the stale replays' to ids of their own.
  EXPECT_EQ(queryInt(f, "select count(*) from transfer t join collective_data c on t.collective_id = c.id"
                        " where c.count >= 100000 and t.bytes = 500"),
            kEarly * kCaptured);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer t join collective_data c on t.collective_id = c.id"
                        " where c.count < 3000 and t.bytes != 1000 + c.count"),
            0);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer t join collective_data c on t.collective_id = c.id"
                        " where c.count < 3000"),
            kLater);
  char counters[256];
  std::snprintf(counters, sizeof counters,
                "select count(*) from meta where key = 'nccl_profiler_events' and value like '%%claimed=%d %%'"
                " and value like '%%unmatched=%d %%' and value like '%%stale_parent=%d'",
                kCaptured * kEarly + kLater, kCaptured * kReplays, kCaptured * kReplays);
  EXPECT_EQ(queryInt(f, counters), 1) << counters;
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'events_dropped' and value = '0'"), 1);
}

// Every kind of event NCCL may start with the null context a failed init
// leaves (NCCL logs "Continue without profiler" and goes on calling the
// plugin: src/plugin/profiler.cc ncclProfilerPluginInit), then state changes
// and stops on what came back.
int feedNullContext() {
  const np::Kind kinds[] = {np::Kind::kGroupApi, np::Kind::kCollApi,    np::Kind::kP2pApi, np::Kind::kGroup,
                            np::Kind::kColl,     np::Kind::kP2p,        np::Kind::kKernelLaunch,
                            np::Kind::kProxyOp,  np::Kind::kProxyStep,  np::Kind::kKernelCh,
                            np::Kind::kNetPlugin, np::Kind::kProxyCtrl, np::Kind::kCe};
  void* prev = nullptr;
  for (int round = 0; round < 3; ++round) {
    for (np::Kind k : kinds) {
      np::Event e = ev(k, prev);
      e.pid = getpid();
      e.op = Op::kAllreduce;
      void* h = reinterpret_cast<void*>(0x10);
      if (np::startEvent(nullptr, &h, e) != 0) return 20;
      if (h != nullptr) return 21;
      np::recordEventState(h, 22, np::StateArgs{});
      np::stopEvent(h);
      prev = h;
    }
  }
  return 0;
}

TEST(NcclProfiler, DeclinedInitThenNcclKeepsCalling) {
  // RINGSIDE_DISABLE: init fails, the collector never starts, no file.
  std::string dir = makeTempDir("nccl-profiler");
  int rc = inChild(dir, [] {
    setenv("RINGSIDE_DISABLE", "1", 1);
    void* ctx = reinterpret_cast<void*>(0x1);
    int mask = 0;
    if (np::init(5, &ctx, &mask, np::InitInfo{}) == 0 || ctx != nullptr) return 1;
    return feedNullContext();
  });
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(rankFile(dir).empty());
  // One communicator's init failed while another's worked (the collector is
  // active): the null context's events are recorded nowhere.
  std::string dir2 = makeTempDir("nccl-profiler");
  rc = inChild(dir2, [] {
    int32_t comm = -1;
    void* ctx = wrappedComm(&comm);
    if (ctx == nullptr) return 10;
    if (int r = feedNullContext(); r != 0) return r;
    np::finalize(ctx);
    return 0;
  });
  EXPECT_EQ(rc, 0);
  std::string f = rankFile(dir2);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(queryInt(f, "select count(*) from collective_gpu_data"), 0);
  EXPECT_EQ(queryInt(f, "select count(*) from transfer"), 0);
  EXPECT_EQ(queryInt(f, "select count(*) from meta where key = 'nccl_profiler_events' and value like '%unknown=36 %'"),
            1);
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
