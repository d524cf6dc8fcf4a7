#include "gloo_reroute.h"

#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringside/collector/collector.h"
#include "ringside/reference/communicator.h"
#include "symbols.h"

namespace ringside::interpose {
namespace {

namespace ref = ringside::reference;
using UB = gloo::transport::UnboundBuffer;

// Longest wait for a lower tag that may never reach a Gloo wrapper.
constexpr auto kGapWait = std::chrono::milliseconds(200);
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
    if (v == nullptr || *v == '\0' || std::strcmp(v, "gloo") == 0) return st;
    if (!ref::parseAlgorithm(v, &st.algorithm)) {
      std::fprintf(stderr,
                   "ringside: ignoring RINGSIDE_ALLREDUCE=%s (expected ring, tree, multipath or gloo)\n",
                   v);
      return st;
    }
    st.requested = true;
    return st;
  }();
  return s;
}

// One Gloo context's rerouting state.
struct Routed {
  const gloo::Context* ctx = nullptr;
  std::mutex mutex;
  std::condition_variable cv;
  std::set<uint32_t> entered;  // tags at or above `frontier` that have entered
  uint32_t frontier = 0;       // every tag below it has entered (or was given up on)
  std::multiset<uint32_t> waiting;  // rerouted tags not finished yet (programs with one fixed tag repeat it)
  bool running = false;
  std::unique_ptr<ref::Communicator> comm;
  std::string setup_error;
  uint64_t exchanges = 0;

  void advance() {
    while (!entered.empty() && *entered.begin() <= frontier) {
      if (*entered.begin() == frontier) ++frontier;
      entered.erase(entered.begin());
    }
  }
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

uint64_t jobToken(const gloo::Context* ctx) {
  // Equal on every rank of the job, different for another job on the same hosts.
  std::string seed = "ringside";
  for (const char* name : {"RINGSIDE_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"}) {
    const char* v = std::getenv(name);
    seed += '|';
    if (v != nullptr) seed += v;
  }
  seed += "|" + std::to_string(ctx->size);
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
  const int n = ctx->size, me = ctx->rank;
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
  o.rank = r->ctx->rank;
  o.world_size = r->ctx->size;
  o.job_token = jobToken(r->ctx);
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

void noteCollectiveEntered(const gloo::Context* ctx, uint32_t tag) {
  if (!rerouteRequested() || ctx == nullptr) return;
  Routed* r = routedFor(ctx);
  std::lock_guard<std::mutex> lock(r->mutex);
  if (tag >= r->frontier) r->entered.insert(tag);
  r->advance();
  r->cv.notify_all();
}

void forgetContext(const gloo::Context* ctx) {
  if (!rerouteRequested()) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (Routed*& r : g_routed)
    if (r->ctx == ctx) r->ctx = nullptr;  // the old state stays allocated (a late thread may hold it)
}

bool rerouteAllreduce(const gloo::detail::AllreduceOptionsImpl& impl, const ReduceKind& kind) {
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
  r->waiting.insert(tag);
  if (!r->cv.wait_for(lock, kGapWait, [&] { return r->frontier > tag; })) {
    // A lower tag never showed up: it was not a Gloo call. Give up on it.
    if (r->frontier <= tag) r->frontier = tag + 1;
    r->advance();
  }
  r->cv.wait(lock, [&] { return !r->running && *r->waiting.begin() == tag; });
  r->running = true;
  lock.unlock();

  std::string error;
  bool ok = true;
  if (!r->comm && r->setup_error.empty()) setUp(r, impl.timeout);
  if (!r->comm) {
    error = "cannot set up ringside's reference all-reduce: " + r->setup_error;
    ok = false;
  } else {
    ok = r->comm->allreduce(data, impl.elements, kind.dtype, kind.op, state().algorithm, &error);
  }

  lock.lock();
  r->running = false;
  r->waiting.erase(r->waiting.find(tag));
  r->cv.notify_all();
  lock.unlock();
  if (!ok) throw std::runtime_error("ringside (RINGSIDE_ALLREDUCE=" +
                                    std::string(ref::algorithmName(state().algorithm)) + "): " + error);
  return true;
}

}  // namespace ringside::interpose
