// The collector's hot path (emit into a per-thread ring) and its life cycle:
// lazy activation, fork, fatal signals and exit.
#include "ringside/collector/collector.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "cpu_usage.h"
#include "internal.h"
#include "ringside/collector/flight.h"
#include "ringside/collector/gpu.h"
#include "ringside/collector/run_id.h"

namespace ringside::collector {
namespace detail {

Global& global() {
  // Leaked on purpose: wrapped calls may happen during static destruction.
  static Global* g = new Global();
  return *g;
}

namespace {

void vlog(const char* fmt, va_list ap) {
  char line[512];
  int n = std::snprintf(line, sizeof line, "ringside: ");
  std::vsnprintf(line + n, sizeof line - static_cast<size_t>(n), fmt, ap);
  size_t len = std::strlen(line);
  if (len + 1 < sizeof line) line[len++] = '\n';
  // One write(2): never interleaves with the app's stdio buffers.
  ssize_t rc = ::write(STDERR_FILENO, line, len);
  (void)rc;
}

}  // namespace

void logWarning(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vlog(fmt, ap);
  va_end(ap);
}

void logVerbose(const char* fmt, ...) {
  if (!global().config.verbose) return;
  va_list ap;
  va_start(ap, fmt);
  vlog(fmt, ap);
  va_end(ap);
}

}  // namespace detail

using detail::global;
using detail::Ring;
using detail::ForkShared;
using detail::State;

int64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

namespace {

int64_t unixNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A ring pointer that means "this thread got no ring: count and drop".
Ring* const kNoRing = reinterpret_cast<Ring*>(uintptr_t{1});

struct ThreadSlot {
  Ring* ring = nullptr;
  uint64_t current_collective = 0;
  ~ThreadSlot() {
    if (ring != nullptr && ring != kNoRing) ring->retired.store(true, std::memory_order_release);
  }
};

thread_local ThreadSlot t_slot;

uint64_t envU64(const char* name, uint64_t dflt, uint64_t lo, uint64_t hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > hi) {
    detail::logWarning("ignoring %s=%s (expected an integer in %llu..%llu)", name, v,
                       static_cast<unsigned long long>(lo), static_cast<unsigned long long>(hi));
    return dflt;
  }
  return x;
}

const char* envText(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// RINGSIDE_STEPS, RINGSIDE_DELAY_S, RINGSIDE_DURATION_S, RINGSIDE_TRIGGER_FILE, RINGSIDE_DETAIL,
// RINGSIDE_MESSAGE_ROWS (docs/recording.md). A value that does not parse is ignored with one
// warning line: the job is recorded as if it were unset.
void readWindowConfig(WindowConfig* w) {
  if (const char* v = envText("RINGSIDE_STEPS")) {
    w->steps = parseStepRange(v, &w->step_begin, &w->step_end);
    if (!w->steps) detail::logWarning("ignoring RINGSIDE_STEPS=%s (expected A:B, A: or :B)", v);
  }
  for (auto [name, field] : {std::pair{"RINGSIDE_DELAY_S", &w->delay_ns},
                             std::pair{"RINGSIDE_DURATION_S", &w->duration_ns}}) {
    const char* v = envText(name);
    if (v == nullptr) continue;
    int64_t ns = 0;
    if (parseSecondsNs(v, &ns)) {
      *field = ns;
      w->time = true;
    } else {
      detail::logWarning("ignoring %s=%s (expected seconds >= 0, or a duration: 500ms, 5m)", name, v);
    }
  }
  if (const char* v = envText("RINGSIDE_TRIGGER_FILE")) w->trigger_file = v;
  if (const char* v = envText("RINGSIDE_DETAIL")) {
    if (!parseDetail(v, &w->detail))
      detail::logWarning("ignoring RINGSIDE_DETAIL=%s (expected calls, links, messages or auto)",
                         v);
  }
  w->message_rows = envU64("RINGSIDE_MESSAGE_ROWS", kDefaultMessageRows, 0, UINT64_MAX / 2);
}

void readConfig(detail::Config* c) {
  const char* dir = std::getenv("RINGSIDE_DIR");
  c->dir = (dir != nullptr && *dir != '\0') ? dir : "ringside-rank-files";
  c->buffer_bytes = envU64("RINGSIDE_BUFFER_MB", kBufferMbDefault, kBufferMbMin, kBufferMbMax)
                    << 20;
  c->flush_ms = static_cast<int>(envU64("RINGSIDE_FLUSH_MS", 200, 1, 600000));
  c->exit_timeout_ms = static_cast<int>(envU64("RINGSIDE_EXIT_TIMEOUT_MS", 3000, 0, 600000));
  const char* v = std::getenv("RINGSIDE_VERBOSE");
  c->verbose = v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  // `ringside record` sets RINGSIDE_RUN_ID; a job started without it (LD_PRELOAD exported
  // under srun or mpirun) takes its launcher's job id, the same in every process of the job.
  const char* run = std::getenv("RINGSIDE_RUN_ID");
  c->run_id = run != nullptr && *run != '\0' ? run : launcherRunId();
  readWindowConfig(&c->window);
}

uint64_t ringCapacityFor(uint64_t cap_bytes) {
  // Aim for at least 8 rings within the cap, between 1 Ki and 16 Ki events each.
  uint64_t events = cap_bytes / sizeof(Event) / 8;
  uint64_t pow2 = 1024;
  while (pow2 * 2 <= events && pow2 < 16384) pow2 *= 2;
  return pow2;
}

// Gets this thread a ring: reuse a drained one or allocate within the cap.
Ring* acquireRing() {
  auto& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  if (static_cast<State>(g.state.load()) != State::kActive) return kNoRing;
  Ring* r = g.free_rings;
  if (r != nullptr) {
    g.free_rings = r->next;
    r->next = nullptr;
  } else {
    uint64_t bytes = g.ring_capacity * sizeof(Event);
    if (g.ring_bytes_allocated + bytes > g.config.buffer_bytes) return kNoRing;
    r = new (std::nothrow) Ring();
    Event* ev = r != nullptr ? new (std::nothrow) Event[g.ring_capacity] : nullptr;
    if (ev == nullptr) {
      delete r;
      return kNoRing;
    }
    r->events = ev;
    r->mask = g.ring_capacity - 1;
    g.ring_bytes_allocated += bytes;
  }
  r->retired.store(false, std::memory_order_relaxed);
  r->tid.store(static_cast<int32_t>(syscall(SYS_gettid)), std::memory_order_relaxed);
  // Appended to the registry (the writer walks it); reused rings are re-linked.
  r->next = g.rings;
  g.rings = r;
  return r;
}

// Whether this process (a forked child) has counted itself in ForkShared::children yet.
std::atomic<bool> g_fork_counted{false};

void onForkChild() {
  // The writer thread, the SQLite handle and the rings belong to the parent:
  // the child never touches them (a lock may be held by a thread that does
  // not exist here). It stays quiet for good.
  g_fork_counted.store(false, std::memory_order_relaxed);  // a grandchild counts itself too
  global().state.store(static_cast<int>(State::kForked), std::memory_order_release);
  flight::onForkChild();
}

// A wrapped call in a quiet forked child: counted in the page shared with the traced ancestor
// (no I/O, no lock; the child may well leave with _exit), so its trace says calls were missed.
void noteForkedChildCall() {
  ForkShared* shared = global().fork_shared;
  if (shared == nullptr) return;
  shared->calls.fetch_add(1, std::memory_order_relaxed);
  if (!g_fork_counted.exchange(true, std::memory_order_relaxed))
    shared->children.fetch_add(1, std::memory_order_relaxed);
}

ForkShared* mapForkShared() {
  void* page = ::mmap(nullptr, sizeof(ForkShared), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return nullptr;  // then forked children's calls go uncounted
  return new (page) ForkShared();
}

struct sigaction g_old_term;
struct sigaction g_old_int;

void waitForWriter(int timeout_ms) {
  auto& g = global();
  timespec step{0, 2 * 1000 * 1000};
  for (int waited = 0; waited <= timeout_ms * 1000 / 2000 + 1; ++waited) {
    if (g.writer_done.load(std::memory_order_acquire) != 0) return;
    if (!g.writer_running.load(std::memory_order_acquire)) return;
    nanosleep(&step, nullptr);
  }
}

// Installed only where the disposition was SIG_DFL: flush what we have, then
// die of the same signal so the exit status (128 + n) is unchanged.
void onFatalSignal(int sig) {
  auto& g = global();
  flight::onSignal(sig);
  if (static_cast<State>(g.state.load()) == State::kActive) {
    // A second signal (often the launcher's, on another thread) waits for the
    // flush the first one started instead of killing the process mid-write.
    int expected = 0;
    g.flush_request.compare_exchange_strong(expected, sig + 1);
    waitForWriter(g.config.exit_timeout_ms);
  }
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);  // delivered when this handler returns
}

void installSignalFlush(int sig, struct sigaction* old) {
  if (sigaction(sig, nullptr, old) != 0) return;
  if (old->sa_handler != SIG_DFL || (old->sa_flags & SA_SIGINFO) != 0) return;  // the app's own: keep it
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = onFatalSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(sig, &sa, nullptr);
}

void onExit() {
  flight::onExit();
  shutdown();
}

}  // namespace

bool activate() {
  auto& g = global();
  State s = static_cast<State>(g.state.load(std::memory_order_acquire));
  if (s != State::kDormant) {
    if (s == State::kForked) noteForkedChildCall();
    return s == State::kActive;
  }
  std::lock_guard<std::mutex> lock(g.mutex);
  s = static_cast<State>(g.state.load());
  if (s != State::kDormant) return s == State::kActive;
  const char* off = std::getenv("RINGSIDE_DISABLE");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) {
    g.state.store(static_cast<int>(State::kDisabled));
    return false;
  }
  readConfig(&g.config);
  g.ring_capacity = ringCapacityFor(g.config.buffer_bytes);
  g.start_ns = nowNs();
  g.start_unix_ns = unixNs();
  g.start_cpu_ok = detail::readCpuUsage(g.start_ns, &g.start_cpu);
  g.identity.pid = getpid();
  g.identity.host = detail::hostName();
  g.identity.command_line = detail::commandLine();
  detail::readLauncherIdentity(&g.identity);
  g.identity_gen.fetch_add(1);
  if (g.config.window.bounded()) {
    // The window's first state is recorded as a change at "start", open or closed.
    const bool want = windowWanted(g.config.window, WindowInputs{});
    g.window_open.store(!want);
    g.dones_open.store(want);
    detail::updateWindow("start");
  }
  g.state.store(static_cast<int>(State::kActive), std::memory_order_release);
  if (!detail::startWriter()) {
    g.state.store(static_cast<int>(State::kDisabled));
    detail::logWarning("tracing disabled: could not start the writer thread");
    return false;
  }
  g.fork_shared = mapForkShared();
  flight::start();
  pthread_atfork(nullptr, nullptr, onForkChild);
  installSignalFlush(SIGTERM, &g_old_term);
  installSignalFlush(SIGINT, &g_old_int);
  std::atexit(onExit);
  detail::logVerbose("tracing pid %d into %s", static_cast<int>(g.identity.pid), g.config.dir.c_str());
  return true;
}

