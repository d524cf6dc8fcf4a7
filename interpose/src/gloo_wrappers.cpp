// Wrappers for Debian's Gloo (libgloo.so.0).
//
// What is wrapped, and how:
// - The function-style collectives (gloo::allreduce(AllreduceOptions&), ...),
//   listed once in RINGSIDE_GLOO_COLLECTIVES, are interposed by symbol: the
//   application (or libtorch) binds to our definitions first. We time the real
//   call and describe it from its options object.
// - gloo::Context's constructor gives each communicator's rank and size (its
//   arguments: the field layout differs between Gloo versions, gloo_context.h).
// - The TCP transport's UnboundBuffer::send/recv are virtual and reached
//   through a vtable whose entries are bound inside libgloo, so symbol
//   interposition cannot see them: we patch the vtable once.
// - UnboundBuffer::handleSendCompletion/handleRecvCompletion are called by the
//   transport's event loop through the PLT when the last byte of a message was
//   written/read: interposed by symbol, they give each transfer's end time.
// Every wrapper has the same shape: find the real function (lazily), record
// only when the collector is active and we are not nested, time the real call,
// let its exceptions through, never add one of our own.
#include <gloo/allgather.h>
#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/context.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>
#include <gloo/transport/unbound_buffer.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "elf_binding.h"
#include "gloo_context.h"
#include "gloo_probe.h"
#include "gloo_reroute.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/flight.h"
#include "symbols.h"

