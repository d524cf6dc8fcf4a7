#include "feed.h"

#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "profiler_abi.h"

namespace fake_nccl::feed {
namespace {

using namespace fake_nccl::prof;

template <class T>
const T* tab(const Plugin& p) {
  return static_cast<const T*>(p.table);
}

bool wants(const Plugin& p, uint64_t type) { return p.version > 0 && (static_cast<uint64_t>(p.mask) & type) != 0; }

// One descriptor buffer big enough for every version, zeroed.
union AnyDescr {
  Descr_v1 v1;
  Descr_v2 v2;
  Descr_v3 v3;
  Descr_v4 v4;
  Descr_v5 v5;
};

void* start(const Plugin& p, void* ctx, AnyDescr& d) {
  void* h = nullptr;
  switch (p.version) {
    case 1: tab<Table_v1>(p)->startEvent(ctx, &h, &d.v1); break;
    case 2: tab<Table_v2>(p)->startEvent(ctx, &h, &d.v2); break;
    case 3: tab<Table_v3>(p)->startEvent(ctx, &h, &d.v3); break;
    case 4: tab<Table_v4>(p)->startEvent(ctx, &h, &d.v4); break;
    case 5: tab<Table_v5>(p)->startEvent(ctx, &h, &d.v5); break;
    case 6: tab<Table_v6>(p)->startEvent(ctx, &h, &d.v5); break;
    default: break;
  }
  return h;
}

void stop(const Plugin& p, void* h) {
  if (h == nullptr) return;
  // stopEvent has one signature in every version.
  tab<Table_v1>(p)->stopEvent(h);
}

// State with a size (proxy ops v1–v3, proxy steps v4+) or a GPU timer (kernel channels v4+).
void state(const Plugin& p, void* h, int st, size_t size, uint64_t timer) {
  if (h == nullptr) return;
  if (p.version <= 3) {
    Args_v1 a;
    std::memset(&a, 0, sizeof a);
    a.proxyOp.transSize = size;
    if (p.version == 1) tab<Table_v1>(p)->recordEventState(h, st, &a);
    if (p.version == 2) tab<Table_v2>(p)->recordEventState(h, st, &a);
    if (p.version == 3) tab<Table_v3>(p)->recordEventState(h, st, &a);
  } else if (p.version == 4) {
    Args_v4 a;
    std::memset(&a, 0, sizeof a);
    if (st == KernelChStop) a.kernelCh.pTimer = timer; else a.proxyStep.transSize = size;
    tab<Table_v4>(p)->recordEventState(h, st, &a);
  } else {
    Args_v5 a;
    std::memset(&a, 0, sizeof a);
    if (st == KernelChStop) a.kernelCh.pTimer = timer; else a.proxyStep.transSize = size;
    (p.version == 5 ? tab<Table_v5>(p)->recordEventState : tab<Table_v6>(p)->recordEventState)(h, st, &a);
  }
}

// The common head (type, parent, rank) sits at the same offsets in every version
// except for the width of `type`.
void head(const Plugin& p, AnyDescr& d, uint64_t type, void* parent, int rank) {
  std::memset(&d, 0, sizeof d);
  if (p.version >= 5) {
    d.v5.type = type;
    d.v5.parentObj = parent;
    d.v5.rank = rank;
  } else {
    d.v1.type = static_cast<uint8_t>(type);
    d.v1.parentObj = parent;
    d.v1.rank = rank;
  }
}

uint8_t funcV1(const char* f) {
  static const char* kNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
                                 "SendRecv", "Send", "Recv"};
  for (uint8_t i = 0; i < 8; ++i)
    if (std::strcmp(f, kNames[i]) == 0) return i;
  return 255;
}
uint8_t algoV1(const char* a) { return std::strcmp(a, "Tree") == 0 ? 0 : std::strcmp(a, "Ring") == 0 ? 1 : 6; }
uint8_t protoV1(const char* p) {
  return std::strcmp(p, "LL") == 0 ? 0 : std::strcmp(p, "LL128") == 0 ? 1 : 2;
}

void* startProxyOp(const Plugin& p, void* ctx, void* parent, int rank, int channel, int peer, int steps, int chunk,
                   bool send, pid_t pid) {
  AnyDescr d;
  head(p, d, ProxyOp, parent, rank);
  // proxyOp has the same layout in every version
  auto& o = d.v1.proxyOp;
  o.pid = pid;
  o.channelId = static_cast<uint8_t>(channel);
  o.peer = peer;
  o.nSteps = steps;
  o.chunkSize = chunk;
  o.isSend = send ? 1 : 0;
  return start(p, ctx, d);
}

void* startStep(const Plugin& p, void* ctx, void* parent, int rank, int step) {
  AnyDescr d;
  head(p, d, ProxyStep, parent, rank);
  d.v1.proxyStep.step = step;
  return start(p, ctx, d);
}

void* startKernelCh(const Plugin& p, void* ctx, void* parent, int rank, int channel, uint64_t timer) {
  AnyDescr d;
  head(p, d, KernelCh, parent, rank);
  if (p.version == 3) d.v3.kernelCh.channelId = static_cast<uint8_t>(channel);
  if (p.version == 4) {
    d.v4.kernelCh.channelId = static_cast<uint8_t>(channel);
    d.v4.kernelCh.pTimer = timer;
  }
  if (p.version >= 5) {
    d.v5.kernelCh.channelId = static_cast<uint8_t>(channel);
    d.v5.kernelCh.pTimer = timer;
  }
  return start(p, ctx, d);
}

void* startTask(const Plugin& p, void* ctx, const Op& op, void* api, void* group) {
  AnyDescr d;
  uint64_t type = op.p2p ? P2p : Coll;
  void* parent = p.version >= 5 ? api : group;
  head(p, d, type, parent, op.rank);
  switch (p.version) {
    case 1:
      if (op.p2p) {
        d.v1.p2p = {"fake", op.comm_hash, funcV1(op.func), op.recvbuff, static_cast<uint8_t>(op.dtype), op.count, op.peer};
      } else {
        auto& c = d.v1.coll;
        c.name = "fake"; c.commHash = op.comm_hash; c.seqNumber = op.seq; c.func = funcV1(op.func);
        c.sendBuff = op.sendbuff; c.recvBuff = op.recvbuff; c.count = op.count; c.root = op.root;
        c.datatype = static_cast<uint8_t>(op.dtype); c.op = 0; c.trafficBytes = op.bytes;
        c.nMaxChannels = static_cast<uint8_t>(op.channels); c.nWarps = 16; c.algo = algoV1(op.algo);
        c.proto = protoV1(op.proto);
      }
      break;
    case 2:
      if (op.p2p) {
        d.v2.p2p = {"fake", op.comm_hash, op.func, op.recvbuff, op.dtype_name, op.count, op.peer};
      } else {
        auto& c = d.v2.coll;
        c.name = "fake"; c.commHash = op.comm_hash; c.seqNumber = op.seq; c.func = op.func;
        c.sendBuff = op.sendbuff; c.recvBuff = op.recvbuff; c.count = op.count; c.root = op.root;
        c.datatype = op.dtype_name; c.trafficBytes = op.bytes; c.nMaxChannels = static_cast<uint8_t>(op.channels);
        c.nWarps = 16; c.algo = op.algo; c.proto = op.proto;
      }
      break;
    case 3:
      if (op.p2p) {
        d.v3.p2p = {"fake", op.comm_hash, op.func, op.recvbuff, op.dtype_name, op.count, op.peer};
      } else {
        auto& c = d.v3.coll;
        c.name = "fake"; c.commHash = op.comm_hash; c.seqNumber = op.seq; c.func = op.func;
        c.sendBuff = op.sendbuff; c.recvBuff = op.recvbuff; c.count = op.count; c.root = op.root;
        c.datatype = op.dtype_name; c.nMaxChannels = static_cast<uint8_t>(op.channels); c.nWarps = 16;
        c.algo = op.algo; c.proto = op.proto;
      }
      break;
    case 4:
      if (op.p2p) {
        d.v4.p2p = {op.func, op.recvbuff, op.dtype_name, op.count, op.peer, static_cast<uint8_t>(op.channels)};
      } else {
        auto& c = d.v4.coll;
        c.seqNumber = op.seq; c.func = op.func; c.sendBuff = op.sendbuff; c.recvBuff = op.recvbuff;
        c.count = op.count; c.root = op.root; c.datatype = op.dtype_name;
        c.nChannels = static_cast<uint8_t>(op.channels); c.nWarps = 16; c.algo = op.algo; c.proto = op.proto;
      }
      break;
    default:
      if (op.p2p) {
        d.v5.p2p = {op.func, op.recvbuff, op.dtype_name, op.count, op.peer, static_cast<uint8_t>(op.channels), group};
      } else {
        auto& c = d.v5.coll;
        c.seqNumber = op.seq; c.func = op.func; c.sendBuff = op.sendbuff; c.recvBuff = op.recvbuff;
        c.count = op.count; c.root = op.root; c.datatype = op.dtype_name;
        c.nChannels = static_cast<uint8_t>(op.channels); c.nWarps = 16; c.algo = op.algo; c.proto = op.proto;
        c.parentGroup = group;
      }
      break;
  }
  return start(p, ctx, d);
}

void noLog(int, unsigned long, const char*, int, const char*, ...) {}

}  // namespace

