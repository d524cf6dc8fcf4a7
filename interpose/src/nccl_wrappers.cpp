// Wrappers for NCCL's C API (libnccl.so.2, any release with these functions).
//
// NCCL is never linked: the application (or PyTorch, through its private
// dlopen chain) loads it, binds to these definitions first because the
// preload library comes first in the global scope, and each wrapper finds the
// real function in the loaded object (symbols.h). A process that never calls
// NCCL never reaches this file and stays dormant.
//
// What each call becomes:
// - communicator creation (InitRank, InitRankConfig, InitAll, Split): a
//   registered communicator with a stable id equal on every member rank
//   ("nccl/<16 hex>": NCCL's own hash of the unique id; for a split, a hash of
//   the parent id, the color and the split's number on that parent), its
//   rank, size, device and parent; destroy/abort end it.
// - every collective, send and recv: one kCollective event (host entry and
//   return), one kCollectiveGpu event (stream, group), and a Pending entry for
//   NCCL's profiler plugin to attach algorithm, protocol, channels, GPU times
//   and transfers to (nccl_link.h).
// - ncclGroupStart/End: calls in between share a group id.
// Every wrapper has the same shape: find the real function (lazily), pass
// through when nested or not recording, time the real call, always return its
// result, never throw.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "nccl_api.h"
#include "nccl_link.h"
#include "nccl_log.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/flight.h"
#include "ringside/collector/gpu.h"
#include "symbols.h"

