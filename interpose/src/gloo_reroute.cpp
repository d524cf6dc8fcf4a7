#include "gloo_reroute.h"

#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "gloo_context.h"
#include "ringside/collective/names.h"
#include "ringside/collector/collector.h"
#include "ringside/reference/communicator.h"
#include "symbols.h"

namespace ringside::interpose {
namespace {

namespace ref = ringside::reference;
using UB = gloo::transport::UnboundBuffer;

// Tags remembered with how often each was used (programs that repeat tags); past this many
// distinct tags the counts start again (a repeat that far apart is a different call anyway).
constexpr size_t kMaxTagCounts = size_t{1} << 16;
// Address exchange: one fixed-size blob per rank, on slots far from Gloo's own.
constexpr size_t kBlob = 256;
constexpr uint64_t kExchangeSlot = 0x52696e6753696400ull;  // "RingSid\0"

struct State {
  bool requested = false;
  ref::Algorithm algorithm = ref::Algorithm::kRing;
};

const State& state() {
  static const State s = [] {
    State st;
    const char* v = std::getenv("RINGSIDE_ALLREDUCE");
    if (v == nullptr || *v == '\0') return st;
    ref::Algorithm chosen = ref::Algorithm::kDefault;
    if (!collective::parseAllreduceChoice(v, &chosen)) {
      std::fprintf(stderr, "ringside: ignoring RINGSIDE_ALLREDUCE=%s (expected %s)\n", v,
                   collective::kAllreduceChoices);
      return st;
    }
    if (chosen == ref::Algorithm::kDefault) return st;  // "gloo": Gloo's own
    st.algorithm = chosen;
    st.requested = true;
    return st;
  }();
  return s;
}

// One Gloo context's rerouting state.
struct Routed {
  const gloo::Context* ctx = nullptr;
  int rank = -1, size = -1;  // from its constructor (gloo_context.h), never its fields
  std::mutex mutex;
  std::condition_variable cv;
  bool setting_up = false;  // one thread sets the communicator up; the others wait
  std::unique_ptr<ref::Communicator> comm;
  std::string setup_error;
  uint64_t exchanges = 0;
  std::unordered_map<uint32_t, uint32_t> tag_uses;  // programs that repeat tags
};

std::mutex g_mutex;
std::vector<Routed*> g_routed;  // leaked: calls may come during static destruction

Routed* routedFor(const gloo::Context* ctx) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Routed* r : g_routed)
    if (r->ctx == ctx) return r;
  auto* r = new Routed();
  r->ctx = ctx;
  g_routed.push_back(r);
  return r;
}

uint64_t jobToken(int world_size) {
  // Equal on every rank of the job, different for another job on the same hosts.
  std::string seed = "ringside";
  for (const char* name : {"RINGSIDE_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"}) {
    const char* v = std::getenv(name);
    seed += '|';
    if (v != nullptr) seed += v;
  }
  seed += "|" + std::to_string(world_size);
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : seed) h = (h ^ c) * 1099511628211ull;
  return h;
}

// gloo::Context::createUnboundBuffer is defined in libgloo, which we must not
// link: call it through its address as a pointer to member function.
std::unique_ptr<UB> createBuffer(const gloo::Context* ctx, void* ptr, size_t size) {
  using Create = std::unique_ptr<UB> (gloo::Context::*)(void*, size_t);
  static void* addr = findRealSymbol("_ZN4gloo7Context19createUnboundBufferEPvm");
  if (addr == nullptr) throw std::runtime_error("ringside: gloo::Context::createUnboundBuffer not found");
  struct {
    void* fn;
    std::ptrdiff_t adjust;
  } raw{addr, 0};  // the Itanium C++ ABI's representation of a non-virtual member pointer
  Create create;
  static_assert(sizeof create == sizeof raw);
  std::memcpy(&create, &raw, sizeof create);
  return (const_cast<gloo::Context*>(ctx)->*create)(ptr, size);
}

// Every rank sends its blob to every other rank over the context's own pairs.
bool exchangeOverGloo(Routed* r, const std::string& mine, std::vector<std::string>* all, std::string* error) {
  const gloo::Context* ctx = r->ctx;
  if (mine.size() > kBlob - 4) {
    *error = "address blob too large";
    return false;
  }
  const int n = r->size, me = r->rank;
  std::vector<char> in(kBlob, 0), out(kBlob * static_cast<size_t>(n), 0);
  uint32_t len = static_cast<uint32_t>(mine.size());
  std::memcpy(in.data(), &len, 4);
  std::memcpy(in.data() + 4, mine.data(), mine.size());
  std::memcpy(out.data() + kBlob * static_cast<size_t>(me), in.data(), kBlob);
  const uint64_t slot = kExchangeSlot + r->exchanges++;
  try {
    auto inb = createBuffer(ctx, in.data(), kBlob);
    auto outb = createBuffer(ctx, out.data(), out.size());
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      inb->send(p, slot);
      outb->recv(p, slot, kBlob * static_cast<size_t>(p), kBlob);
    }
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      inb->waitSend();
      outb->waitRecv();
    }
  } catch (const std::exception& e) {
    *error = std::string("address exchange over Gloo failed: ") + e.what();
    return false;
  }
  all->assign(static_cast<size_t>(n), std::string());
  for (int p = 0; p < n; ++p) {
    const char* b = out.data() + kBlob * static_cast<size_t>(p);
    std::memcpy(&len, b, 4);
    if (len > kBlob - 4) {
      *error = "malformed address blob from rank " + std::to_string(p);
      return false;
    }
    (*all)[static_cast<size_t>(p)].assign(b + 4, len);
  }
  return true;
}

