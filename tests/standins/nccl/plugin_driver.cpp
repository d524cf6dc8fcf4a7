// Loads a profiler plugin (ringside's libringside_preload.so) as NCCL does and
// feeds it one fixed sequence of NCCL events through interface version N,
// with no NCCL and no wrapper: what the plugin records on its own.
//
//   plugin_driver PLUGIN.so VERSION
//
// The sequence (rank 0 of 2, communicator hash 0x00c0ffee12345678), in the
// order NCCL 2.28 produces it:
//   1. ncclAllReduce 1024 f32, Ring/Simple, 2 channels
//   2. ncclGroupStart; ncclSend 256 f32 to 1; ncclRecv 256 f32 from 1; ncclGroupEnd
//   3. ncclBroadcast 64 f32 root 1, Tree/LL, 2 channels
// each with its proxy ops and steps (2 per channel and direction) and kernel
// channels.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "feed.h"

namespace feed = fake_nccl::feed;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plugin_driver PLUGIN.so VERSION\n");
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
  bool ok = false;
  void* ctx = feed::init(p, hash, "driver", 1, 2, 0, &ok);
  if (!ok) {
    std::fprintf(stderr, "plugin_driver: init failed\n");
    return 1;
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
  feed::finalize(p, ctx);
  std::puts("plugin_driver done");
  return 0;
}