uint64_t gpuTimerNow() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool fromHandle(void* dl, int version, Plugin* out) {
  char sym[32];
  std::snprintf(sym, sizeof sym, "ncclProfiler_v%d", version);
  void* t = dlsym(dl, sym);
  if (t == nullptr) return false;
  out->version = version;
  out->table = t;
  out->mask = 0;
  return true;
}

bool load(const char* spec, int max_version, Plugin* out, std::string* err) {
  if (spec == nullptr || spec[0] == '\0') return false;
  std::string name = spec;
  if (name.find('/') == std::string::npos) name = "libnccl-profiler-" + name + ".so";
  void* dl = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) {
    *err = dlerror();
    return false;
  }
  for (int v = max_version; v >= 1; --v)
    if (fromHandle(dl, v, out)) return true;
  *err = "no ncclProfiler_vN symbol";
  return false;
}

void* init(Plugin& p, uint64_t hash, const char* name, int nnodes, int nranks, int rank, bool* ok) {
  void* ctx = nullptr;
  int mask = 0;
  int r = -1;
  switch (p.version) {
    case 1: r = tab<Table_v1>(p)->init(&ctx, &mask); break;
    case 2: r = tab<Table_v2>(p)->init(&ctx, &mask); break;
    case 3: r = tab<Table_v3>(p)->init(&ctx, &mask); break;
    case 4: r = tab<Table_v4>(p)->init(&ctx, &mask, name, hash, nnodes, nranks, rank, noLog); break;
    case 5: r = tab<Table_v5>(p)->init(&ctx, hash, &mask, name, nnodes, nranks, rank, noLog); break;
    case 6: r = tab<Table_v6>(p)->init(&ctx, hash, &mask, name, nnodes, nranks, rank, noLog); break;
    default: break;
  }
  *ok = r == 0;
  if (r == 0) p.mask |= mask;
  return ctx;
}