namespace ringside::interpose {
namespace {

namespace col = ringside::collector;
namespace flight = ringside::collector::flight;
using col::Event;
using col::EventKind;
using col::Op;

// ---------------------------------------------------------------------------
// Reading Gloo's options objects. Their fields are protected; a derived type
// may name them, which gives pointers-to-member usable on the base object.
struct AllreducePeek : gloo::AllreduceOptions {
  static constexpr auto impl = &AllreducePeek::impl_;
};
struct BroadcastPeek : gloo::BroadcastOptions {
  static constexpr auto tag = &BroadcastPeek::tag;
  static constexpr auto context = &BroadcastPeek::context;
  static constexpr auto elements = &BroadcastPeek::elements;
  static constexpr auto elementSize = &BroadcastPeek::elementSize;
  static constexpr auto root = &BroadcastPeek::root;
};
struct AllgatherPeek : gloo::AllgatherOptions {
  static constexpr auto tag = &AllgatherPeek::tag;
  static constexpr auto context = &AllgatherPeek::context;
  static constexpr auto in = &AllgatherPeek::in;
  static constexpr auto out = &AllgatherPeek::out;
  static constexpr auto elementSize = &AllgatherPeek::elementSize;
};
struct AllgathervPeek : gloo::AllgathervOptions {
  static constexpr auto tag = &AllgathervPeek::tag;
  static constexpr auto context = &AllgathervPeek::context;
  static constexpr auto elements = &AllgathervPeek::elements;
  static constexpr auto elementSize = &AllgathervPeek::elementSize;
};
struct ReducePeek : gloo::ReduceOptions {
  static constexpr auto tag = &ReducePeek::tag;
  static constexpr auto context = &ReducePeek::context;
  static constexpr auto elements = &ReducePeek::elements;
  static constexpr auto elementSize = &ReducePeek::elementSize;
  static constexpr auto root = &ReducePeek::root;
  static constexpr auto reduce = &ReducePeek::reduce;
};
struct GatherPeek : gloo::GatherOptions {
  static constexpr auto tag = &GatherPeek::tag;
  static constexpr auto context = &GatherPeek::context;
  static constexpr auto in = &GatherPeek::in;
  static constexpr auto elementSize = &GatherPeek::elementSize;
  static constexpr auto root = &GatherPeek::root;
};
struct ScatterPeek : gloo::ScatterOptions {
  static constexpr auto tag = &ScatterPeek::tag;
  static constexpr auto context = &ScatterPeek::context;
  static constexpr auto out = &ScatterPeek::out;
  static constexpr auto elementSize = &ScatterPeek::elementSize;
  static constexpr auto root = &ScatterPeek::root;
};
struct AlltoallPeek : gloo::AlltoallOptions {
  static constexpr auto tag = &AlltoallPeek::tag;
  static constexpr auto context = &AlltoallPeek::context;
  static constexpr auto in = &AlltoallPeek::in;
  static constexpr auto elementSize = &AlltoallPeek::elementSize;
};
struct AlltoallvPeek : gloo::AlltoallvOptions {
  static constexpr auto tag = &AlltoallvPeek::tag;
  static constexpr auto context = &AlltoallvPeek::context;
  static constexpr auto inLengthPerRank = &AlltoallvPeek::inLengthPerRank;
  static constexpr auto elementSize = &AlltoallvPeek::elementSize;
};
struct BarrierPeek : gloo::BarrierOptions {
  static constexpr auto tag = &BarrierPeek::tag;
  static constexpr auto context = &BarrierPeek::context;
};

// What a call is: its communicator, size, element type and root.
struct Call {
  gloo::Context* context = nullptr;
  uint64_t bytes = 0;
  uint64_t elements = 0;
  size_t element_size = 0;
  int32_t root = -1;
  const gloo::AllreduceOptions::Func* reduce = nullptr;
  col::Algorithm algorithm = col::Algorithm::kDefault;
  uint32_t tag = 0;  // the caller's tag: PyTorch numbers its collectives with it, in program order
};

uint64_t sizeOf(const std::unique_ptr<gloo::transport::UnboundBuffer>& b) { return b ? b->size : 0; }

Call describe(const gloo::AllreduceOptions& o) {
  const auto& impl = o.*AllreducePeek::impl;
  Call c;
  c.context = impl.context.get();
  c.elements = impl.elements;
  c.element_size = impl.elementSize;
  c.bytes = impl.elements * impl.elementSize;
  c.reduce = &impl.reduce;
  c.tag = impl.tag;
  // gloo::allreduce runs its ring unless told BCUBE.
  c.algorithm = impl.algorithm == gloo::detail::AllreduceOptionsImpl::BCUBE ? col::Algorithm::kBcube
                                                                              : col::Algorithm::kRing;
  return c;
}
Call describe(const gloo::BroadcastOptions& o) {
  Call c;
  c.context = (o.*BroadcastPeek::context).get();
  c.tag = o.*BroadcastPeek::tag;
  c.elements = o.*BroadcastPeek::elements;
  c.element_size = o.*BroadcastPeek::elementSize;
  c.bytes = c.elements * c.element_size;
  c.root = o.*BroadcastPeek::root;
  return c;
}
Call describe(const gloo::AllgatherOptions& o) {
  Call c;
  c.context = (o.*AllgatherPeek::context).get();
  c.tag = o.*AllgatherPeek::tag;
  c.element_size = o.*AllgatherPeek::elementSize;
  // This rank's contribution; in place (no input) it is a 1/size share of the output.
  c.bytes = sizeOf(o.*AllgatherPeek::in);
  ContextShape shape;
  if (c.bytes == 0 && contextShape(c.context, &shape))
    c.bytes = sizeOf(o.*AllgatherPeek::out) / static_cast<uint64_t>(shape.size);
  return c;
}
Call describe(const gloo::AllgathervOptions& o) {
  Call c;
  c.context = (o.*AllgathervPeek::context).get();
  c.tag = o.*AllgathervPeek::tag;
  c.element_size = o.*AllgathervPeek::elementSize;
  const auto& el = o.*AllgathervPeek::elements;
  ContextShape shape;
  if (contextShape(c.context, &shape) && static_cast<size_t>(shape.rank) < el.size())
    c.elements = el[static_cast<size_t>(shape.rank)];
  c.bytes = c.elements * c.element_size;
  return c;
}
Call describe(const gloo::ReduceOptions& o) {
  Call c;
  c.context = (o.*ReducePeek::context).get();
  c.tag = o.*ReducePeek::tag;
  c.elements = o.*ReducePeek::elements;
  c.element_size = o.*ReducePeek::elementSize;
  c.bytes = c.elements * c.element_size;
  c.root = o.*ReducePeek::root;
  c.reduce = &(o.*ReducePeek::reduce);
  return c;
}
Call describe(const gloo::GatherOptions& o) {
  Call c;
  c.context = (o.*GatherPeek::context).get();
  c.tag = o.*GatherPeek::tag;
  c.element_size = o.*GatherPeek::elementSize;
  c.bytes = sizeOf(o.*GatherPeek::in);
  c.root = o.*GatherPeek::root;
  return c;
}
Call describe(const gloo::ScatterOptions& o) {
  Call c;
  c.context = (o.*ScatterPeek::context).get();
  c.tag = o.*ScatterPeek::tag;
  c.element_size = o.*ScatterPeek::elementSize;
  c.bytes = sizeOf(o.*ScatterPeek::out);  // what this rank receives
  c.root = o.*ScatterPeek::root;
  return c;
}
Call describe(const gloo::AlltoallOptions& o) {
  Call c;
  c.context = (o.*AlltoallPeek::context).get();
  c.tag = o.*AlltoallPeek::tag;
  c.element_size = o.*AlltoallPeek::elementSize;
  c.bytes = sizeOf(o.*AlltoallPeek::in);
  return c;
}
Call describe(const gloo::AlltoallvOptions& o) {
  Call c;
  c.context = (o.*AlltoallvPeek::context).get();
  c.tag = o.*AlltoallvPeek::tag;
  c.element_size = o.*AlltoallvPeek::elementSize;
  for (size_t n : o.*AlltoallvPeek::inLengthPerRank) c.bytes += n;
  return c;
}
Call describe(const gloo::BarrierOptions& o) {
  Call c;
  c.context = (o.*BarrierPeek::context).get();
  c.tag = o.*BarrierPeek::tag;
  return c;
}

// ---------------------------------------------------------------------------
// Communicators and the transport hooks.

thread_local int t_depth = 0;        // > 0 inside a wrapped collective
thread_local int16_t t_comm = -1;    // communicator of the collective we are in

int32_t commFor(gloo::Context* ctx);
void installTransportHooks();

// Set once a collective wrapper ran in this process: only then is Gloo "active".
std::atomic<bool> g_collective_reached{false};

void noteActive() {
  static std::once_flag once;
  std::call_once(once, [] { col::noteMeta("interposition", "active: gloo"); });
}

void noteLayout(ContextLayout layout) {
  static std::atomic<int> noted{-1};
  int l = static_cast<int>(layout);
  if (layout == ContextLayout::kUnknown || noted.exchange(l) == l) return;
  col::noteMeta("gloo_context_layout", contextLayoutName(layout));
}

void glooVerdictAtExit();

void onContextCreated(gloo::Context* ctx, int rank, int size) {
  forgetContext(ctx);
  ContextLayout layout = noteContextConstructed(ctx, rank, size);
  if (!col::activate()) return;
  noteLayout(layout);
  // Registered after the collector's own exit flush, so it runs before it.
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(glooVerdictAtExit); });
  col::registerComm(ctx, rank, size, "gloo");
  col::setIdentity(rank, size, "gloo");
  installTransportHooks();
}