namespace ringside::interpose {
namespace {

namespace col = ringside::collector;
namespace link = nccl_link;
namespace flight = ringside::collector::flight;
using col::Event;
using col::EventKind;
using col::Op;

thread_local int t_depth = 0;         // > 0 inside a wrapped NCCL call
thread_local uint64_t t_group_first = 0;  // first collective of the open group (GPU correlation)

void noteActive() {
  static std::once_flag once;
  std::call_once(once, [] { col::noteMeta("interposition", "active: nccl"); });
}

ncclResult_t missingReal(const char* name) {
  // The application bound to our definition, but no loaded object defines
  // NCCL's: we cannot do the work and must not pretend it was done.
  static std::once_flag once;
  std::call_once(once, [name] {
    std::fprintf(stderr, "ringside: %s was called but no loaded library defines it; returning ncclSystemError\n",
                 name);
  });
  if (col::isActive()) col::noteMeta("nccl_missing_symbol", name);
  return nccl::kSystemError;
}

// The loaded NCCL, once, for the trace's meta.
void noteLibrary(void* real_fn) {
  static std::once_flag once;
  std::call_once(once, [real_fn] {
    std::string where = objectOf(real_fn);
    col::noteMeta("nccl_library", where.c_str());
  });
}

// NCCL's hash of a unique id (what it reports to its profiler plugin as the
// communicator's hash): djb2 with xor over the 128 bytes, chars signed.
uint64_t ncclIdHash(const ncclUniqueId& id) {
  uint64_t h = 5381;
  for (char c : id.internal) h = ((h << 5) + h) ^ static_cast<uint64_t>(static_cast<int64_t>(c));
  return h;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 29);
}

uint64_t stringHash(const char* s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (; *s != '\0'; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ULL;
  return h;
}

void commIdName(uint64_t h, char* out, size_t n) {
  std::snprintf(out, n, "nccl/%016llx", static_cast<unsigned long long>(h));
}

col::DType dtypeOf(int t) {
  switch (t) {
    case nccl::kInt8: return col::DType::kI8;
    case nccl::kUint8: return col::DType::kU8;
    case nccl::kInt32: return col::DType::kI32;
    case nccl::kUint32: return col::DType::kU32;
    case nccl::kInt64: return col::DType::kI64;
    case nccl::kUint64: return col::DType::kU64;
    case nccl::kFloat16: return col::DType::kF16;
    case nccl::kFloat32: return col::DType::kF32;
    case nccl::kFloat64: return col::DType::kF64;
    case nccl::kBfloat16: return col::DType::kBF16;
    default: return col::DType::kUnknown;
  }
}

col::ReduceOp redOpOf(int op) {
  switch (op) {
    case -1: return col::ReduceOp::kNone;
    case nccl::kSum: return col::ReduceOp::kSum;
    case nccl::kProd: return col::ReduceOp::kProd;
    case nccl::kMax: return col::ReduceOp::kMax;
    case nccl::kMin: return col::ReduceOp::kMin;
    default: return col::ReduceOp::kUnknown;  // avg, PreMulSum and other user-made ops
  }
}

// ---- NCCL queries, found lazily (exist in every NCCL since 2.x) ----
RealFunction<ncclResult_t (*)(ncclComm_t, int*)> g_user_rank("ncclCommUserRank");
RealFunction<ncclResult_t (*)(ncclComm_t, int*)> g_count("ncclCommCount");
RealFunction<ncclResult_t (*)(ncclComm_t, int*)> g_cu_device("ncclCommCuDevice");

int32_t query(RealFunction<ncclResult_t (*)(ncclComm_t, int*)>& fn, ncclComm_t comm) {
  auto f = fn.get();
  int v = -1;
  if (f == nullptr || comm == nullptr || f(comm, &v) != nccl::kSuccess) return -1;
  return v;
}

// Split calls seen per parent (every member rank splits its parent in the same order).
std::atomic<uint32_t> g_splits[256];

// A communicator we never saw created (ncclCommInitRankScalable, ncclCommShrink,
// created before tracing): registered on first use by size and creation order.
int32_t commFor(ncclComm_t comm) {
  if (comm == nullptr) return -1;
  int32_t c = col::findComm(comm);
  if (c >= 0) return c;
  int32_t rank = query(g_user_rank, comm), size = query(g_count, comm);
  c = col::registerComm(comm, rank, size, "nccl");
  if (c >= 0) {
    link::markWrapped(c);
    link::setCommDevice(c, query(g_cu_device, comm));
    col::noteCommCreated(c, -1, 0);
  }
  return c;
}

// Registers a communicator NCCL just created and binds the profiler contexts
// created meanwhile.
int32_t registerCreated(ncclComm_t comm, int32_t rank, int32_t size, const char* name, int32_t parent,
                        const link::CreationWindow& w, int64_t created_ns, uint64_t nccl_hash) {
  if (comm == nullptr) return -1;
  int32_t c = col::registerCommNamed(comm, rank, size, "nccl", name);
  if (c < 0) return c;
  link::markWrapped(c);
  int32_t device = query(g_cu_device, comm);
  link::setCommDevice(c, device);
  link::noteNcclHash(nccl_hash, c);
  link::bindCreatedContexts(w, c, rank, size, device, 1);
  col::noteCommCreated(c, parent, created_ns);
  return c;
}

// With NCCL_DEBUG=INFO and NCCL_DEBUG_FILE (ringside record --nccl-log), the
// rings and trees NCCL printed for the communicators it just created.
void noteNcclLog() {
  static std::mutex mutex;
  static long offset = 0;
  static long owner = 0;  // the pid the offset and parser belong to (fork)
  static nccl_log::Parser* parser = nullptr;
  std::string path = nccl_log::debugFilePath();
  if (path.empty()) return;
  std::lock_guard<std::mutex> lock(mutex);
  long pid = static_cast<long>(getpid());
  if (parser == nullptr || owner != pid) {
    parser = new nccl_log::Parser(pid);  // a child's parser; the parent's stays with the parent
    offset = 0;
    owner = pid;
  }
  for (const nccl_log::CommTopology& t : nccl_log::readNew(path, pid, &offset, parser)) {
    int32_t c = t.comm != 0 ? col::findComm(reinterpret_cast<const void*>(t.comm)) : -1;
    if (c < 0) continue;
    for (const std::string& line : t.lines) col::noteCommTopology(c, line.c_str());
  }
}

bool begin() {
  if (t_depth > 0 || !col::activate()) return false;
  noteActive();
  return true;
}

// ---- the one shape of every collective / point-to-point wrapper ----
struct CallSpec {
  Op op;
  ncclComm_t comm;
  cudaStream_t stream;
  size_t count;       // elements as the API counts them
  int dtype;
  int redop;          // -1: not a reduction
  int root;           // root, or the peer of send/recv; -1 none
  bool per_rank;      // the buffer holds `count` elements per rank (reduce_scatter, alltoall)
};

template <class Fn, class... Args>
ncclResult_t callCollective(RealFunction<Fn>& real, const CallSpec& s, Args... args) {
  Fn fn = real.get();
  if (fn == nullptr) return missingReal(real.name());
  if (!begin()) return fn(args...);
  noteLibrary(reinterpret_cast<void*>(fn));
  Event e;
  e.kind = EventKind::kCollective;
  e.op = static_cast<uint8_t>(s.op);
  e.library = static_cast<uint8_t>(col::Library::kNccl);
  int32_t comm = commFor(s.comm);
  e.comm = static_cast<int16_t>(comm);
  e.key = static_cast<uint64_t>(col::nextSeq(comm));
  uint64_t count = s.count;
  if (s.per_rank && comm >= 0) {
    int32_t size = query(g_count, s.comm);
    if (size > 0) count *= static_cast<uint64_t>(size);
  }
  e.aux = count;
  e.bytes = count * nccl::dataTypeSize(s.dtype);
  e.peer = s.root;
  e.dtype = static_cast<uint8_t>(dtypeOf(s.dtype));
  e.reduce_op = static_cast<uint8_t>(redOpOf(s.redop));
  e.id = col::newCollectiveId();

  uint64_t group = link::currentGroupPlusOne();
  if (group != 0 && t_group_first == 0) t_group_first = e.id;
  link::Pending p;
  p.id = e.id;
  p.comm = comm;
  p.op = e.op;
  p.group = group;
  p.stream = reinterpret_cast<uint64_t>(s.stream);
  // The flight ring: entered now, queued when the API returns, done when the plugin sees the
  // kernels end (docs/flight-recorder.md, "NCCL").
  const flight::CallHandle outer_call = flight::current();
  p.flight = flight::enter(comm, static_cast<int64_t>(e.key), s.op, col::Library::kNccl,
                           static_cast<col::DType>(e.dtype), e.bytes, count, s.root, col::nowNs());
  bool queued = link::pushPending(p);

  col::pushGpuCorrelation(e.id);
  ++t_depth;
  e.t0 = col::nowNs();
  ncclResult_t r = fn(args...);
  e.t1 = col::nowNs();
  --t_depth;
  col::popGpuCorrelation();
  // Claimed by the profiler during the call: its kCollectiveGpu carries the
  // stream, device and (no) group already.
  bool claimed = group == 0 && queued && !link::retirePending(e.id);
  e.status = (r == nccl::kSuccess || r == nccl::kInProgress) ? 0 : 1;
  if (e.status == 0) {
    flight::returned(p.flight, e.t1, outer_call);
  } else {
    char text[96];
    std::snprintf(text, sizeof text, "%s returned %d (%s)", real.name(), r, nccl::resultName(r));
    flight::leave(p.flight, e.t1, false, text, outer_call);
  }
  col::emit(e);
  if (claimed) return r;

  Event g;
  g.kind = EventKind::kCollectiveGpu;
  g.id = e.id;
  g.key = reinterpret_cast<uint64_t>(s.stream);
  g.aux = group;
  g.peer = -1;
  g.comm = static_cast<int16_t>(link::commDevice(comm));
  g.library = e.library;
  g.op = e.op;
  col::emit(g);
  return r;
}

}  // namespace
}  // namespace ringside::interpose