bool isActive() { return detail::state() == State::kActive; }

void setIdentity(int32_t rank, int32_t world_size, const char* source) {
  auto& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  auto& id = g.identity;
  bool take = id.rank < 0 || id.source != "gloo";
  // Prefer the communicator that spans the world the launcher announced.
  if (!take && id.env_world_size > 0 && id.world_size != id.env_world_size &&
      world_size == id.env_world_size)
    take = true;
  if (!take) return;
  id.rank = rank;
  id.world_size = world_size;
  id.source = source;
  flight::noteIdentity(rank, world_size);
  if (id.env_rank >= 0 && id.env_world_size == world_size && id.env_rank != rank) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%s says rank %d of %d, the launcher's environment says rank %d",
                  source, rank, world_size, id.env_rank);
    g.meta.emplace_back("identity_mismatch", buf);
  }
  g.identity_gen.fetch_add(1);
}

int32_t findComm(const void* key) {
  auto& g = global();
  int n = g.comm_count.load(std::memory_order_acquire);
  for (int i = n - 1; i >= 0; --i)
    if (g.comms[i].key.load(std::memory_order_relaxed) == key) return i;
  return -1;
}

int32_t registerComm(const void* key, int32_t rank, int32_t size, const char* library) {
  auto& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  int n = g.comm_count.load();
  // A reused address is a new communicator: the old one was destroyed.
  int same_shape = 0;
  for (int i = 0; i < n; ++i)
    if (g.comms[i].size == size && std::strncmp(g.comms[i].name, library, std::strlen(library)) == 0)
      ++same_shape;
  if (n >= detail::kMaxComms) return -1;
  auto& c = g.comms[n];
  c.rank = rank;
  c.size = size;
  c.seq.store(0);
  // Communicators are named by library, size and creation order among those of
  // that size: every member rank creates them in the same order.
  std::snprintf(c.name, sizeof c.name, "%s/%d/%d", library, size, same_shape);
  c.key.store(key, std::memory_order_relaxed);
  flight::noteComm(n, c.name, rank, size);
  g.comm_count.store(n + 1, std::memory_order_release);
  return n;
}

