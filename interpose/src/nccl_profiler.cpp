// The NCCL profiler plugin's event model (nccl_profiler.h): handles for the
// events NCCL starts, what they turn into when they stop.
//
// Handles: API and coll/p2p events live in pools of slots whose handles carry
// a generation (NCCL names them as parents long after it stopped them; a
// stale one is detected, never misattributed); the others are heap objects,
// reference counted (a proxy step holds its proxy op). A coll's GPU span is
// written when its first and its last kernel channel stop.
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
// Two kinds of handle go to NCCL, which treats them as opaque:
// - heap handles (groups, proxy ops and steps, kernel channels): a Handle*,
//   reference counted (a child holds its parent until it is gone); aligned,
//   so their low bit is 0;
// - slot handles (collApi/p2pApi and coll/p2p events): an integer with the
//   low bit set that names a slot of a pool and the generation the slot had
//   when the event was started (see "pooled slots" below).
struct Handle {
  Kind kind = Kind::kUnknown;
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

// ---- pooled slots: API and coll/p2p events ----
// NCCL keeps naming a stopped collApi event as the parent of its coll event
// (started later, in ncclGroupEnd, or on every replay of a CUDA graph that
// captured the call: src/enqueue.cc, hostStreamPlanTask), and a stopped coll
// event as the parent of its proxy ops and kernel channels. Nothing tells the
// plugin when NCCL is done with a handle, so these events live in fixed pools
// of slots reused round-robin, and each handle carries the slot's generation:
// every use decodes it, locks the slot and goes on only if the generation
// still matches. A handle whose slot was reused since (a group of more calls
// than the pool holds, a graph replayed after many later calls) is stale: the
// event is recorded without its parent (counter stale_parent), never
// attributed to the call that now owns the slot.
constexpr uint64_t kPoolApi = 0, kPoolColl = 1;
constexpr int kIndexShift = 2, kIndexBits = 14, kGenShift = kIndexShift + kIndexBits;
constexpr uint64_t kGenMask = (1ull << (64 - kGenShift)) - 1;
static_assert(sizeof(void*) == 8, "slot handles need 64-bit pointers");

bool isSlotHandle(const void* h) { return (reinterpret_cast<uintptr_t>(h) & 1u) != 0; }

void* encodeSlot(uint64_t pool, uint64_t index, uint64_t gen) {
  uint64_t v = ((gen & kGenMask) << kGenShift) | (index << kIndexShift) | (pool << 1) | 1u;
  return reinterpret_cast<void*>(static_cast<uintptr_t>(v));
}

struct SlotRef {
  uint64_t pool = 0;
  uint64_t index = 0;
  uint64_t gen = 0;  // 0: no slot
};

SlotRef decodeSlot(const void* h) {
  auto v = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
  SlotRef r;
  r.pool = (v >> 1) & 1u;
  r.index = (v >> kIndexShift) & ((1ull << kIndexBits) - 1);
  r.gen = v >> kGenShift;
  return r;
}

// v5+ API events: the wrapped call claimed inside the application's call.
struct ApiData {
  Kind kind = Kind::kUnknown;
  link::Pending call;  // the wrapped call it claimed (call.id == 0: none)
  uint64_t group_plus_one = 0;
  uint64_t stream = 0;
};
// coll/p2p events. The call's GPU span is written when its first and its last
// channel stop.
struct CollData {
  Kind kind = Kind::kUnknown;
  uint64_t id = 0;
  int32_t comm = -1;
  col::Op op = col::Op::kUnknown;
  col::Algorithm algorithm = col::Algorithm::kDefault;
  int channels = -1;
  int64_t gpu_start = INT64_MAX;
  int64_t gpu_end = INT64_MIN;
  int channels_done = 0;
  col::flight::CallHandle flight;  // the wrapped call's flight slot (none when own)
  bool own = false;        // no wrapped call claimed: the plugin writes the collective itself
  col::Event own_event;    // its kCollective, written when NCCL stops the event (enqueued)
};

template <class Data>
struct Slot {
  std::mutex mutex;
  uint64_t gen = 0;  // bumped (under the mutex) by every allocation
  Data d;
};

template <class Data, uint64_t N>
struct Pool {
  static_assert(N <= (1ull << kIndexBits));
  Slot<Data> slots[N];
  std::atomic<uint64_t> next{0};