// ---------------------------------------------------------------------------
// The exported definitions.
using ringside::interpose::CallSpec;
using ringside::interpose::RealFunction;
using ringside::collector::Op;

// The collectives and point-to-point calls, listed once:
//   X(name, Op, (parameters), (arguments), comm, stream, count, dtype, redop, root, per_rank)
#define RINGSIDE_NCCL_CALLS(X)                                                                               \
  X(ncclAllReduce, kAllreduce,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,             \
     ncclComm_t comm, cudaStream_t stream),                                                                  \
    (sendbuff, recvbuff, count, datatype, op, comm, stream), comm, stream, count, datatype, op, -1, false)   \
  X(ncclBroadcast, kBroadcast,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), comm, stream, count, datatype, -1, root, false) \
  X(ncclBcast, kBroadcast,                                                                                   \
    (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream),     \
    (buff, count, datatype, root, comm, stream), comm, stream, count, datatype, -1, root, false)             \
  X(ncclReduce, kReduce,                                                                                     \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,  \
     ncclComm_t comm, cudaStream_t stream),                                                                  \
    (sendbuff, recvbuff, count, datatype, op, root, comm, stream), comm, stream, count, datatype, op, root,  \
    false)                                                                                                   \
  X(ncclAllGather, kAllgather,                                                                               \
    (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,       \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, sendcount, datatype, comm, stream), comm, stream, sendcount, datatype, -1, -1,      \
    false)                                                                                                   \
  X(ncclReduceScatter, kReducescatter,                                                                       \
    (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,         \
     ncclComm_t comm, cudaStream_t stream),                                                                  \
    (sendbuff, recvbuff, recvcount, datatype, op, comm, stream), comm, stream, recvcount, datatype, op, -1,  \
    true)                                                                                                    \
  X(ncclAlltoAll, kAlltoall,                                                                                 \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,           \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, comm, stream), comm, stream, count, datatype, -1, -1, true)        \
  X(ncclGather, kGather,                                                                                     \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), comm, stream, count, datatype, -1, root, false) \
  X(ncclScatter, kScatter,                                                                                   \
    (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
     cudaStream_t stream),                                                                                   \
    (sendbuff, recvbuff, count, datatype, root, comm, stream), comm, stream, count, datatype, -1, root, false) \
  X(ncclSend, kSend,                                                                                         \
    (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,                 \
     cudaStream_t stream),                                                                                   \
    (sendbuff, count, datatype, peer, comm, stream), comm, stream, count, datatype, -1, peer, false)         \
  X(ncclRecv, kRecv,                                                                                         \
    (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream), \
    (recvbuff, count, datatype, peer, comm, stream), comm, stream, count, datatype, -1, peer, false)