void finalize(Plugin& p, void* ctx) {
  if (p.version > 0) tab<Table_v1>(p)->finalize(ctx);
}

void* groupApiStart(Plugin& p, void* ctx, int depth) {
  if (p.version < 5 || !wants(p, GroupApi)) return nullptr;
  AnyDescr d;
  head(p, d, GroupApi, nullptr, 0);
  d.v5.groupApi.groupDepth = depth;
  return start(p, ctx, d);
}

void groupApiStop(Plugin& p, void* h) {
  if (p.version >= 5) stop(p, h);
}

void* apiEvent(Plugin& p, void* ctx, void* group_api, const Op& op) {
  if (p.version < 5) return nullptr;
  uint64_t type = op.p2p ? P2pApi : CollApi;
  if (!wants(p, type)) return nullptr;
  AnyDescr d;
  head(p, d, type, group_api, op.rank);
  if (op.p2p) {
    d.v5.p2pApi = {op.func, op.count, op.dtype_name, op.stream, false};
  } else {
    d.v5.collApi = {op.func, op.count, op.dtype_name, op.root, op.stream, false};
  }
  void* h = start(p, ctx, d);
  stop(p, h);  // stopped when the API call returns; still the coll's parent later
  return h;
}

void* groupStart(Plugin& p, void* ctx, void* group_api, int rank) {
  if (!wants(p, Group)) return nullptr;
  AnyDescr d;
  head(p, d, Group, p.version >= 5 ? group_api : nullptr, rank);
  return start(p, ctx, d);
}

void groupStop(Plugin& p, void* h) { stop(p, h); }

void* taskEvent(Plugin& p, void* ctx, const Op& op, void* api, void* group) {
  if (p.version == 0) return nullptr;
  void* task = wants(p, op.p2p ? P2p : Coll) ? startTask(p, ctx, op, api, group) : nullptr;
  if (p.version >= 5 && wants(p, KernelLaunch)) {
    AnyDescr d;
    head(p, d, KernelLaunch, api, op.rank);
    d.v5.kernelLaunch.stream = op.stream;
    stop(p, start(p, ctx, d));
  }
  // Enqueued: NCCL stops the task event here, before any of its GPU work.
  stop(p, task);
  return task;
}