int64_t nextSeq(int32_t comm) {
  if (comm < 0 || comm >= detail::kMaxComms) return -1;
  return global().comms[comm].seq.fetch_add(1, std::memory_order_relaxed);
}

void emitCollective(int32_t comm, uint64_t id, const CollectiveCall& call, int64_t t0, int64_t t1,
                    bool ok) {
  Event e;
  e.kind = EventKind::kCollective;
  e.id = id;
  e.comm = static_cast<int16_t>(comm);
  e.key = call.seq >= 0 ? static_cast<uint64_t>(call.seq) : static_cast<uint64_t>(nextSeq(comm));
  e.op = static_cast<uint8_t>(call.op);
  e.library = static_cast<uint8_t>(call.library);
  e.algorithm = static_cast<uint8_t>(call.algorithm);
  e.dtype = static_cast<uint8_t>(call.dtype);
  e.reduce_op = static_cast<uint8_t>(call.reduce_op);
  e.bytes = call.bytes;
  e.aux = call.count;
  e.peer = -1;
  e.status = ok ? 0 : 1;
  e.t0 = t0;
  e.t1 = t1;
  emit(e);
}

void markStep(int64_t step) {
  if (!activate()) return;
  Event e;
  flight::step(step);
  e.kind = EventKind::kStepMarker;
  e.key = static_cast<uint64_t>(step);
  e.t0 = nowNs();
  e.t1 = e.t0;
  emit(e);
  auto& g = global();
  const int64_t markers = g.markers.fetch_add(1, std::memory_order_relaxed) + 1;
  const WindowConfig& w = g.config.window;
  if (!w.steps) return;
  // Only the markers where the step range begins or ends can change the window: no clock
  // read or spin otherwise.
  const int64_t index = markers - 1;  // steps count markers, whatever number the job passes
  if (index == 0 || index == w.step_begin || index == w.step_end) {
    detail::updateWindow("step", index);
  }
}

