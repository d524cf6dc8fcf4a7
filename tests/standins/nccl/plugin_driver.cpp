// Loads a profiler plugin (ringside's libringside_preload.so) as NCCL does and
// feeds it one fixed sequence of NCCL events through interface version N,
// with no NCCL and no wrapper: what the plugin records on its own.
//
//   plugin_driver PLUGIN.so VERSION [MODE]
//
// MODE (default `sequence`):
//   sequence  the fixed sequence below
//   pxn       proxy ops another process posted (PXN), with a foreign pid and
//             with pid 0, whose context and parent point into a PROT_NONE
//             page (any access kills the driver), also with a parent that is
//             one of this process's own coll handles
//   group     one group of 10,000 all-reduces: (v5+) every API event inside
//             its call, then every coll event (ncclGroupEnd), then each
//             one's kernel channel and proxy ops (the launch)
//   graph     (v5+) a captured group of 2 calls replayed 10 times, 3,000
//             later calls, then 10,000 replays naming the capture's API events
//   declined  NCCL going on after a failed init: every event of the sequence
//             started with a null context (init declined under
//             RINGSIDE_DISABLE; else a second communicator's null context)
// Calls of `group` and `graph` tell which they are: count = call number,
// stream (v5+) = count + 1 (captured calls: 0x5000 + k), coll channels =
// 1 + count % 61, proxy step bytes = 1000 + count.
//
// The sequence (rank 0 of 2, communicator hash 0x00c0ffee12345678), in the
// order NCCL 2.28 produces it:
//   1. ncclAllReduce 1024 f32, Ring/Simple, 2 channels
//   2. ncclGroupStart; ncclSend 256 f32 to 1; ncclRecv 256 f32 from 1; ncclGroupEnd
//   3. ncclBroadcast 64 f32 root 1, Tree/LL, 2 channels
// each with its proxy ops and steps (2 per channel and direction) and kernel
// channels.
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "feed.h"

namespace feed = fake_nccl::feed;