  // Takes the next slot, fills it, returns the handle.
  void* alloc(uint64_t pool_id, const Data& d) {
    uint64_t i = next.fetch_add(1, std::memory_order_relaxed) % N;
    Slot<Data>& s = slots[i];
    std::lock_guard<std::mutex> lock(s.mutex);
    s.gen = (s.gen + 1) & kGenMask;
    if (s.gen == 0) s.gen = 1;
    s.d = d;
    return encodeSlot(pool_id, i, s.gen);
  }
  // Runs f(Data&) under the slot's lock if `ref` still names the slot's
  // current generation; false (f not run) if the handle is stale.
  template <class F>
  bool with(const SlotRef& ref, F f) {
    if (ref.gen == 0 || ref.index >= N) return false;
    Slot<Data>& s = slots[ref.index];
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.gen != ref.gen) return false;
    f(s.d);
    return true;
  }
};

constexpr uint64_t kApiPool = 2048;
Pool<ApiData, kApiPool> g_api;
constexpr uint64_t kCollPool = 8192;  // calls NCCL may still be working on
Pool<CollData, kCollPool> g_coll;

// What a child (proxy op, kernel channel) copies from its coll/p2p event at
// its start: it never reads the slot again except through (index, gen).
struct CollRef {
  SlotRef slot;  // gen 0: no coll (none named, stale, or another process's)
  Kind kind = Kind::kUnknown;
  uint64_t id = 0;
  int32_t comm = -1;
  col::Op op = col::Op::kUnknown;
  col::Algorithm algorithm = col::Algorithm::kDefault;
};

void countStale() { link::counters().stale_parent.fetch_add(1, std::memory_order_relaxed); }

// The coll/p2p a child event names as its parent, copied; stale parents are counted.
CollRef collOf(void* parent) {
  CollRef r;
  if (parent == nullptr || !isSlotHandle(parent)) return r;
  SlotRef ref = decodeSlot(parent);
  if (ref.pool != kPoolColl) return r;
  bool ok = g_coll.with(ref, [&](CollData& d) {
    r.kind = d.kind;
    r.id = d.id;
    r.comm = d.comm;
    r.op = d.op;
    r.algorithm = d.algorithm;
  });
  if (!ok) {
    countStale();
    return CollRef{};
  }
  r.slot = ref;
  return r;
}

struct ProxyOpH : Handle {
  uint64_t coll_id = 0;   // the coll/p2p it belongs to (0: unknown, e.g. PXN or stale)
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
  CollRef coll;
  int64_t start = 0;   // host clock
  int64_t stop = 0;
};

// A heap handle NCCL gave back (nullptr for none and for slot handles).
Handle* heapHandle(void* h) { return h == nullptr || isSlotHandle(h) ? nullptr : static_cast<Handle*>(h); }

void addRef(Handle* h) {
  if (h != nullptr) h->refs.fetch_add(1, std::memory_order_relaxed);
}

void finish(Handle* h);