bool setUp(Routed* r, std::chrono::milliseconds timeout) {
  ref::CommunicatorOptions o;
  o.rank = r->rank;
  o.world_size = r->size;
  o.job_token = jobToken(r->size);
  // Gloo's timeout (PyTorch's default is 30 min) bounds every blocking step.
  if (timeout.count() > 0) o.timeout = timeout;
  o.prepare_multipath = state().algorithm == ref::Algorithm::kMultipath;
  std::string error;
  r->comm = ref::Communicator::create(
      o, [r](const std::string& mine, std::vector<std::string>* all, std::string* err) {
        return exchangeOverGloo(r, mine, all, err);
      },
      &error);
  if (!r->comm) {
    r->setup_error = error.empty() ? "unknown error" : error;
    return false;
  }
  char note[128];
  std::snprintf(note, sizeof note, "%s: Gloo all-reduce rerouted to ringside-%s", "active",
                ref::algorithmName(state().algorithm));
  collector::noteMeta("allreduce_reroute", note);
  return true;
}

}  // namespace

bool rerouteRequested() { return state().requested; }

void forgetContext(const gloo::Context* ctx) {
  if (!rerouteRequested()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Routed*& r : g_routed)
    if (r->ctx == ctx) r->ctx = nullptr;  // the old state stays allocated (a late thread may hold it)
}

bool rerouteAllreduce(const gloo::detail::AllreduceOptionsImpl& impl, const ReduceKind& kind,
                      bool unique_tags) {
  if (!rerouteRequested()) return false;
  const gloo::Context* ctx = impl.context.get();
  size_t esize = ref::dtypeSize(kind.dtype);
  bool supported_op = kind.op == collector::ReduceOp::kSum || kind.op == collector::ReduceOp::kProd ||
                      kind.op == collector::ReduceOp::kMin || kind.op == collector::ReduceOp::kMax;
  // The same program makes the same choice on every rank.
  if (ctx == nullptr || impl.out.size() != 1 || impl.in.size() > 1 || esize == 0 ||
      esize != impl.elementSize || !supported_op)
    return false;
  void* data = impl.out[0]->ptr;
  const size_t bytes = impl.elements * impl.elementSize;
  if (impl.in.size() == 1 && impl.in[0]->ptr != data) std::memmove(data, impl.in[0]->ptr, bytes);

  Routed* r = routedFor(ctx);
  const uint32_t tag = impl.tag;
  std::unique_lock<std::mutex> lock(r->mutex);
  // The id every rank gives this call: PyTorch's tag, or the tag and its earlier uses.
  uint64_t id = tag;
  if (!unique_tags) {
    if (r->tag_uses.size() >= kMaxTagCounts && r->tag_uses.count(tag) == 0) r->tag_uses.clear();
    id |= static_cast<uint64_t>(r->tag_uses[tag]++) << 32;
  }
  // The first call sets the communicator up (a collective over the context); later ones wait.
  r->cv.wait(lock, [&] { return !r->setting_up; });
  if (!r->comm && r->setup_error.empty() && r->size < 0) {
    // Rank and size as the context's constructor was given them (or its fields, once this
    // Gloo's layout is identified): PyTorch 2.8+'s Gloo lays them out elsewhere than Debian's.
    ContextShape shape;
    if (contextShape(ctx, &shape) && shape.size > 0 && shape.rank >= 0 && shape.rank < shape.size) {
      r->rank = shape.rank;
      r->size = shape.size;
    } else {
      r->setup_error = std::string("the Gloo context's rank and size are unknown (its constructor "
                                   "was not seen and this Gloo's layout is ") +
                       contextLayoutName(contextLayout()) + ")";
    }
  }
  if (!r->comm && r->setup_error.empty()) {
    r->setting_up = true;
    lock.unlock();
    setUp(r, impl.timeout);
    lock.lock();
    r->setting_up = false;
    r->cv.notify_all();
  }
  ref::Communicator* comm = r->comm.get();
  const std::string setup_error = r->setup_error;
  lock.unlock();

  std::string error;
  bool ok = true;
  if (comm == nullptr) {
    error = "cannot set up ringside's reference all-reduce: " + setup_error;
    ok = false;
  } else {
    ok = comm->allreduceTagged(id, data, impl.elements, kind.dtype, kind.op, state().algorithm,
                               &error);
  }
  if (!ok) throw std::runtime_error("ringside (RINGSIDE_ALLREDUCE=" +
                                    std::string(ref::algorithmName(state().algorithm)) + "): " + error);
  return true;
}

}  // namespace ringside::interpose