#define RINGSIDE_DEFINE_NCCL_CALL(name, op, params, args, comm_, stream_, count_, dtype_, redop_, root_, per_rank_) \
  extern "C" RINGSIDE_EXPORT ncclResult_t name params;                                                            \
  extern "C" ncclResult_t name params {                                                                           \
    static RealFunction<ncclResult_t(*) params> real(#name);                                                      \
    CallSpec spec{Op::op, comm_, stream_, count_, dtype_, redop_, root_, per_rank_};                              \
    return ringside::interpose::callCollective(real, spec, RINGSIDE_NCCL_UNPACK args);                           \
  }
#define RINGSIDE_NCCL_UNPACK(...) __VA_ARGS__
RINGSIDE_NCCL_CALLS(RINGSIDE_DEFINE_NCCL_CALL)
#undef RINGSIDE_DEFINE_NCCL_CALL

// ---- groups ----
namespace ringside::interpose {
namespace {

ncclResult_t groupStart() {
  static RealFunction<ncclResult_t (*)()> real("ncclGroupStart");
  auto fn = real.get();
  if (fn == nullptr) return missingReal(real.name());
  if (!begin()) return fn();
  link::groupStarted();
  return fn();
}

ncclResult_t groupEnd() {
  static RealFunction<ncclResult_t (*)()> real("ncclGroupEnd");
  auto fn = real.get();
  if (fn == nullptr) return missingReal(real.name());
  if (t_depth > 0 || link::currentGroupPlusOne() == 0) return fn();  // nested in our call, or not ours
  // NCCL launches the whole group here: its GPU work is correlated with the
  // group's first call, and the profiler claims the group's calls here (< v5).
  uint64_t first = t_group_first;
  if (first != 0) col::pushGpuCorrelation(first);
  ++t_depth;
  ncclResult_t r = fn();
  --t_depth;
  if (first != 0) col::popGpuCorrelation();
  if (r != nccl::kSuccess && r != nccl::kInProgress) {  // the group's calls launch here: its error's dump
    char text[96];
    std::snprintf(text, sizeof text, "ncclGroupEnd returned %d (%s)", r, nccl::resultName(r));
    flight::error(text, col::nowNs());
  }
  if (link::groupEnded()) {
    link::retireGroup();
    t_group_first = 0;
  }
  return r;
}

// ---- communicators ----
using InitRankFn = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int);
using InitRankConfigFn = ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);

template <class Call>
ncclResult_t initFromId(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, void* real_fn,
                        Call&& call) {
  if (!begin()) return call();
  noteLibrary(real_fn);
  link::startGpuActivityOnce();
  uint64_t h = ncclIdHash(id);
  link::CreationWindow w = link::openCreationWindow(h);
  ++t_depth;
  ncclResult_t r = call();
  --t_depth;
  int64_t t1 = col::nowNs();
  if ((r == nccl::kSuccess || r == nccl::kInProgress) && out != nullptr && *out != nullptr) {
    char name[48];
    commIdName(h, name, sizeof name);
    registerCreated(*out, rank, nranks, name, -1, w, t1, h);
    link::maybeSetIdentity(rank, nranks);
    noteNcclLog();
  }
  return r;
}

ncclResult_t commEnd(const char* real_name, ncclComm_t comm, const char* end_state) {
  // One table per name: destroy and abort are separate functions.
  static RealFunction<ncclResult_t (*)(ncclComm_t)> destroy("ncclCommDestroy");
  static RealFunction<ncclResult_t (*)(ncclComm_t)> abort_("ncclCommAbort");
  auto& real = std::strcmp(real_name, "ncclCommAbort") == 0 ? abort_ : destroy;
  auto fn = real.get();
  if (fn == nullptr) return missingReal(real.name());
  if (t_depth > 0 || !col::isActive()) return fn(comm);
  int32_t c = col::findComm(comm);
  col::flushGpuActivity();  // CUPTI records of this communicator's work, before its context may go
  ++t_depth;
  ncclResult_t r = fn(comm);
  --t_depth;
  const int64_t now = col::nowNs();
  if (c >= 0) col::noteCommEnded(c, now, end_state);
  if (&real == &abort_) {  // an abort is NCCL's way out of an error or a hang: a dump, like a timeout
    char text[96];
    std::snprintf(text, sizeof text, "ncclCommAbort on %s", c >= 0 ? col::commName(c) : "an untraced communicator");
    flight::error(text, now);
  }
  return r;
}

}  // namespace
}  // namespace ringside::interpose