namespace {

// Runs f(0) ... f(n-1) in order, 500 at a time on a thread of its own (each
// thread has its own event ring in the collector: a burst of tens of
// thousands of events is not dropped for a full ring).
template <class F>
void batched(int n, F f) {
  for (int first = 0; first < n; first += 500) {
    std::thread t([&] {
      for (int i = first; i < n && i < first + 500; ++i) f(i);
    });
    t.join();
  }
}

feed::Op numbered(uint64_t hash, uint64_t count, uint64_t stream) {
  feed::Op o;
  o.func = "AllReduce";
  o.count = count;
  o.stream = reinterpret_cast<void*>(stream);
  o.comm_hash = hash;
  o.seq = count;
  o.rank = 0;
  o.nranks = 2;
  o.channels = 1 + static_cast<int>(count % 61);
  o.algo = "Ring";
  o.proto = "Simple";
  o.steps = 1;
  return o;
}

// The launch of a numbered call: one kernel channel, a send and a recv proxy
// op of one step of 1000 + count bytes.
void launch(feed::Plugin& p, void* ctx, const feed::Op& o, void* task) {
  feed::Op w = o;
  w.channels = 1;
  w.bytes = 1000 + o.count;
  feed::taskWork(p, ctx, w, task, [] {});
}

int runPxn(feed::Plugin& p, void* ctx, uint64_t hash) {
  long page = sysconf(_SC_PAGESIZE);
  void* guard = mmap(nullptr, static_cast<size_t>(page), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (guard == MAP_FAILED) return 3;
  char* g = static_cast<char*>(guard);
  // One local call, whose coll handle a foreign op carries by accident.
  feed::Op local = numbered(hash, 7, 8);
  void* api = feed::apiEvent(p, ctx, nullptr, local);
  void* task = feed::taskEvent(p, ctx, local, api, nullptr);
  void* parents[] = {g + 64, g + 1, g + page - 7, task, nullptr};
  pid_t pids[] = {getpid() + 1, 0};
  int n = 0;
  for (pid_t pid : pids)
    for (void* parent : parents) {
      feed::pxnProxyOp(p, g + 128, parent, pid, 3, 5, 6, n % 2 == 0, 2, 4096);
      ++n;
    }
  std::printf("pxn ops: %d\n", n);
  return 0;
}

int runGroup(feed::Plugin& p, void* ctx, uint64_t hash) {
  constexpr int kN = 10000;
  std::vector<feed::Op> ops(kN);
  std::vector<void*> api(kN), task(kN);
  for (int i = 0; i < kN; ++i) ops[i] = numbered(hash, static_cast<uint64_t>(i), static_cast<uint64_t>(i) + 1);
  void* gapi = feed::groupApiStart(p, ctx, 2);
  batched(kN, [&](int i) { api[i] = feed::apiEvent(p, ctx, gapi, ops[i]); });
  void* group = feed::groupStart(p, ctx, gapi, 0);
  batched(kN, [&](int i) { task[i] = feed::taskEvent(p, ctx, ops[i], api[i], group); });
  feed::groupStop(p, group);
  feed::groupApiStop(p, gapi);
  batched(kN, [&](int i) { launch(p, ctx, ops[i], task[i]); });
  return 0;
}

int runGraph(feed::Plugin& p, void* ctx, uint64_t hash) {
  if (p.version < 5) return 0;  // before v5 a replay's coll events name the replay's group
  constexpr int kCaptured = 2, kEarly = 10, kLater = 3000, kReplays = 10000;
  feed::Op cap[kCaptured];
  void* cap_api[kCaptured];
  void* gapi = feed::groupApiStart(p, ctx, 2);
  for (int k = 0; k < kCaptured; ++k) {
    cap[k] = numbered(hash, 100000 + static_cast<uint64_t>(k), 0x5000 + static_cast<uint64_t>(k));
    cap_api[k] = feed::apiEvent(p, ctx, gapi, cap[k]);
  }
  feed::groupApiStop(p, gapi);
  auto replay = [&](int) {
    void* group = feed::groupStart(p, ctx, nullptr, 0);
    void* t[kCaptured];
    for (int k = 0; k < kCaptured; ++k) t[k] = feed::taskEvent(p, ctx, cap[k], cap_api[k], group);
    feed::groupStop(p, group);
    for (int k = 0; k < kCaptured; ++k) launch(p, ctx, cap[k], t[k]);
  };
  batched(kEarly, replay);
  batched(kLater, [&](int j) {
    feed::Op o = numbered(hash, static_cast<uint64_t>(j), static_cast<uint64_t>(j) + 1);
    void* ga = feed::groupApiStart(p, ctx, 1);
    void* a = feed::apiEvent(p, ctx, ga, o);
    void* group = feed::groupStart(p, ctx, ga, 0);
    void* t = feed::taskEvent(p, ctx, o, a, group);
    feed::groupStop(p, group);
    feed::groupApiStop(p, ga);
    launch(p, ctx, o, t);
  });
  batched(kReplays, replay);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plugin_driver PLUGIN.so VERSION [sequence|pxn|group|graph|declined]\n");
    return 2;
  }
  void* dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    std::fprintf(stderr, "plugin_driver: %s\n", dlerror());
    return 2;
  }
  feed::Plugin p;
  if (!feed::fromHandle(dl, std::atoi(argv[2]), &p)) {
    std::fprintf(stderr, "plugin_driver: no ncclProfiler_v%s\n", argv[2]);
    return 2;
  }
  const uint64_t hash = 0x00c0ffee12345678ull;
  const std::string mode = argc > 3 ? argv[3] : "sequence";
  bool ok = false;
  void* ctx = feed::init(p, hash, "driver", 1, 2, 0, &ok);
  if (mode == "declined") {
    // NCCL logs "Continue without profiler" and goes on calling the plugin
    // with the context the failed init left (null), with the event mask
    // another communicator's init set (here: everything).
    if (ok) {
      bool ok2 = false;
      feed::init(p, hash + 1, "driver-ok", 1, 2, 0, &ok2);  // the communicator whose init worked
    }
    ctx = nullptr;
    p.mask = ~0;
    std::printf("init %s\n", ok ? "accepted" : "declined");
  } else if (!ok) {
    std::fprintf(stderr, "plugin_driver: init failed\n");
    return 1;
  }
  int rc = 0;
  if (mode == "pxn") rc = runPxn(p, ctx, hash);
  if (mode == "group") rc = runGroup(p, ctx, hash);
  if (mode == "graph") rc = runGraph(p, ctx, hash);
  if (mode == "pxn" || mode == "group" || mode == "graph") {
    feed::finalize(p, ctx);
    std::printf("plugin_driver %s done\n", mode.c_str());
    return rc;
  }
  if (mode != "sequence" && mode != "declined") {
    std::fprintf(stderr, "plugin_driver: unknown mode %s\n", mode.c_str());
    return 2;
  }
  static float buf[1024];
  auto op = [&](const char* func, bool p2p, size_t count, int root, int peer, uint64_t seq, const char* algo,
                const char* proto) {
    feed::Op o;
    o.p2p = p2p;
    o.func = func;
    o.count = count;
    o.root = root;
    o.peer = peer;
    o.stream = reinterpret_cast<void*>(0xabc);
    o.comm_hash = hash;
    o.seq = seq;
    o.rank = 0;
    o.nranks = 2;
    o.bytes = count * 4;
    o.channels = 2;
    o.algo = algo;
    o.proto = proto;
    o.sendbuff = buf;
    o.recvbuff = buf;
    return o;
  };
  auto single = [&](const feed::Op& o) {
    void* gapi = feed::groupApiStart(p, ctx, 1);
    void* api = feed::apiEvent(p, ctx, gapi, o);
    void* g = feed::groupStart(p, ctx, gapi, 0);
    feed::runOp(p, ctx, o, api, g, [] {});
    feed::groupStop(p, g);
    feed::groupApiStop(p, gapi);
  };
  single(op("AllReduce", false, 1024, -1, -1, 0, "Ring", "Simple"));
  {
    feed::Op s = op("Send", true, 256, -1, 1, 0, "Ring", "Simple");
    feed::Op r = op("Recv", true, 256, -1, 1, 0, "Ring", "Simple");
    void* gapi = feed::groupApiStart(p, ctx, 2);
    void* sa = feed::apiEvent(p, ctx, gapi, s);
    void* ra = feed::apiEvent(p, ctx, gapi, r);
    void* g = feed::groupStart(p, ctx, gapi, 0);
    feed::runOp(p, ctx, s, sa, g, [] {});
    feed::runOp(p, ctx, r, ra, g, [] {});
    feed::groupStop(p, g);
    feed::groupApiStop(p, gapi);
  }
  single(op("Broadcast", false, 64, 1, -1, 1, "Tree", "LL"));
  if (mode == "declined") {
    std::puts("plugin_driver declined done");
    return 0;  // NCCL finalizes only a context it has
  }
  feed::finalize(p, ctx);
  std::puts("plugin_driver done");
  return 0;
}