namespace {

bool isMessage(EventKind k) {
  return k == EventKind::kTransferPost || k == EventKind::kTransferDone ||
         k == EventKind::kTransfer;
}

// The recording window and the detail level, on the hot path: a few relaxed loads, no lock, no
// clock. Calls and their messages go by the call's id (taken at its entry); completions carry
// no id and pass while the writer still waits for kept posts (Global::dones_open).
bool keepEvent(const detail::Global& g, const Event& e) {
  if (e.kind == EventKind::kStepMarker) return true;
  if (isMessage(e.kind) && g.config.window.detail == Detail::kCalls) return false;
  if (e.kind == EventKind::kTransferDone) return g.dones_open.load(std::memory_order_relaxed);
  if (e.id == 0) return g.window_open.load(std::memory_order_relaxed);
  return e.id >= g.keep_from.load(std::memory_order_relaxed) &&
         e.id < g.keep_until.load(std::memory_order_relaxed);
}

// Single producer, like Ring::emitted. A message counts once, at its post.
void countLeftOut(Ring* r, const Event& e) {
  std::atomic<uint64_t>* counter = nullptr;
  if (e.kind == EventKind::kCollective) counter = &r->left_out_calls;
  if (e.kind == EventKind::kTransferPost || e.kind == EventKind::kTransfer)
    counter = &r->left_out_messages;
  if (counter != nullptr)
    counter->store(counter->load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

}  // namespace

namespace detail {

void updateWindow(const char* cause, int64_t step) {
  auto& g = global();
  while (g.window_lock.test_and_set(std::memory_order_acquire)) {
  }
  // Inputs read under the lock: a step marker and the writer's poll never apply stale views.
  WindowInputs in;
  in.markers = g.markers.load(std::memory_order_relaxed);
  in.elapsed_ns = nowNs() - g.start_ns;
  in.touches = g.touches.load(std::memory_order_relaxed);
  const bool want = windowWanted(g.config.window, in);
  if (want != g.window_open.load(std::memory_order_relaxed)) {
    // Ids from now on: calls already inside keep the side they started on.
    const uint64_t next = g.next_collective.load(std::memory_order_relaxed);
    if (want) {
      g.dones_open.store(true, std::memory_order_relaxed);
      g.keep_from.store(next, std::memory_order_relaxed);
      g.keep_until.store(UINT64_MAX, std::memory_order_relaxed);
    } else {
      g.keep_until.store(next, std::memory_order_relaxed);
    }
    g.window_open.store(want, std::memory_order_relaxed);
    if (g.window_change_count < detail::kMaxWindowChanges)
      g.window_changes[g.window_change_count] = {nowNs(), want, cause, step};
    ++g.window_change_count;
  }
  g.window_lock.clear(std::memory_order_release);
}

}  // namespace detail

uint64_t newCollectiveId() { return global().next_collective.fetch_add(1, std::memory_order_relaxed); }

uint64_t currentCollective() { return t_slot.current_collective; }
void setCurrentCollective(uint64_t id) { t_slot.current_collective = id; }

void emit(const Event& e) {
  auto& g = global();
  if (g.state.load(std::memory_order_relaxed) != static_cast<int>(State::kActive)) return;
  Ring* r = t_slot.ring;
  if (r == nullptr) r = t_slot.ring = acquireRing();
  if (!keepEvent(g, e)) {
    if (r != kNoRing) countLeftOut(r, e);
    return;
  }
  if (r == kNoRing) {
    g.overflow_emitted.fetch_add(1, std::memory_order_relaxed);
    g.overflow_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // Single producer: plain load/store on our own counters.
  r->emitted.store(r->emitted.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  uint64_t h = r->head.load(std::memory_order_relaxed);
  if (h - r->tail.load(std::memory_order_acquire) > r->mask) {
    r->dropped.store(r->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return;
  }
  r->events[h & r->mask] = e;
  r->head.store(h + 1, std::memory_order_release);
}

void noteMeta(const char* key, const char* value) {
  auto& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.meta.emplace_back(key, value);
}

void shutdown() {
  auto& g = global();
  if (detail::state() != State::kActive) return;
  // GPU work recorded by CUPTI but still in its buffers goes in first.
  flushGpuActivity();
  int expected = 0;
  if (g.flush_request.compare_exchange_strong(expected, 1)) waitForWriter(g.config.exit_timeout_ms);
  if (g.writer_done.load() == 0 && g.writer_running.load())
    detail::logWarning("final flush did not finish within %d ms; the trace keeps what was flushed before",
                       g.config.exit_timeout_ms);
  g.state.store(static_cast<int>(State::kClosed), std::memory_order_release);
}

Counters counters() {
  auto& g = global();
  Counters c;
  std::lock_guard<std::mutex> lock(g.mutex);
  for (Ring* list : {g.rings, g.free_rings}) {
    for (Ring* r = list; r != nullptr; r = r->next) {
      c.emitted += r->emitted.load();
      c.dropped += r->dropped.load();
      c.left_out_calls += r->left_out_calls.load();
      c.left_out_messages += r->left_out_messages.load();
    }
  }
  c.emitted += g.overflow_emitted.load();
  c.dropped += g.overflow_dropped.load();
  c.recorded = g.recorded.load();
  if (g.fork_shared != nullptr) {
    c.forked_child_calls = g.fork_shared->calls.load(std::memory_order_relaxed);
    c.forked_children = g.fork_shared->children.load(std::memory_order_relaxed);
  }
  return c;
}

}  // namespace ringside::collector
