// collector/src/flight.cpp — the flight recorder's hot path and dumps (collector/flight.h).
//
// One ring file per active process, `<rank folder>/flight-<pid>-<start_unix_ns>.flight`
// (storage/flight_ring.h has the layout). Cost per call: two slot writes (enter, leave) with a
// handful of relaxed stores and three release stores; per message: one slot write at the post and
// a backwards scan of the last messages at the completion (the match is nearly always among the
// newest few).
#include "ringside/collector/flight.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "internal.h"
#include "ringside/collector/collector.h"
#include "ringside/storage/flight_ring.h"
#include "ringside/storage/privacy.h"

namespace ringside::collector::flight {
namespace {

namespace ring = storage::flight;

ring::Writer g_ring;
std::atomic<ring::Layout*> g_layout{nullptr};
thread_local CallHandle t_current;
thread_local int32_t t_tid = 0;  // the caller's OS thread id (one syscall per thread)

struct sigaction g_old_usr2;
struct sigaction g_old_fatal[5];
constexpr int kFatalSignals[5] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

ring::Layout* layout() { return g_layout.load(std::memory_order_acquire); }

void fillNames(ring::Layout* l) {
  for (int i = 0; i < 32; ++i)
    std::snprintf(l->header.op_names[i], 16, "%s", opName(static_cast<Op>(i)));
  for (int i = 0; i < 8; ++i)
    std::snprintf(l->header.library_names[i], 16, "%s", libraryName(static_cast<Library>(i)));
  for (int i = 0; i < 16; ++i)
    std::snprintf(l->header.dtype_names[i], 8, "%s", dtypeName(static_cast<DType>(i)));
}

// Async-signal-safe decimal of a signal for the dump's detail.
void signalText(int sig, char* out, size_t size) {
  const char* name = sigabbrev_np(sig);
  size_t k = 0;
  for (const char* p = "SIG"; *p != '\0' && k + 1 < size; ++p) out[k++] = *p;
  for (const char* p = name != nullptr ? name : "?"; *p != '\0' && k + 1 < size; ++p) out[k++] = *p;
  out[k] = '\0';
}

// SIGUSR2: a dump, then whatever the job had asked for (its handler, ignoring it, or the default
// action, which ends the process as it would have without ringside).
void onUsr2(int sig, siginfo_t* info, void* context) {
  if (ring::Layout* l = layout()) ring::stampDump(l, ring::Reason::kSigusr2, nowNs(), nullptr);
  const struct sigaction& old = g_old_usr2;
  if ((old.sa_flags & SA_SIGINFO) != 0 && old.sa_sigaction != nullptr) {
    old.sa_sigaction(sig, info, context);
  } else if (old.sa_handler == SIG_IGN) {
    return;
  } else if (old.sa_handler != SIG_DFL && old.sa_handler != nullptr) {
    old.sa_handler(sig);
  } else {
    ::sigaction(sig, &old, nullptr);
    ::raise(sig);
  }
}

// A fatal signal where the job had no handler: stamp, then die of it as before.
void onFatal(int sig) {
  onSignal(sig);
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

void installHandlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGUSR2, nullptr, &g_old_usr2) == 0) {
    sa.sa_sigaction = onUsr2;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    ::sigaction(SIGUSR2, &sa, nullptr);
  }
  for (int i = 0; i < 5; ++i) {
    struct sigaction& old = g_old_fatal[i];
    if (::sigaction(kFatalSignals[i], nullptr, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO) != 0) continue;  // the job's own
    std::memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = onFatal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(kFatalSignals[i], &sa, nullptr);
  }
}

bool isTimeout(const char* text) {
  return text != nullptr && (std::strstr(text, "Timed out") != nullptr ||
                             std::strstr(text, "timed out") != nullptr ||
                             std::strstr(text, "Timeout") != nullptr);
}

}  // namespace