// Debian-era layout, confirmed without a constructor: the first word is the
// address gloo::Context's vtable (exported where it exists) puts there.
bool vptrLayoutConfirmed(const gloo::Context* ctx) {
  static void* vt = findRealSymbol("_ZTVN4gloo7ContextE");
  if (vt == nullptr) return false;
  void* first = nullptr;
  std::memcpy(&first, ctx, sizeof first);
  return first == static_cast<char*>(vt) + 2 * sizeof(void*);
}

int32_t commFor(gloo::Context* ctx) {
  if (ctx == nullptr) return -1;
  int32_t c = col::findComm(ctx);
  if (c < 0) {
    // Created before we could see it (or through a constructor we don't wrap):
    // its fields are read only where the layout is identified.
    ContextShape shape;
    bool known = contextShape(ctx, &shape);
    if (!known && vptrLayoutConfirmed(ctx) && ctx->size > 0 && ctx->rank >= 0 &&
        ctx->rank < ctx->size) {
      shape = ContextShape{ctx->rank, ctx->size, false};
      known = true;
    }
    if (known) {
      col::registerComm(ctx, shape.rank, shape.size, "gloo");
      col::setIdentity(shape.rank, shape.size, "gloo");
    } else {
      static std::once_flag once;
      std::call_once(once, [] {
        col::noteMeta(
            "gloo_context",
            "a Gloo context was created where ringside could not see it and its field layout is "
            "not identified: its rank and size are unknown");
      });
      col::registerComm(ctx, -1, -1, "gloo");
    }
    installTransportHooks();
    c = col::findComm(ctx);
  }
  return c;
}