extern "C" RINGSIDE_EXPORT ncclResult_t ncclGroupStart();
extern "C" ncclResult_t ncclGroupStart() { return ringside::interpose::groupStart(); }
extern "C" RINGSIDE_EXPORT ncclResult_t ncclGroupEnd();
extern "C" ncclResult_t ncclGroupEnd() { return ringside::interpose::groupEnd(); }

extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                                          int rank);
extern "C" ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  static RealFunction<ringside::interpose::InitRankFn> real("ncclCommInitRank");
  auto fn = real.get();
  if (fn == nullptr) return ringside::interpose::missingReal(real.name());
  return ringside::interpose::initFromId(comm, nranks, commId, rank, reinterpret_cast<void*>(fn),
                                         [&] { return fn(comm, nranks, commId, rank); });
}

extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId,
                                                                int rank, ncclConfig_t* config);
extern "C" ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                               ncclConfig_t* config) {
  static RealFunction<ringside::interpose::InitRankConfigFn> real("ncclCommInitRankConfig");
  auto fn = real.get();
  if (fn == nullptr) return ringside::interpose::missingReal(real.name());
  return ringside::interpose::initFromId(comm, nranks, commId, rank, reinterpret_cast<void*>(fn),
                                         [&] { return fn(comm, nranks, commId, rank, config); });
}

extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist);
extern "C" ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  namespace ri = ringside::interpose;
  namespace col = ringside::collector;
  static RealFunction<ncclResult_t (*)(ncclComm_t*, int, const int*)> real("ncclCommInitAll");
  auto fn = real.get();
  if (fn == nullptr) return ri::missingReal(real.name());
  if (!ri::begin()) return fn(comms, ndev, devlist);
  ri::noteLibrary(reinterpret_cast<void*>(fn));
  ri::nccl_link::startGpuActivityOnce();
  // One process holds every rank: the id only has to be unique and stable here.
  static std::atomic<uint64_t> calls{0};
  uint64_t h = ri::mix(ri::mix(0x6e63636c616c6cULL, static_cast<uint64_t>(getpid())), calls.fetch_add(1));
  ri::nccl_link::CreationWindow w = ri::nccl_link::openCreationWindow(0);
  ++ri::t_depth;
  ncclResult_t r = fn(comms, ndev, devlist);
  --ri::t_depth;
  int64_t t1 = col::nowNs();
  if (r == ringside::nccl::kSuccess && comms != nullptr) {
    char name[48];
    ri::commIdName(h, name, sizeof name);
    for (int i = 0; i < ndev; ++i) ri::registerCreated(comms[i], i, ndev, name, -1, w, t1, 0);
    ri::noteNcclLog();
  }
  return r;
}

extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                                       ncclConfig_t* config);
extern "C" ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                      ncclConfig_t* config) {
  namespace ri = ringside::interpose;
  namespace col = ringside::collector;
  static RealFunction<ncclResult_t (*)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*)> real("ncclCommSplit");
  auto fn = real.get();
  if (fn == nullptr) return ri::missingReal(real.name());
  if (!ri::begin()) return fn(comm, color, key, newcomm, config);
  int32_t parent = ri::commFor(comm);
  // Every member of the parent splits it in the same order: the split's number
  // on the parent, its color and the parent's id name the child on every rank.
  uint32_t nth = parent >= 0 && parent < 256 ? ri::g_splits[parent].fetch_add(1) : 0;
  uint64_t h = ri::mix(ri::mix(ri::stringHash(col::commName(parent)), static_cast<uint64_t>(static_cast<int64_t>(color))),
                       nth);
  ri::nccl_link::CreationWindow w = ri::nccl_link::openCreationWindow(0);
  ++ri::t_depth;
  ncclResult_t r = fn(comm, color, key, newcomm, config);
  --ri::t_depth;
  int64_t t1 = col::nowNs();
  if ((r == ringside::nccl::kSuccess || r == ringside::nccl::kInProgress) && newcomm != nullptr &&
      *newcomm != nullptr) {
    int32_t rank = ri::query(ri::g_user_rank, *newcomm), size = ri::query(ri::g_count, *newcomm);
    char name[48];
    ri::commIdName(h, name, sizeof name);
    ri::registerCreated(*newcomm, rank, size, name, parent, w, t1, 0);
    ri::noteNcclLog();
  }
  return r;
}

extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm);
extern "C" ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  return ringside::interpose::commEnd("ncclCommDestroy", comm, "destroyed");
}
extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm);
extern "C" ncclResult_t ncclCommAbort(ncclComm_t comm) {
  return ringside::interpose::commEnd("ncclCommAbort", comm, "aborted");
}
extern "C" RINGSIDE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm);
extern "C" ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  // Finalize flushes the communicator's outstanding work; destroy/abort end it.
  static RealFunction<ncclResult_t (*)(ncclComm_t)> real("ncclCommFinalize");
  auto fn = real.get();
  if (fn == nullptr) return ringside::interpose::missingReal(real.name());
  ++ringside::interpose::t_depth;
  ncclResult_t r = fn(comm);
  --ringside::interpose::t_depth;
  return r;
}