bool start() {
  auto& g = detail::global();
  if (g.config.dir.empty()) return false;
  // RINGSIDE_FLIGHT=0: no ring (A/B measurements of its cost; docs/flight-recorder.md).
  if (const char* off = std::getenv("RINGSIDE_FLIGHT"); off != nullptr && std::strcmp(off, "0") == 0)
    return false;
  ::mkdir(g.config.dir.c_str(), storage::outputDirMode());  // the writer may not have made it yet
  const std::string path = ring::ringPath(g.config.dir, g.identity.pid, g.start_unix_ns);
  std::string error;
  if (!g_ring.create(path, g.identity.pid, g.start_unix_ns, g.start_ns, g.identity.host,
                     storage::shareRequested(), &error)) {
    detail::logVerbose("flight recorder off: %s", error.c_str());
    return false;
  }
  ring::Layout* l = g_ring.layout();
  fillNames(l);
  // Communicators and the rank learned before the first wrapped call (activate() holds g.mutex).
  l->header.rank.store(g.identity.rank);
  l->header.world_size.store(g.identity.world_size);
  const int comms = g.comm_count.load(std::memory_order_acquire);
  for (int i = 0; i < comms && i < ring::kComms; ++i)
    ring::noteComm(l, i, g.comms[i].name, g.comms[i].rank, g.comms[i].size);
  g_layout.store(l, std::memory_order_release);
  installHandlers();
  return true;
}

void noteComm(int32_t comm, const char* name, int32_t comm_rank, int32_t comm_size) {
  if (ring::Layout* l = layout()) ring::noteComm(l, comm, name, comm_rank, comm_size);
}

void noteIdentity(int32_t rank, int32_t world_size) {
  if (ring::Layout* l = layout()) {
    l->header.rank.store(rank, std::memory_order_relaxed);
    l->header.world_size.store(world_size, std::memory_order_relaxed);
  }
}

CallHandle enter(int32_t comm, int64_t seq, Op op, Library library, DType dtype, uint64_t bytes,
                 uint64_t count, int32_t root, int64_t t0) {
  ring::Layout* l = layout();
  if (l == nullptr || comm < 0 || comm >= ring::kComms) return {};
  const uint64_t n = l->comms[comm].calls.fetch_add(1, std::memory_order_relaxed);
  ring::CallSlot& s = l->calls[comm][n % ring::kCallsPerComm];
  s.gen.store(ring::kWriting, std::memory_order_relaxed);
  ring::fence(std::memory_order_release);
  s.seq = seq;
  s.bytes = static_cast<int64_t>(bytes);
  s.count = static_cast<int64_t>(count);
  s.step = l->header.step.load(std::memory_order_relaxed);
  s.enter_ns = t0;
  s.exit_ns.store(0, std::memory_order_relaxed);
  s.root = root;
  if (t_tid == 0) t_tid = static_cast<int32_t>(::syscall(SYS_gettid));
  s.tid = t_tid;
  s.op = static_cast<uint8_t>(op);
  s.library = static_cast<uint8_t>(library);
  s.dtype = static_cast<uint8_t>(dtype);
  s.state.store(static_cast<uint8_t>(ring::CallState::kEntered), std::memory_order_relaxed);
  s.gen.store(n + 1, std::memory_order_release);
  CallHandle h{&s, n + 1};
  t_current = h;
  return h;
}

void leave(CallHandle call, int64_t t1, bool ok, const char* error, CallHandle outer) {
  t_current = outer;
  auto* s = static_cast<ring::CallSlot*>(call.slot);
  ring::Layout* l = layout();
  if (s == nullptr || l == nullptr || s->gen.load(std::memory_order_acquire) != call.gen) return;
  s->exit_ns.store(t1, std::memory_order_relaxed);
  s->state.store(static_cast<uint8_t>(ok ? ring::CallState::kDone : ring::CallState::kFailed),
                 std::memory_order_release);
  if (ok) {
    l->header.last_done_ns.store(t1, std::memory_order_relaxed);
    return;
  }
  ring::stampDump(l, isTimeout(error) ? ring::Reason::kTimeout : ring::Reason::kError, t1, error);
}

CallHandle current() { return t_current; }

void returned(CallHandle call, int64_t t1, CallHandle outer) {
  t_current = outer;
  auto* s = static_cast<ring::CallSlot*>(call.slot);
  ring::Layout* l = layout();
  if (s == nullptr || l == nullptr || s->gen.load(std::memory_order_acquire) != call.gen) return;
  // The plugin (another thread) may see the work complete before, during or after this: its end
  // time and `done` win. The return time only fills an exit_ns still 0, then entered becomes queued.
  int64_t unset = 0;
  s->exit_ns.compare_exchange_strong(unset, t1, std::memory_order_release, std::memory_order_relaxed);
  for (auto from : {ring::CallState::kEntered, ring::CallState::kTransferring}) {
    uint8_t expected = static_cast<uint8_t>(from);
    if (s->state.compare_exchange_strong(expected, static_cast<uint8_t>(ring::CallState::kQueued),
                                         std::memory_order_release, std::memory_order_relaxed))
      break;
  }
  l->header.last_done_ns.store(t1, std::memory_order_relaxed);
}