using UB = gloo::transport::UnboundBuffer;
using SendFn = void (*)(UB*, int, uint64_t, size_t, size_t);
using RecvAnyFn = void (*)(UB*, std::vector<int>, uint64_t, size_t, size_t);

std::atomic<SendFn> g_real_send{nullptr};
std::atomic<SendFn> g_real_recv{nullptr};
std::atomic<RecvAnyFn> g_real_recv_any{nullptr};

void emitPost(UB* self, int peer, uint64_t slot, size_t offset, size_t nbytes, col::Side side) {
  if (!col::isActive()) return;
  Event e;
  e.kind = EventKind::kTransferPost;
  e.t0 = col::nowNs();
  e.key = reinterpret_cast<uint64_t>(self);
  e.peer = peer;
  e.bytes = nbytes != UB::kUnspecifiedByteCount ? nbytes : (self->size > offset ? self->size - offset : 0);
  e.aux = slot;
  e.id = col::currentCollective();
  e.comm = t_comm;
  e.side = static_cast<uint8_t>(side);
  flight::post(t_comm, e.key, peer, side, e.bytes, e.t0);
  col::emit(e);
}

void hookSend(UB* self, int dst, uint64_t slot, size_t offset, size_t nbytes) {
  emitPost(self, dst, slot, offset, nbytes, col::Side::kSend);
  g_real_send.load(std::memory_order_acquire)(self, dst, slot, offset, nbytes);
}

void hookRecv(UB* self, int src, uint64_t slot, size_t offset, size_t nbytes) {
  emitPost(self, src, slot, offset, nbytes, col::Side::kRecv);
  g_real_recv.load(std::memory_order_acquire)(self, src, slot, offset, nbytes);
}

void hookRecvAny(UB* self, std::vector<int> srcs, uint64_t slot, size_t offset, size_t nbytes) {
  emitPost(self, srcs.size() == 1 ? srcs[0] : -1, slot, offset, nbytes, col::Side::kRecv);
  g_real_recv_any.load(std::memory_order_acquire)(self, std::move(srcs), slot, offset, nbytes);
}

void installTransportHooks() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* vt_name = "_ZTVN4gloo9transport3tcp13UnboundBufferE";
    auto** vt = static_cast<void**>(findRealSymbol(vt_name));
    void* send = findRealSymbol("_ZN4gloo9transport3tcp13UnboundBuffer4sendEimmm");
    void* recv = findRealSymbol("_ZN4gloo9transport3tcp13UnboundBuffer4recvEimmm");
    void* recv_any = findRealSymbol("_ZN4gloo9transport3tcp13UnboundBuffer4recvESt6vectorIiSaIiEEmmm");
    size_t slots = vt != nullptr ? symbolSize(vt) / sizeof(void*) : 0;
    if (vt == nullptr || send == nullptr || recv == nullptr || recv_any == nullptr || slots == 0) {
      col::noteMeta("transfers", "inactive: Gloo's TCP UnboundBuffer was not found (another transport?)");
      return;
    }
    g_real_send.store(reinterpret_cast<SendFn>(send));
    g_real_recv.store(reinterpret_cast<SendFn>(recv));
    g_real_recv_any.store(reinterpret_cast<RecvAnyFn>(recv_any));
    int n = patchPointerTable(vt, slots, send, reinterpret_cast<void*>(&hookSend)) +
            patchPointerTable(vt, slots, recv, reinterpret_cast<void*>(&hookRecv)) +
            patchPointerTable(vt, slots, recv_any, reinterpret_cast<void*>(&hookRecvAny));
    col::noteMeta("transfers", n == 3 ? "active: gloo tcp UnboundBuffer send/recv"
                                      : "partial: could not patch every send/recv entry of Gloo's vtable");
  });
}

