// The NCCL profiler plugin's event model (nccl_profiler.h): handles for the
// events NCCL starts, what they turn into when they stop.
//
// Handles are reference counted: a child event (proxy op, proxy step, kernel
// channel) holds its parent, and a parent is finished (its GPU times written)
// only when NCCL stopped it and every child is gone. NCCL stops a coll event
// when the call is enqueued, long before its GPU work ends; the reference
// count is what tells us the collective is done.
//
// Times: every host time is collector::nowNs() taken in the callback (NCCL's
// proxy thread observes the events it reports, so these are observation
// times); GPU timers go through nccl_link::gpuTimerToHostNs, the one place.
#include "nccl_profiler.h"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "nccl_link.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"

namespace ringside::interpose::nccl_profiler {
namespace {

namespace col = ringside::collector;
namespace link = nccl_link;
using link::PluginComm;

constexpr int kSuccess = 0;
constexpr int kInternalError = 3;

// ---- handles ----
struct Handle {
  Kind kind = Kind::kUnknown;
  bool pooled = false;        // API events: never freed (see ApiH)
  std::atomic<int> refs{1};   // 1 for "not stopped yet", +1 per live child
  Handle* parent = nullptr;   // held (refs) while this handle lives
  PluginComm* pc = nullptr;
  virtual ~Handle() = default;
};

struct GroupH : Handle {
  uint64_t group_plus_one = 0;  // group id + 1 when it is a user's group (v5: groupApi depth > 1)
  bool user_group = false;
  std::mutex mutex;             // children ids (a group's calls may be started on several threads)
  uint64_t ids[64] = {};
  int n = 0;
  bool v4_style = false;        // v1–v4 group: every op is in one; user groups known only by size
};

// v5+ API events. NCCL stops a collApi event when the API call returns, but
// the coll event it parents is started later (in ncclGroupEnd, perhaps on
// another thread) and still points at it. So API handles are never freed:
// they come from a ring of slots reused in order, long after any coll event
// could still name them.
struct ApiH : Handle {
  link::Pending call;  // the wrapped call it claimed (call.id == 0: none)
  uint64_t group_plus_one = 0;
  uint64_t stream = 0;
};
constexpr uint64_t kApiPool = 2048;
ApiH g_api_pool[kApiPool];
std::atomic<uint64_t> g_api_next{0};

// coll/p2p events. NCCL stops them when the call is enqueued and keeps naming
// them afterwards as the parent of proxy-op and kernel-channel events, so,
// like API handles, they are never freed: a ring of slots reused in order.
// The call's GPU span is written when its first and its last channel stop.
struct CollH : Handle {
  uint64_t id = 0;
  int32_t comm = -1;
  col::Op op = col::Op::kUnknown;
  col::Algorithm algorithm = col::Algorithm::kDefault;
  int channels = -1;
  std::atomic<int64_t> gpu_start{INT64_MAX};
  std::atomic<int64_t> gpu_end{INT64_MIN};
  std::atomic<int> channels_done{0};
  bool own = false;        // no wrapped call claimed: the plugin writes the collective itself
  col::Event own_event;    // its kCollective, written when NCCL stops the event (enqueued)
};
constexpr uint64_t kCollPool = 8192;  // calls NCCL may still be working on; ~1.5 MiB
CollH g_coll_pool[kCollPool];
std::atomic<uint64_t> g_coll_next{0};

struct ProxyOpH : Handle {
  CollH* coll = nullptr;  // the coll/p2p it belongs to (nullptr: unknown, e.g. PXN)
  int32_t comm = -1;
  int peer = -1;
  int channel = -1;
  bool send = false;
  int chunk = 0;
  col::Phase phase = col::Phase::kNone;
};

struct ProxyStepH : Handle {
  ProxyOpH* op = nullptr;
  int step = -1;
  int64_t t_start = 0;
  int64_t t_wire = 0;     // send: handed to the network (SendWait)
  int64_t t_arrived = 0;  // recv: the data arrived (RecvFlushWait / RecvGPUWait)
  std::atomic<uint64_t> bytes{0};
};

struct KernelChH : Handle {
  CollH* coll = nullptr;
  int64_t start = 0;   // host clock
  int64_t stop = 0;
};

void addRef(Handle* h) {
  if (h != nullptr && !h->pooled) h->refs.fetch_add(1, std::memory_order_relaxed);
}

void finish(Handle* h);

void release(Handle* h) {
  while (h != nullptr) {
    if (h->pooled || h->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    finish(h);
    Handle* parent = h->parent;
    delete h;
    h = parent;  // the child's reference on its parent
  }
}

void minStore(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
void maxStore(std::atomic<int64_t>& a, int64_t v) {
  int64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

// ---- communicators ----
std::mutex g_own_mutex;  // registering communicators the wrapper never saw

// The collector communicator of a plugin context: bound by the wrapper, found
// by NCCL's hash, or registered here from what NCCL told the plugin.
int32_t commOf(PluginComm* pc, uint64_t hash_hint, int rank_hint) {
  if (pc == nullptr) return -1;
  int32_t c = pc->comm.load(std::memory_order_acquire);
  if (c >= 0) return c;
  std::lock_guard<std::mutex> lock(g_own_mutex);
  c = pc->comm.load(std::memory_order_acquire);
  if (c >= 0) return c;
  if (pc->nccl_hash == 0) pc->nccl_hash = hash_hint;
  c = link::commForNcclHash(pc->nccl_hash);
  if (c < 0) {
    char name[48];
    std::snprintf(name, sizeof name, "nccl/%016llx", static_cast<unsigned long long>(pc->nccl_hash));
    int32_t rank = pc->rank >= 0 ? pc->rank : rank_hint;
    c = col::registerCommNamed(pc, rank, pc->nranks, "nccl", name);
    if (c < 0) return c;
    if (rank >= 0 && pc->nranks > 0) link::maybeSetIdentity(rank, pc->nranks);
    col::noteCommCreated(c, -1, col::nowNs());
    if (pc->nnodes > 0) {
      char line[48];
      std::snprintf(line, sizeof line, "nodes: %d", pc->nnodes);
      col::noteCommTopology(c, line);
    }
    link::noteNcclHash(pc->nccl_hash, c);
  }
  pc->comm.store(c, std::memory_order_release);
  return c;
}

// ---- ring order, as far as the proxy shows it ----
// A ring channel's proxy sends to the next rank and receives from the
// previous one; once both are seen, "ring <channel>: prev -> me -> next".
constexpr int kRingComms = 256, kRingChannels = 64;
std::atomic<int32_t> g_ring_prev[kRingComms][kRingChannels];  // peer + 1 (0 unknown)
std::atomic<int32_t> g_ring_next[kRingComms][kRingChannels];
std::atomic<bool> g_ring_noted[kRingComms][kRingChannels];

void noteRingPeer(int32_t comm, int channel, int peer, bool send, int me) {
  if (comm < 0 || comm >= kRingComms || channel < 0 || channel >= kRingChannels || peer < 0) return;
  (send ? g_ring_next : g_ring_prev)[comm][channel].store(peer + 1, std::memory_order_relaxed);
  int32_t prev = g_ring_prev[comm][channel].load(std::memory_order_relaxed);
  int32_t next = g_ring_next[comm][channel].load(std::memory_order_relaxed);
  if (prev == 0 || next == 0 || g_ring_noted[comm][channel].exchange(true)) return;
  char line[96];
  std::snprintf(line, sizeof line, "ring %d: %d -> %d -> %d (proxy)", channel, prev - 1, me, next - 1);
  col::noteCommTopology(comm, line);
}

col::Phase phaseOf(col::Op op) {
  switch (op) {
    case col::Op::kBroadcast: return col::Phase::kBroadcast;
    case col::Op::kReduce: return col::Phase::kReduce;
    case col::Op::kReducescatter: return col::Phase::kReduceScatter;
    case col::Op::kAllgather: return col::Phase::kAllGather;
    default: return col::Phase::kNone;  // all-reduce: NCCL's steps don't say which half
  }
}

// ---- starting each kind ----
CollH* startColl(PluginComm* pc, Handle* parent, const Event& e) {
  CollH* h = &g_coll_pool[g_coll_next.fetch_add(1, std::memory_order_relaxed) % kCollPool];
  h->pooled = true;
  h->parent = nullptr;
  h->gpu_start.store(INT64_MAX, std::memory_order_relaxed);
  h->gpu_end.store(INT64_MIN, std::memory_order_relaxed);
  h->channels_done.store(0, std::memory_order_relaxed);
  h->own = false;
  h->kind = e.kind;
  h->pc = pc;
  h->op = e.op;
  h->algorithm = e.algorithm;
  h->channels = e.channels;
  h->comm = commOf(pc, e.comm_hash, e.rank);
  auto& cnt = link::counters();
  (e.kind == Kind::kColl ? cnt.colls : cnt.p2ps).fetch_add(1, std::memory_order_relaxed);
  auto op8 = static_cast<uint8_t>(e.op);

  link::Pending call;
  uint64_t group_plus_one = 0, stream = 0;
  GroupH* group = nullptr;
  if (parent != nullptr && (parent->kind == Kind::kCollApi || parent->kind == Kind::kP2pApi)) {
    auto* api = static_cast<ApiH*>(parent);
    call = api->call;
    group_plus_one = api->group_plus_one;
    stream = api->stream;
  } else {
    if (parent != nullptr && parent->kind == Kind::kGroup) group = static_cast<GroupH*>(parent);
    // < v5: NCCL starts the coll event on the calling thread, in call order.
    if (!link::claimPending(h->comm, op8, &call) && e.kind == Kind::kP2p) {
      // alltoall/gather/scatter that NCCL runs as sends and receives
      link::peekComposite(h->comm, &call);
    }
  }
  bool own = call.id == 0;
  h->id = own ? col::newCollectiveId() : call.id;
  if (!own) {
    cnt.claimed.fetch_add(1, std::memory_order_relaxed);
    if (call.group != 0) group_plus_one = call.group;
    if (call.stream != 0) stream = call.stream;
    if (h->comm < 0) h->comm = call.comm;
  }
  if (group != nullptr && own) {  // a wrapped call has its group from the wrapper
    std::lock_guard<std::mutex> lock(group->mutex);
    if (group->n < 64) group->ids[group->n++] = h->id;
  }

  if (own && link::isWrapped(h->comm)) {
    // The wrapper saw every call on this communicator and recorded this one
    // already, but its entry could not be matched (NCCL launched the group on
    // another thread, or a group of more calls than the queue holds): its GPU
    // side and transfers go under an id of their own, with no second
    // collective row for the same call.
    cnt.unmatched.fetch_add(1, std::memory_order_relaxed);
  } else if (own) {
    cnt.own.fetch_add(1, std::memory_order_relaxed);
    // A call no wrapper saw (no LD_PRELOAD, NCCL linked statically, a path we
    // don't wrap): the plugin records it, so nothing is lost. Host times are
    // NCCL's enqueue, as the profiler sees it.
    col::Event c;
    c.kind = col::EventKind::kCollective;
    c.id = h->id;
    c.op = op8;
    c.library = static_cast<uint8_t>(col::Library::kNccl);
    c.comm = static_cast<int16_t>(h->comm);
    c.key = static_cast<uint64_t>(col::nextSeq(h->comm));
    c.aux = e.count;
    c.dtype = static_cast<uint8_t>(e.dtype);
    c.bytes = 0;
    switch (e.dtype) {
      case col::DType::kI8: case col::DType::kU8: case col::DType::kBool: c.bytes = e.count; break;
      case col::DType::kF16: case col::DType::kBF16: c.bytes = e.count * 2; break;
      case col::DType::kF32: case col::DType::kI32: case col::DType::kU32: c.bytes = e.count * 4; break;
      case col::DType::kF64: case col::DType::kI64: case col::DType::kU64: c.bytes = e.count * 8; break;
      default: break;
    }
    c.peer = e.kind == Kind::kP2p ? e.peer : e.root;
    c.reduce_op = static_cast<uint8_t>(col::ReduceOp::kUnknown);
    if (e.op != col::Op::kAllreduce && e.op != col::Op::kReduce && e.op != col::Op::kReducescatter)
      c.reduce_op = static_cast<uint8_t>(col::ReduceOp::kNone);
    c.t0 = col::nowNs();
    h->own = true;
    h->own_event = c;
  }

  col::Event g;
  g.kind = col::EventKind::kCollectiveGpu;
  g.id = h->id;
  g.key = stream;
  g.aux = group_plus_one;
  g.peer = e.channels;
  g.comm = static_cast<int16_t>(link::commDevice(h->comm) >= 0 ? link::commDevice(h->comm)
                                                                : (pc != nullptr ? pc->device.load() : -1));
  g.algorithm = static_cast<uint8_t>(e.algorithm);
  g.protocol = static_cast<uint8_t>(e.protocol);
  g.library = static_cast<uint8_t>(col::Library::kNccl);
  g.op = op8;
  col::emit(g);
  return h;
}

// The coll/p2p a child event belongs to, if its parent pointer may be
// dereferenced (PXN: a proxy op made by another process carries that
// process's pointers; its pid says so).
CollH* collOf(Handle* parent) {
  if (parent == nullptr) return nullptr;
  if (parent->kind == Kind::kColl || parent->kind == Kind::kP2p) return static_cast<CollH*>(parent);
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------
int init(int version, void** context, int* activation_mask, const InitInfo& info) {
  if (context == nullptr) return kInternalError;
  *context = nullptr;
  // NCCL is in use: this is where a process without our wrappers (no
  // LD_PRELOAD) starts recording. RINGSIDE_DISABLE: tell NCCL to unload us.
  if (!col::activate()) return kInternalError;
  PluginComm* pc = link::newPluginComm(version);
  if (pc == nullptr) return kInternalError;
  pc->nccl_hash = info.comm_hash;
  pc->rank = info.rank;
  pc->nranks = info.nranks;
  pc->nnodes = info.nnodes;
  if (info.comm_name != nullptr) std::snprintf(pc->name, sizeof pc->name, "%s", info.comm_name);
  *context = pc;
  link::startGpuActivityOnce();
  static std::once_flag once;
  std::call_once(once, [version] {
    char v[48];
    std::snprintf(v, sizeof v, "v%d", version);
    col::noteMeta("nccl_profiler", v);
  });
  if (activation_mask != nullptr) {
    uint64_t mask = (1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4);  // group coll p2p proxyOp/Step
    if (version >= 3) mask |= (1u << 6) | (1u << 7);                           // kernelCh netPlugin
    if (version >= 5) mask |= (1u << 8) | (1u << 9) | (1u << 10) | (1u << 11); // API events, kernel launch
    // RINGSIDE_NCCL_EVENT_MASK narrows what NCCL reports (NCCL's event bits;
    // e.g. 0x4f leaves out proxy steps on jobs with very many of them).
    if (const char* m = std::getenv("RINGSIDE_NCCL_EVENT_MASK"); m != nullptr && m[0] != '\0')
      mask &= std::strtoull(m, nullptr, 0);
    *activation_mask = static_cast<int>(mask);
  }
  return kSuccess;
}

int startEvent(void* context, void** handle, const Event& e) {
  if (handle == nullptr) return kSuccess;
  *handle = nullptr;
  if (!col::isActive()) return kSuccess;
  auto* pc = static_cast<PluginComm*>(context);
  auto& cnt = link::counters();
  auto* parent = static_cast<Handle*>(e.parent);
  Handle* h = nullptr;
  switch (e.kind) {
    case Kind::kGroup:
    case Kind::kGroupApi: {
      auto* g = new (std::nothrow) GroupH();
      if (g == nullptr) return kSuccess;
      g->v4_style = e.kind == Kind::kGroup;
      g->user_group = e.kind == Kind::kGroupApi && e.group_depth > 1;
      // An id only for a user's group (v5+); v1–v4 groups take one when they
      // turn out to hold calls of their own (finish()).
      if (g->user_group) g->group_plus_one = link::newGroupId() + 1;
      if (e.kind == Kind::kGroupApi) cnt.api.fetch_add(1, std::memory_order_relaxed);
      h = g;
      break;
    }
    case Kind::kCollApi:
    case Kind::kP2pApi: {
      cnt.api.fetch_add(1, std::memory_order_relaxed);
      ApiH* a = &g_api_pool[g_api_next.fetch_add(1, std::memory_order_relaxed) % kApiPool];
      a->pooled = true;
      a->parent = nullptr;
      a->call = link::Pending{};
      a->group_plus_one = 0;
      int32_t comm = pc != nullptr ? pc->comm.load(std::memory_order_acquire) : -1;
      // v5+: the API event is started inside the application's call, on its thread.
      link::claimPending(comm, static_cast<uint8_t>(e.op), &a->call);
      a->stream = reinterpret_cast<uint64_t>(e.stream);
      if (parent != nullptr && parent->kind == Kind::kGroupApi) {
        auto* g = static_cast<GroupH*>(parent);
        if (g->user_group) a->group_plus_one = g->group_plus_one;
      }
      h = a;
      break;
    }
    case Kind::kColl:
    case Kind::kP2p:
      h = startColl(pc, parent, e);
      break;
    case Kind::kProxyOp: {
      cnt.proxy_ops.fetch_add(1, std::memory_order_relaxed);
      auto* o = new (std::nothrow) ProxyOpH();
      if (o == nullptr) return kSuccess;
      bool local = e.pid == 0 || e.pid == getpid();
      if (!local) {
        cnt.pxn_remote.fetch_add(1, std::memory_order_relaxed);
        parent = nullptr;  // another process's pointer
      }
      o->coll = collOf(parent);
      o->comm = o->coll != nullptr ? o->coll->comm : commOf(pc, 0, e.rank);
      o->peer = e.peer;
      o->channel = e.channel;
      o->send = e.is_send;
      o->chunk = e.chunk_size;
      if (o->coll != nullptr) {
        o->phase = phaseOf(o->coll->op);
        if (o->coll->algorithm == col::Algorithm::kRing && o->coll->kind == Kind::kColl) {
          int me = pc != nullptr && pc->rank >= 0 ? pc->rank : e.rank;
          noteRingPeer(o->comm, e.channel, e.peer, e.is_send, me);
        }
      }
      h = o;
      break;
    }
    case Kind::kProxyStep: {
      cnt.proxy_steps.fetch_add(1, std::memory_order_relaxed);
      if (parent == nullptr || parent->kind != Kind::kProxyOp) return kSuccess;
      auto* s = new (std::nothrow) ProxyStepH();
      if (s == nullptr) return kSuccess;
      s->op = static_cast<ProxyOpH*>(parent);
      s->step = e.step;
      s->t_start = col::nowNs();
      h = s;
      break;
    }
    case Kind::kKernelCh: {
      cnt.kernel_ch.fetch_add(1, std::memory_order_relaxed);
      auto* k = new (std::nothrow) KernelChH();
      if (k == nullptr) return kSuccess;
      k->coll = collOf(parent);
      int64_t now = col::nowNs();
      k->start = e.gpu_timer != 0 ? link::gpuTimerToHostNs(e.gpu_timer, now) : now;
      h = k;
      break;
    }
    case Kind::kNetPlugin:
      cnt.net_plugin.fetch_add(1, std::memory_order_relaxed);
      return kSuccess;
    case Kind::kKernelLaunch:
      cnt.api.fetch_add(1, std::memory_order_relaxed);
      return kSuccess;
    case Kind::kCe:
      cnt.ce.fetch_add(1, std::memory_order_relaxed);
      return kSuccess;
    case Kind::kProxyCtrl:
    case Kind::kUnknown:
      cnt.unknown.fetch_add(1, std::memory_order_relaxed);
      return kSuccess;
  }
  if (h == nullptr) return kSuccess;
  h->kind = e.kind;
  h->pc = pc;
  // Children hold their parent until they are gone (proxy steps their proxy
  // op; coll/p2p and API handles are pooled, holding them is a no-op). A coll
  // reads what it needs from its API or group event when it starts.
  bool holds = e.kind == Kind::kProxyOp || e.kind == Kind::kProxyStep || e.kind == Kind::kKernelCh;
  if (parent != nullptr && holds) {
    addRef(parent);
    h->parent = parent;
  }
  *handle = h;
  return kSuccess;
}

int recordEventState(void* handle, int state, const StateArgs& args) {
  auto* h = static_cast<Handle*>(handle);
  if (h == nullptr) return kSuccess;
  int64_t now = col::nowNs();
  switch (h->kind) {
    case Kind::kProxyStep: {
      auto* s = static_cast<ProxyStepH*>(h);
      if (args.trans_size != 0) s->bytes.store(args.trans_size, std::memory_order_relaxed);
      if (state == 9 && s->t_wire == 0) s->t_wire = now;                                // SendWait
      if ((state == 11 || state == 12) && s->t_arrived == 0) s->t_arrived = now;        // RecvFlushWait, RecvGPUWait
      break;
    }
    case Kind::kKernelCh:
      if (state == 22) {  // KernelChStop
        auto* k = static_cast<KernelChH*>(h);
        k->stop = args.gpu_timer != 0 ? link::gpuTimerToHostNs(args.gpu_timer, now) : now;
      }
      break;
    default:
      break;  // proxyOp (v1–v3 progress), groupApi states: nothing to keep
  }
  return kSuccess;
}

int stopEvent(void* handle) {
  auto* h = static_cast<Handle*>(handle);
  if (h == nullptr) return kSuccess;
  int64_t now = col::nowNs();
  if (h->kind == Kind::kKernelCh) {
    auto* k = static_cast<KernelChH*>(h);
    if (k->stop == 0) k->stop = now;
  } else if (h->kind == Kind::kProxyStep) {
    auto* s = static_cast<ProxyStepH*>(h);
    if (s->t_arrived == 0) s->t_arrived = now;
  } else if (h->kind == Kind::kColl || h->kind == Kind::kP2p) {
    auto* c = static_cast<CollH*>(h);
    if (c->own && col::isActive()) {
      c->own_event.t1 = now;  // enqueued: NCCL's stop of a coll event
      col::emit(c->own_event);
    }
  }
  release(h);
  return kSuccess;
}

int finalize(void* context) {
  auto* pc = static_cast<PluginComm*>(context);
  if (pc != nullptr) pc->finalized.store(true);
  if (col::isActive()) link::noteCountersMeta();
  return kSuccess;  // the context stays: a late event may still name it
}

namespace {

void finish(Handle* h) {
  if (!col::isActive()) return;
  switch (h->kind) {
    case Kind::kGroup:
    case Kind::kGroupApi: {
      auto* g = static_cast<GroupH*>(h);
      // v1–v4 put every call in a group; more than one call means the user grouped them.
      if (!g->v4_style || g->n < 2) return;
      g->group_plus_one = link::newGroupId() + 1;
      for (int i = 0; i < g->n; ++i) {
        col::Event e;
        e.kind = col::EventKind::kCollectiveGpu;
        e.id = g->ids[i];
        e.aux = g->group_plus_one;
        e.library = static_cast<uint8_t>(col::Library::kNccl);
        col::emit(e);
      }
      return;
    }
    case Kind::kKernelCh: {
      auto* k = static_cast<KernelChH*>(h);
      CollH* c = k->coll;
      if (c == nullptr) return;
      minStore(c->gpu_start, k->start);
      maxStore(c->gpu_end, k->stop != 0 ? k->stop : k->start);
      // Written at the first channel's stop (a span even if NCCL reports fewer
      // channels than it announced) and again when the last announced one
      // stopped; the writer's upsert keeps the latest.
      int done = c->channels_done.fetch_add(1, std::memory_order_relaxed) + 1;
      if (done != 1 && c->channels > 0 && done != c->channels) return;
      col::Event g;
      g.kind = col::EventKind::kCollectiveGpu;
      g.id = c->id;
      g.t0 = c->gpu_start.load(std::memory_order_relaxed);
      g.t1 = c->gpu_end.load(std::memory_order_relaxed);
      g.library = static_cast<uint8_t>(col::Library::kNccl);
      g.op = static_cast<uint8_t>(c->op);
      col::emit(g);
      return;
    }
    case Kind::kProxyStep: {
      auto* s = static_cast<ProxyStepH*>(h);
      ProxyOpH* o = s->op;
      col::Event t;
      t.kind = col::EventKind::kTransfer;
      t.id = o->coll != nullptr ? o->coll->id : 0;
      t.comm = static_cast<int16_t>(o->comm);
      t.peer = o->peer;
      t.side = static_cast<uint8_t>(o->send ? col::Side::kSend : col::Side::kRecv);
      uint64_t bytes = s->bytes.load(std::memory_order_relaxed);
      t.bytes = bytes != 0 ? bytes : static_cast<uint64_t>(o->chunk > 0 ? o->chunk : 0);
      // send: handed to the network → done; recv: posted → arrived.
      t.t0 = o->send && s->t_wire != 0 ? s->t_wire : s->t_start;
      t.t1 = o->send ? col::nowNs() : s->t_arrived;
      if (t.t1 < t.t0) t.t1 = t.t0;
      t.channel = static_cast<uint8_t>(o->channel >= 0 && o->channel < 255 ? o->channel + 1 : 0);
      t.phase = static_cast<uint8_t>(o->phase);
      t.step = static_cast<int16_t>(s->step >= 0 && s->step < 32767 ? s->step : -1);
      t.aux = ~0ull;  // chunk unknown
      col::emit(t);
      return;
    }
    default:
      return;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Vocabulary.
namespace {
bool eq(const char* a, const char* b) {
  if (a == nullptr) return false;
  for (; *a != '\0' && *b != '\0'; ++a, ++b)
    if (std::tolower(static_cast<unsigned char>(*a)) != std::tolower(static_cast<unsigned char>(*b))) return false;
  return *a == *b;
}
}  // namespace

col::Op opFromName(const char* f) {
  if (eq(f, "AllReduce")) return col::Op::kAllreduce;
  if (eq(f, "Broadcast")) return col::Op::kBroadcast;
  if (eq(f, "Reduce")) return col::Op::kReduce;
  if (eq(f, "AllGather")) return col::Op::kAllgather;
  if (eq(f, "ReduceScatter")) return col::Op::kReducescatter;
  if (eq(f, "AlltoAll") || eq(f, "AllToAll")) return col::Op::kAlltoall;
  if (eq(f, "Gather")) return col::Op::kGather;
  if (eq(f, "Scatter")) return col::Op::kScatter;
  if (eq(f, "Send")) return col::Op::kSend;
  if (eq(f, "Recv")) return col::Op::kRecv;
  return col::Op::kUnknown;
}

col::DType dtypeFromName(const char* d) {
  if (d == nullptr) return col::DType::kUnknown;
  if (std::strncmp(d, "nccl", 4) == 0) d += 4;
  if (eq(d, "Int8") || eq(d, "Char")) return col::DType::kI8;
  if (eq(d, "Uint8")) return col::DType::kU8;
  if (eq(d, "Int32") || eq(d, "Int")) return col::DType::kI32;
  if (eq(d, "Uint32")) return col::DType::kU32;
  if (eq(d, "Int64")) return col::DType::kI64;
  if (eq(d, "Uint64")) return col::DType::kU64;
  if (eq(d, "Float16") || eq(d, "Half")) return col::DType::kF16;
  if (eq(d, "Float32") || eq(d, "Float")) return col::DType::kF32;
  if (eq(d, "Float64") || eq(d, "Double")) return col::DType::kF64;
  if (eq(d, "Bfloat16")) return col::DType::kBF16;
  return col::DType::kUnknown;
}

col::Algorithm algorithmFromName(const char* a) {
  if (eq(a, "Ring")) return col::Algorithm::kRing;
  if (eq(a, "Tree")) return col::Algorithm::kTree;
  if (eq(a, "CollNetDirect") || eq(a, "CollNet_Direct")) return col::Algorithm::kCollnetDirect;
  if (eq(a, "CollNetChain") || eq(a, "CollNet_Chain")) return col::Algorithm::kCollnetChain;
  if (eq(a, "NVLS")) return col::Algorithm::kNvls;
  if (eq(a, "NVLSTree") || eq(a, "NVLS_Tree")) return col::Algorithm::kNvlsTree;
  if (eq(a, "PAT")) return col::Algorithm::kPat;
  return col::Algorithm::kDefault;
}

col::Protocol protocolFromName(const char* p) {
  if (eq(p, "LL")) return col::Protocol::kLL;
  if (eq(p, "LL128")) return col::Protocol::kLL128;
  if (eq(p, "Simple")) return col::Protocol::kSimple;
  return col::Protocol::kUnknown;
}

col::Op opFromV1(uint8_t f) {
  // ncclFunc_t of NCCL 2.23.
  switch (f) {
    case 0: return col::Op::kBroadcast;
    case 1: return col::Op::kReduce;
    case 2: return col::Op::kAllgather;
    case 3: return col::Op::kReducescatter;
    case 4: return col::Op::kAllreduce;
    case 6: return col::Op::kSend;
    case 7: return col::Op::kRecv;
    default: return col::Op::kUnknown;
  }
}

col::DType dtypeFromValue(int t) {
  static const col::DType kTable[] = {col::DType::kI8,  col::DType::kU8,  col::DType::kI32, col::DType::kU32,
                                      col::DType::kI64, col::DType::kU64, col::DType::kF16, col::DType::kF32,
                                      col::DType::kF64, col::DType::kBF16};
  return t >= 0 && t < 10 ? kTable[t] : col::DType::kUnknown;
}

col::Algorithm algorithmFromV1(uint8_t a) {
  static const col::Algorithm kTable[] = {col::Algorithm::kTree,          col::Algorithm::kRing,
                                          col::Algorithm::kCollnetDirect, col::Algorithm::kCollnetChain,
                                          col::Algorithm::kNvls,          col::Algorithm::kNvlsTree,
                                          col::Algorithm::kPat};
  return a < 7 ? kTable[a] : col::Algorithm::kDefault;
}

col::Protocol protocolFromV1(uint8_t p) {
  switch (p) {
    case 0: return col::Protocol::kLL;
    case 1: return col::Protocol::kLL128;
    case 2: return col::Protocol::kSimple;
    default: return col::Protocol::kUnknown;
  }
}

}  // namespace ringside::interpose::nccl_profiler