void completed(CallHandle call, int64_t t1) {
  auto* s = static_cast<ring::CallSlot*>(call.slot);
  ring::Layout* l = layout();
  if (s == nullptr || l == nullptr || s->gen.load(std::memory_order_acquire) != call.gen) return;
  if (s->state.load(std::memory_order_relaxed) == static_cast<uint8_t>(ring::CallState::kFailed)) return;
  s->exit_ns.store(t1, std::memory_order_relaxed);
  s->state.store(static_cast<uint8_t>(ring::CallState::kDone), std::memory_order_release);
  l->header.last_done_ns.store(t1, std::memory_order_relaxed);
}

void error(const char* text, int64_t t) {
  if (ring::Layout* l = layout()) ring::stampDump(l, ring::Reason::kError, t, text);
}

void post(int32_t comm, uint64_t key, int32_t peer, Side side, uint64_t bytes, int64_t t0) {
  ring::Layout* l = layout();
  if (l == nullptr) return;
  int64_t seq = storage::kNone;
  if (auto* call = static_cast<ring::CallSlot*>(t_current.slot)) {
    seq = call->seq;
    uint8_t entered = static_cast<uint8_t>(ring::CallState::kEntered);
    call->state.compare_exchange_strong(entered, static_cast<uint8_t>(ring::CallState::kTransferring),
                                        std::memory_order_relaxed);
  }
  const uint64_t n = l->header.message_count.fetch_add(1, std::memory_order_relaxed);
  ring::MessageSlot& s = l->messages[n % ring::kMessages];
  s.gen.store(ring::kWriting, std::memory_order_relaxed);
  ring::fence(std::memory_order_release);
  s.key = key;
  s.seq = seq;
  s.bytes = static_cast<int64_t>(bytes);
  s.posted_ns = t0;
  s.done_ns.store(0, std::memory_order_relaxed);
  s.peer = peer;
  s.comm = static_cast<int16_t>(comm < ring::kComms ? comm : -1);
  s.direction = static_cast<uint8_t>(side);
  s.gen.store(n + 1, std::memory_order_release);
}

void done(uint64_t key, int32_t peer, Side side, int64_t t1) {
  ring::Layout* l = layout();
  if (l == nullptr) return;
  const uint64_t n = l->header.message_count.load(std::memory_order_acquire);
  const uint64_t look = n < ring::kMessages ? n : ring::kMessages;
  // The newest open post of this buffer, peer and side: a Gloo buffer has one post per peer and
  // side in flight, found among the last few slots (a scan of all of them only for a post the
  // ring never saw).
  ring::MessageSlot* match = nullptr;
  for (uint64_t k = 1; k <= look && match == nullptr; ++k) {
    ring::MessageSlot& s = l->messages[(n - k) % ring::kMessages];
    if (s.gen.load(std::memory_order_acquire) != n - k + 1) continue;
    if (s.key == key && s.direction == static_cast<uint8_t>(side) &&
        (s.peer == peer || s.peer < 0) && s.done_ns.load(std::memory_order_relaxed) == 0)
      match = &s;
  }
  if (match != nullptr) match->done_ns.store(t1, std::memory_order_release);
}

void step(int64_t step) {
  if (ring::Layout* l = layout()) l->header.step.store(step, std::memory_order_relaxed);
}

void onSignal(int sig) {
  ring::Layout* l = layout();
  if (l == nullptr) return;
  char text[32];
  signalText(sig, text, sizeof text);
  const int64_t now = nowNs();
  ring::stampDump(l, ring::Reason::kSignal, now, text);
  ring::noteEnd(l, ring::Ended::kSignal, 1, -1, sig, now);
}

void onExit() {
  ring::Layout* l = layout();
  if (l == nullptr) return;
  const int64_t now = nowNs();
  if (ring::openCalls(l) > 0) ring::stampDump(l, ring::Reason::kExitOpen, now, nullptr);
  ring::noteEnd(l, ring::Ended::kExited, 1, -1, 0, now);
}

void onForkChild() {
  g_layout.store(nullptr, std::memory_order_release);
  t_current = {};
  g_ring.release();
}

}  // namespace ringside::collector::flight