// ---------------------------------------------------------------------------
// The collectives, listed once: name, Op, options type, mangled symbol.
#define RINGSIDE_GLOO_COLLECTIVES(X)                                                      \
  X(allreduce, kAllreduce, const gloo::AllreduceOptions, "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE") \
  X(broadcast, kBroadcast, gloo::BroadcastOptions, "_ZN4gloo9broadcastERNS_16BroadcastOptionsE")        \
  X(allgather, kAllgather, gloo::AllgatherOptions, "_ZN4gloo9allgatherERNS_16AllgatherOptionsE")        \
  X(allgatherv, kAllgatherv, gloo::AllgathervOptions, "_ZN4gloo10allgathervERNS_17AllgathervOptionsE")  \
  X(reduce, kReduce, gloo::ReduceOptions, "_ZN4gloo6reduceERNS_13ReduceOptionsE")                       \
  X(gather, kGather, gloo::GatherOptions, "_ZN4gloo6gatherERNS_13GatherOptionsE")                       \
  X(scatter, kScatter, gloo::ScatterOptions, "_ZN4gloo7scatterERNS_14ScatterOptionsE")                  \
  X(alltoall, kAlltoall, gloo::AlltoallOptions, "_ZN4gloo8alltoallERNS_15AlltoallOptionsE")             \
  X(alltoallv, kAlltoallv, gloo::AlltoallvOptions, "_ZN4gloo9alltoallvERNS_16AlltoallvOptionsE")        \
  X(barrier, kBarrier, gloo::BarrierOptions, "_ZN4gloo7barrierERNS_14BarrierOptionsE")

[[noreturn]] void missingReal(const char* name) {
  // Only reachable if the process bound to our gloo symbol but no loaded
  // object defines the real one: we cannot do the work, and must not pretend.
  throw std::runtime_error(std::string("ringside: the real Gloo function ") + name +
                           " was not found in any loaded library");
}

// True in a process that holds PyTorch's Gloo process group (it tags every
// collective with its own call counter).
bool pytorchNumbersCalls() {
  static const bool yes = findRealSymbol("_ZTVN4c10d16ProcessGroupGlooE") != nullptr;
  return yes;
}

// A/B runs: all-reduces the reference can do run there (each named by its tag) and are traced
// by it.
template <class Opts>
bool rerouted(Op op, Opts& opts) {
  if constexpr (std::is_same_v<std::remove_const_t<Opts>, gloo::AllreduceOptions>) {
    Call call = describe(opts);
    if (op == Op::kAllreduce && call.reduce != nullptr) {
      return rerouteAllreduce(opts.*AllreducePeek::impl, classifyReduce(*call.reduce, call.element_size),
                              pytorchNumbersCalls());
    }
  }
  (void)op;
  (void)opts;
  return false;
}

// The one shape of every collective wrapper.
template <class Opts>
void wrapCollective(Op op, Opts& opts, void (*real)(Opts&), const char* name) {
  if (real == nullptr) missingReal(name);
  if (t_depth > 0) {
    real(opts);
    return;
  }
  if (!g_collective_reached.load(std::memory_order_relaxed)) g_collective_reached.store(true);
  if (rerouteRequested() && rerouted(op, opts)) return;
  if (!col::activate()) {
    real(opts);
    return;
  }
  noteActive();
  Call call = describe(opts);
  Event e;
  e.kind = EventKind::kCollective;
  e.op = static_cast<uint8_t>(op);
  e.library = static_cast<uint8_t>(col::Library::kGloo);
  e.comm = static_cast<int16_t>(commFor(call.context));
  // seq must name the same call on every rank. PyTorch issues a group's
  // collectives from two worker threads, so the order they reach us differs
  // between ranks; but it numbers them in program order with Gloo's tag, the
  // same on every rank: in PyTorch's processes the tag is the seq.
  e.key = pytorchNumbersCalls() ? call.tag : static_cast<uint64_t>(col::nextSeq(e.comm));
  e.bytes = call.bytes;
  e.aux = call.elements != 0 ? call.elements : (call.element_size != 0 ? call.bytes / call.element_size : 0);
  e.peer = call.root;
  e.algorithm = static_cast<uint8_t>(call.algorithm);
  if (call.reduce != nullptr) {
    ReduceKind k = classifyReduce(*call.reduce, call.element_size);
    e.dtype = static_cast<uint8_t>(k.dtype);
    e.reduce_op = static_cast<uint8_t>(k.op);
  }
  e.id = col::newCollectiveId();
  uint64_t outer = col::currentCollective();
  int16_t outer_comm = t_comm;
  col::setCurrentCollective(e.id);
  t_comm = e.comm;
  ++t_depth;
  e.t0 = col::nowNs();
  const flight::CallHandle outer_call = flight::current();
  const flight::CallHandle call_slot =
      flight::enter(e.comm, static_cast<int64_t>(e.key), op, col::Library::kGloo,
                    static_cast<col::DType>(e.dtype), e.bytes, e.aux, e.peer, e.t0);
  // Leaves the call: its event, the flight ring (a failure stamps a dump with `error`).
  auto leave = [&](bool ok, const char* error) {
    e.t1 = col::nowNs();
    e.status = ok ? 0 : 1;
    --t_depth;
    t_comm = outer_comm;
    col::setCurrentCollective(outer);
    flight::leave(call_slot, e.t1, ok, error, outer_call);
    col::emit(e);
  };
  try {
    real(opts);
  } catch (const std::exception& ex) {
    leave(false, ex.what());
    throw;
  } catch (...) {
    leave(false, nullptr);
    throw;
  }
  leave(true, nullptr);
}

}  // namespace