void runOp(Plugin& p, void* ctx, const Op& op, void* api, void* group, const std::function<void()>& work) {
  if (p.version == 0) {
    work();
    return;
  }
  taskWork(p, ctx, op, taskEvent(p, ctx, op, api, group), work);
}

void taskWork(Plugin& p, void* ctx, const Op& op, void* task_handle, const std::function<void()>& work) {
  if (p.version == 0) {
    work();
    return;
  }
  int channels = op.channels > 0 ? op.channels : 1;
  void* kch[64] = {};
  if (p.version >= 3 && wants(p, KernelCh))
    for (int c = 0; c < channels && c < 64; ++c)
      kch[c] = startKernelCh(p, ctx, task_handle, op.rank, c, gpuTimerNow());

  // Between ranks, every channel's proxy sends to one peer and receives from another.
  if (op.nranks > 1 && wants(p, ProxyOp)) {
    int next = op.p2p ? op.peer : (op.rank + 1) % op.nranks;
    int prev = op.p2p ? op.peer : (op.rank + op.nranks - 1) % op.nranks;
    bool do_send = !op.p2p || std::strcmp(op.func, "Send") == 0;
    bool do_recv = !op.p2p || std::strcmp(op.func, "Recv") == 0;
    size_t per_step = op.bytes / static_cast<size_t>(channels * op.steps);
    if (per_step == 0) per_step = 1;
    for (int c = 0; c < channels; ++c) {
      for (int dir = 0; dir < 2; ++dir) {
        bool send = dir == 0;
        if ((send && !do_send) || (!send && !do_recv)) continue;
        void* po = startProxyOp(p, ctx, task_handle, op.rank, c, send ? next : prev, op.steps,
                                static_cast<int>(per_step), send, getpid());
        if (p.version <= 3) state(p, po, send ? ProxyOpSendPosted : ProxyOpRecvPosted, 0, 0);
        if (p.version >= 4) state(p, po, ProxyOpInProgress_v4, 0, 0);
        for (int s = 0; s < op.steps; ++s) {
          void* st = wants(p, ProxyStep) ? startStep(p, ctx, po, op.rank, s) : nullptr;
          if (send) {
            state(p, st, ProxyStepSendGPUWait, per_step, 0);
            state(p, st, ProxyStepSendWait, per_step, 0);
          } else {
            state(p, st, ProxyStepRecvWait, per_step, 0);
            state(p, st, ProxyStepRecvGPUWait, per_step, 0);
          }
          stop(p, st);
        }
        if (p.version <= 3) state(p, po, send ? ProxyOpSendDone : ProxyOpRecvDone, per_step * op.steps, 0);
        stop(p, po);
      }
    }
  }
  work();
  for (int c = 0; c < channels && c < 64; ++c) {
    if (kch[c] == nullptr) continue;
    if (p.version >= 4) state(p, kch[c], KernelChStop, 0, gpuTimerNow());
    else state(p, kch[c], KernelChStop, 0, 0);
    stop(p, kch[c]);
  }
}

void pxnProxyOp(Plugin& p, void* foreign_ctx, void* foreign_parent, pid_t pid, int rank, int channel, int peer,
                bool send, int steps, size_t bytes_per_step) {
  if (p.version == 0 || !wants(p, ProxyOp)) return;
  void* po = startProxyOp(p, foreign_ctx, foreign_parent, rank, channel, peer, steps, static_cast<int>(bytes_per_step),
                          send, pid);
  if (p.version <= 3) state(p, po, send ? ProxyOpSendPosted : ProxyOpRecvPosted, 0, 0);
  if (p.version >= 4) state(p, po, ProxyOpInProgress_v4, 0, 0);
  for (int s = 0; s < steps; ++s) {
    // NCCL starts the steps with the op's own handle and the op's context.
    void* st = wants(p, ProxyStep) ? startStep(p, foreign_ctx, po, rank, s) : nullptr;
    state(p, st, send ? ProxyStepSendWait : ProxyStepRecvGPUWait, bytes_per_step, 0);
    stop(p, st);
  }
  if (p.version <= 3) state(p, po, send ? ProxyOpSendDone : ProxyOpRecvDone, bytes_per_step * steps, 0);
  stop(p, po);
}

}  // namespace fake_nccl::feed