void release(Handle* h) {
  while (h != nullptr) {
    if (h->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    finish(h);
    Handle* parent = h->parent;
    delete h;
    h = parent;  // the child's reference on its parent
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
void* startColl(PluginComm* pc, void* parent, const Event& e) {
  CollData h;
  h.kind = e.kind;
  h.op = e.op;
  h.algorithm = e.algorithm;
  h.channels = e.channels;
  h.comm = commOf(pc, e.comm_hash, e.rank);
  auto& cnt = link::counters();
  (e.kind == Kind::kColl ? cnt.colls : cnt.p2ps).fetch_add(1, std::memory_order_relaxed);
  auto op8 = static_cast<uint8_t>(e.op);

  link::Pending call;
  uint64_t group_plus_one = 0, stream = 0;
  GroupH* group = nullptr;
  if (parent != nullptr && isSlotHandle(parent)) {
    // v5+: the collApi/p2pApi event, stopped long ago perhaps (a group's
    // calls start their coll events in ncclGroupEnd; a graph's on every replay).
    SlotRef ref = decodeSlot(parent);
    bool ok = ref.pool == kPoolApi && g_api.with(ref, [&](ApiData& api) {
      call = api.call;
      group_plus_one = api.group_plus_one;
      stream = api.stream;
    });
    // Stale: the API event's slot went to a later call. Its call was claimed
    // by that API event already; which one it was is lost, never guessed.
    if (!ok) countStale();
  } else {
    Handle* ph = heapHandle(parent);
    if (ph != nullptr && ph->kind == Kind::kGroup) group = static_cast<GroupH*>(ph);
    // < v5: NCCL starts the coll event on the calling thread, in call order.
    if (!link::claimPending(h.comm, op8, &call) && e.kind == Kind::kP2p) {
      // alltoall/gather/scatter that NCCL runs as sends and receives
      link::peekComposite(h.comm, &call);
    }
  }
  bool own = call.id == 0;
  h.id = own ? col::newCollectiveId() : call.id;
  h.flight = call.flight;
  if (!own) {
    cnt.claimed.fetch_add(1, std::memory_order_relaxed);
    if (call.group != 0) group_plus_one = call.group;
    if (call.stream != 0) stream = call.stream;
    if (h.comm < 0) h.comm = call.comm;
  }
  if (group != nullptr && own) {  // a wrapped call has its group from the wrapper
    std::lock_guard<std::mutex> lock(group->mutex);
    if (group->n < 64) group->ids[group->n++] = h.id;
  }

  if (own && link::isWrapped(h.comm)) {
    // The wrapper saw every call on this communicator and recorded this one
    // already, but its entry could not be matched (NCCL launched the group on
    // another thread, a group of more calls than the queue holds, a stale
    // API parent): its GPU side and transfers go under an id of their own,
    // with no second collective row for the same call.
    cnt.unmatched.fetch_add(1, std::memory_order_relaxed);
  } else if (own) {
    cnt.own.fetch_add(1, std::memory_order_relaxed);
    // A call no wrapper saw (no LD_PRELOAD, NCCL linked statically, a path we
    // don't wrap): the plugin records it, so nothing is lost. Host times are
    // NCCL's enqueue, as the profiler sees it.
    col::Event c;
    c.kind = col::EventKind::kCollective;
    c.id = h.id;
    c.op = op8;
    c.library = static_cast<uint8_t>(col::Library::kNccl);
    c.comm = static_cast<int16_t>(h.comm);
    c.key = static_cast<uint64_t>(col::nextSeq(h.comm));
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
    h.own = true;
    h.own_event = c;
  }

  col::Event g;
  g.kind = col::EventKind::kCollectiveGpu;
  g.id = h.id;
  g.key = stream;
  g.aux = group_plus_one;
  g.peer = e.channels;
  g.comm = static_cast<int16_t>(link::commDevice(h.comm) >= 0 ? link::commDevice(h.comm)
                                                               : (pc != nullptr ? pc->device.load() : -1));
  g.algorithm = static_cast<uint8_t>(e.algorithm);
  g.protocol = static_cast<uint8_t>(e.protocol);
  g.library = static_cast<uint8_t>(col::Library::kNccl);
  g.op = op8;
  col::emit(g);
  return g_coll.alloc(kPoolColl, h);
}

}  // namespace

// ---------------------------------------------------------------------------
int init(int version, void** context, int* activation_mask, const InitInfo& info) {
  if (context == nullptr) return kInternalError;
  *context = nullptr;
  // NCCL is in use: this is where a process without our wrappers (no
  // LD_PRELOAD) starts recording. RINGSIDE_DISABLE: decline. NCCL does not
  // unload a plugin whose init failed: it logs "Profiler init failed ...
  // Continue without profiler" and goes on calling startEvent / stopEvent /
  // recordEventState for this communicator with the null context left here
  // (NCCL 2.28.9-2.30.7, src/plugin/profiler.cc, ncclProfilerPluginInit), so
  // every entry point copes with a null context (startEvent records nothing
  // and returns a null handle; the others ignore a null handle).
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
  auto& cnt = link::counters();
  // A proxy op another process posted (PXN: NCCL copies it through shared
  // memory to this process's proxy, src/proxy.cc) carries that process's
  // context and parent: addresses in another address space, never to be
  // read, written or decoded here (a slot handle of the other process's
  // ringside would name one of our slots). pid 0: the op came from a process
  // whose NCCL never loaded a profiler (NCCL stamps the pid it stored when it
  // loaded the plugin), so it is not ours either (and its context is null).
  if (e.kind == Kind::kProxyOp && (e.pid == 0 || e.pid != getpid())) {
    cnt.proxy_ops.fetch_add(1, std::memory_order_relaxed);
    cnt.pxn_remote.fetch_add(1, std::memory_order_relaxed);
    auto* o = new (std::nothrow) ProxyOpH();
    if (o == nullptr) return kSuccess;
    o->kind = Kind::kProxyOp;
    o->comm = -1;  // kept apart: the descriptor names no communicator of ours
    o->peer = e.peer;
    o->channel = e.channel;
    o->send = e.is_send;
    o->chunk = e.chunk_size;
    *handle = o;
    return kSuccess;
  }
  if (context == nullptr && e.kind != Kind::kProxyStep) {
    // A communicator whose init we declined: NCCL goes on without a profiler
    // context and still calls us (see init()). Nothing to attach it to. (A
    // proxy step needs no context: its parent is the proxy op we returned,
    // also for a PXN op whose poster had none.)
    cnt.unknown.fetch_add(1, std::memory_order_relaxed);
    return kSuccess;
  }
  // From here on the context is this process's (a PluginComm init made).
  auto* pc = static_cast<PluginComm*>(context);
  Handle* heap_parent = heapHandle(e.parent);
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
      ApiData a;
      a.kind = e.kind;
      int32_t comm = pc->comm.load(std::memory_order_acquire);
      // v5+: the API event is started inside the application's call, on its
      // thread, inside the ncclGroupStart/End that the groupApi event is.
      link::claimPending(comm, static_cast<uint8_t>(e.op), &a.call);
      a.stream = reinterpret_cast<uint64_t>(e.stream);
      if (heap_parent != nullptr && heap_parent->kind == Kind::kGroupApi) {
        auto* g = static_cast<GroupH*>(heap_parent);
        if (g->user_group) a.group_plus_one = g->group_plus_one;
      }
      *handle = g_api.alloc(kPoolApi, a);
      return kSuccess;
    }
    case Kind::kColl:
    case Kind::kP2p:
      *handle = startColl(pc, e.parent, e);
      return kSuccess;
    case Kind::kProxyOp: {
      cnt.proxy_ops.fetch_add(1, std::memory_order_relaxed);
      auto* o = new (std::nothrow) ProxyOpH();
      if (o == nullptr) return kSuccess;
      CollRef coll = collOf(e.parent);
      o->coll_id = coll.id;
      o->comm = coll.slot.gen != 0 ? coll.comm : commOf(pc, 0, e.rank);
      o->peer = e.peer;
      o->channel = e.channel;
      o->send = e.is_send;
      o->chunk = e.chunk_size;
      if (coll.slot.gen != 0) {
        o->phase = phaseOf(coll.op);
        if (coll.algorithm == col::Algorithm::kRing && coll.kind == Kind::kColl) {
          int me = pc->rank >= 0 ? pc->rank : e.rank;
          noteRingPeer(o->comm, e.channel, e.peer, e.is_send, me);
        }
      }
      h = o;
      break;
    }
    case Kind::kProxyStep: {
      cnt.proxy_steps.fetch_add(1, std::memory_order_relaxed);
      // The parent is the proxy op this process's proxy started (also for a
      // PXN op); the context may be another process's: not used.
      if (heap_parent == nullptr || heap_parent->kind != Kind::kProxyOp) return kSuccess;
      auto* s = new (std::nothrow) ProxyStepH();
      if (s == nullptr) return kSuccess;
      s->op = static_cast<ProxyOpH*>(heap_parent);
      s->step = e.step;
      s->t_start = col::nowNs();
      h = s;
      break;
    }
    case Kind::kKernelCh: {
      cnt.kernel_ch.fetch_add(1, std::memory_order_relaxed);
      auto* k = new (std::nothrow) KernelChH();
      if (k == nullptr) return kSuccess;
      k->coll = collOf(e.parent);
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
  // A proxy step holds its proxy op until it is gone. Proxy ops and kernel
  // channels copied what they need from their coll/p2p slot (CollRef).
  if (e.kind == Kind::kProxyStep) {
    addRef(heap_parent);
    h->parent = heap_parent;
  }
  *handle = h;
  return kSuccess;
}

int recordEventState(void* handle, int state, const StateArgs& args) {
  Handle* h = heapHandle(handle);  // API and coll/p2p events have no states we keep
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
  if (handle == nullptr) return kSuccess;
  int64_t now = col::nowNs();
  if (isSlotHandle(handle)) {
    SlotRef ref = decodeSlot(handle);
    if (ref.pool == kPoolApi) {
      if (!g_api.with(ref, [](ApiData&) {})) countStale();
      return kSuccess;
    }
    bool emit = false;
    col::Event own_event;
    bool ok = g_coll.with(ref, [&](CollData& d) {
      if (!d.own) return;
      d.own_event.t1 = now;  // enqueued: NCCL's stop of a coll event
      own_event = d.own_event;
      emit = true;
    });
    if (!ok) countStale();
    if (emit && col::isActive()) col::emit(own_event);
    return kSuccess;
  }
  auto* h = static_cast<Handle*>(handle);
  if (h->kind == Kind::kKernelCh) {
    auto* k = static_cast<KernelChH*>(h);
    if (k->stop == 0) k->stop = now;
  } else if (h->kind == Kind::kProxyStep) {
    auto* s = static_cast<ProxyStepH*>(h);
    if (s->t_arrived == 0) s->t_arrived = now;
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
      if (k->coll.slot.gen == 0) return;  // no coll, or a stale one (counted at start)
      col::Event g;
      bool write = false;
      bool ok = g_coll.with(k->coll.slot, [&](CollData& c) {
        if (k->start < c.gpu_start) c.gpu_start = k->start;
        int64_t end = k->stop != 0 ? k->stop : k->start;
        if (end > c.gpu_end) c.gpu_end = end;
        // Written at the first channel's stop (a span even if NCCL reports
        // fewer channels than it announced) and again when the last announced
        // one stopped; the writer's upsert keeps the latest.
        int done = ++c.channels_done;
        // Every announced channel stopped: the call's work is complete (the flight ring's done).
        if (c.channels > 0 && done == c.channels) col::flight::completed(c.flight, c.gpu_end);
        if (done != 1 && c.channels > 0 && done != c.channels) return;
        g.kind = col::EventKind::kCollectiveGpu;
        g.id = c.id;
        g.t0 = c.gpu_start;
        g.t1 = c.gpu_end;
        g.library = static_cast<uint8_t>(col::Library::kNccl);
        g.op = static_cast<uint8_t>(c.op);
        write = true;
      });
      // The coll's slot went to a later call while this channel ran: its
      // span is not merged into the wrong call.
      if (!ok) countStale();
      if (write) col::emit(g);
      return;
    }
    case Kind::kProxyStep: {
      auto* s = static_cast<ProxyStepH*>(h);
      ProxyOpH* o = s->op;
      col::Event t;
      t.kind = col::EventKind::kTransfer;
      t.id = o->coll_id;
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