namespace {

constexpr const char* kPgVtable = "_ZTVN4c10d16ProcessGroupGlooE";
constexpr const char* kAllreduce = "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE";

std::string nameOf(const std::string& path, const char* fallback) {
  return path.empty() ? fallback : path;
}

// Why no Gloo collective reached ringside in this process, from the loaded
// objects: whether Gloo's functions are exported, and whether the object that
// calls them (PyTorch's, where its Gloo process group is) imports them through
// relocations a preload library can take over. `pg` may be null.
std::string glooInactiveReason(void* pg) {
  void* real = findRealSymbol(kAllreduce);
  void* caller = pg != nullptr ? pg : real;
  std::string where = nameOf(objectOf(caller), "the program");
  if (real == nullptr)
    return "inactive: Gloo is linked statically into " + where +
           " and hidden (its functions are not exported: hidden visibility or -Wl,--exclude-libs), "
           "so its calls never reach ringside (use a PyTorch whose Gloo is exported, such as the "
           "pip wheels or Debian's python3-torch)";
  ImportInfo imp = inspectImport(caller, kAllreduce);
  if (imp.found && imp.symbolic)
    return "inactive: " + where +
           " is linked with -Bsymbolic: it binds its own calls of Gloo to itself, "
           "so they never reach ringside";
  if (imp.found && imp.relocations == 0) {
    std::string also =
        objectOf(real) == objectOf(caller) ? "" : " (Gloo is in " + objectOf(real) + ")";
    return "inactive: " + where +
           " exports Gloo's functions but calls gloo::allreduce directly, with no "
           "relocation for it (-Bsymbolic-functions, protected visibility or LTO)" +
           also + ", so its calls never reach ringside";
  }
  if (imp.found && imp.slot == real)
    return "inactive: " + where + " binds gloo::allreduce to " + nameOf(objectOf(real), "Gloo") +
           " past ringside (was libringside_preload.so loaded after it, not through LD_PRELOAD?)";
  return "inactive: no Gloo collective was called (" + where +
         " imports Gloo's functions through relocations, where ringside would have seen them)";
}

bool callsBindPastUs(const std::string& reason) {
  return reason.rfind("inactive: no Gloo collective was called", 0) != 0;
}

// Registered once the first Gloo context made the collector active (so it runs
// before the collector's exit flush): a process that created contexts but
// never reached a collective wrapper says why instead of claiming success.
// `interposition` says "inactive" only where the calls bypassed ringside and
// nothing else (NCCL) was recorded; otherwise the finding goes under
// `gloo_interposition` and leaves the process's own verdict alone.
void glooVerdictAtExit() {
  if (g_collective_reached.load() || !col::isActive()) return;
  std::string why = glooInactiveReason(findRealSymbol(kPgVtable));
  bool alone = callsBindPastUs(why) && col::counters().emitted == 0;
  col::noteMeta(alone ? "interposition" : "gloo_interposition", why.c_str());
}

}  // namespace

// At exit of a process that never reached a Gloo wrapper (the collector is
// dormant): if it is a rank of a job (the launcher said so) and PyTorch's Gloo
// process group is present, while its Gloo calls could not have reached us
// (Gloo hidden, or bound inside its library), leave a rank file that says so,
// so the merged trace and every report can warn instead of showing an empty
// run. Where the calls would have reached us, the process simply used no Gloo
// (e.g. an NCCL job): nothing is written.
void checkStaticGlooAtExit() {
  if (col::isActive() || g_collective_reached.load() || std::getenv("RINGSIDE_DISABLE") != nullptr)
    return;
  if (std::getenv("RANK") == nullptr && std::getenv("OMPI_COMM_WORLD_RANK") == nullptr &&
      std::getenv("SLURM_PROCID") == nullptr && std::getenv("PMI_RANK") == nullptr)
    return;
  void* pg = findRealSymbol(kPgVtable);
  if (pg == nullptr) return;  // no Gloo process group in this process
  std::string why = glooInactiveReason(pg);
  if (!callsBindPastUs(why)) return;
  if (!col::activate()) return;
  col::noteMeta("interposition", why.c_str());
  col::shutdown();
}

}  // namespace ringside::interpose

// ---------------------------------------------------------------------------
// The exported definitions. asm labels give them Gloo's mangled names.
using ringside::interpose::RealFunction;

#define RINGSIDE_DEFINE_GLOO_WRAPPER(name, op, Opts, mangled)                                  \
  extern "C" RINGSIDE_EXPORT void ringside_gloo_##name(Opts& opts) __asm__(mangled);            \
  extern "C" void ringside_gloo_##name(Opts& opts) {                                            \
    static RealFunction<void (*)(Opts&)> real(mangled);                                         \
    ringside::interpose::wrapCollective(ringside::collector::Op::op, opts, real.get(), #name); \
  }
RINGSIDE_GLOO_COLLECTIVES(RINGSIDE_DEFINE_GLOO_WRAPPER)
#undef RINGSIDE_DEFINE_GLOO_WRAPPER

// gloo::Context::Context(int rank, int size, int base): complete (C1) and base
// object (C2) constructors. rendezvous::Context, which PyTorch uses, calls C2.
#define RINGSIDE_DEFINE_CONTEXT_CTOR(variant, mangled)                                           \
  extern "C" RINGSIDE_EXPORT void ringside_gloo_context_##variant(gloo::Context* self, int rank, \
                                                                   int size, int base)          \
      __asm__(mangled);                                                                          \
  extern "C" void ringside_gloo_context_##variant(gloo::Context* self, int rank, int size,       \
                                                   int base) {                                   \
    static RealFunction<void (*)(gloo::Context*, int, int, int)> real(mangled);                  \
    auto fn = real.get();                                                                        \
    if (fn == nullptr) ringside::interpose::missingReal(mangled);                                \
    fn(self, rank, size, base);                                                                  \
    ringside::interpose::onContextCreated(self, rank, size);                                     \
  }
RINGSIDE_DEFINE_CONTEXT_CTOR(c1, "_ZN4gloo7ContextC1Eiii")
RINGSIDE_DEFINE_CONTEXT_CTOR(c2, "_ZN4gloo7ContextC2Eiii")
#undef RINGSIDE_DEFINE_CONTEXT_CTOR

// UnboundBuffer completions, called by the transport's loop thread.
#define RINGSIDE_DEFINE_COMPLETION(name, which, mangled)                                           \
  extern "C" RINGSIDE_EXPORT void ringside_gloo_##name(void* self, int rank) __asm__(mangled);    \
  extern "C" void ringside_gloo_##name(void* self, int rank) {                                    \
    static RealFunction<void (*)(void*, int)> real(mangled);                                      \
    auto fn = real.get();                                                                         \
    if (fn == nullptr) ringside::interpose::missingReal(mangled);                                 \
    if (ringside::collector::isActive()) {                                                        \
      ringside::collector::Event e;                                                               \
      e.kind = ringside::collector::EventKind::kTransferDone;                                     \
      e.t1 = ringside::collector::nowNs();                                                        \
      e.key = reinterpret_cast<uint64_t>(self);                                                   \
      e.peer = rank;                                                                              \
      e.side = static_cast<uint8_t>(ringside::collector::Side::which);                             \
      ringside::collector::flight::done(e.key, rank, ringside::collector::Side::which, e.t1);     \
      ringside::collector::emit(e);                                                               \
    }                                                                                             \
    fn(self, rank);                                                                               \
  }
RINGSIDE_DEFINE_COMPLETION(send_done, kSend, "_ZN4gloo9transport3tcp13UnboundBuffer20handleSendCompletionEi")
RINGSIDE_DEFINE_COMPLETION(recv_done, kRecv, "_ZN4gloo9transport3tcp13UnboundBuffer20handleRecvCompletionEi")
#undef RINGSIDE_DEFINE_COMPLETION
