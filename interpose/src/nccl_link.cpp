#include "nccl_link.h"

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"

namespace ringside::interpose::nccl_link {
namespace {

namespace col = ringside::collector;

std::mutex g_mutex;                 // contexts registry, hash table (never on a per-call path)
PluginComm* g_contexts = nullptr;   // newest first
uint64_t g_context_seq = 0;

constexpr int kMaxComms = 256;      // the collector's limit on communicators
std::atomic<int32_t> g_device[kMaxComms];  // device + 1 (0: unknown)
std::atomic<bool> g_wrapped[kMaxComms];

constexpr int kHashSlots = 512;
struct HashSlot {
  std::atomic<uint64_t> hash{0};
  std::atomic<int32_t> comm{-1};
};
HashSlot g_hashes[kHashSlots];

// ---- per-thread queue of calls in flight ----
constexpr int kQueue = 128;  // a group of more calls leaves the rest to the plugin's own records
struct Queue {
  Pending items[kQueue];
  int count = 0;
  int depth = 0;          // ncclGroupStart nesting
  uint64_t group = 0;     // current group id + 1
};
thread_local Queue t_queue;

void removeAt(Queue& q, int i) {
  for (int j = i + 1; j < q.count; ++j) q.items[j - 1] = q.items[j];
  --q.count;
}

bool isComposite(uint8_t op) {
  auto o = static_cast<col::Op>(op);
  return o == col::Op::kAlltoall || o == col::Op::kGather || o == col::Op::kScatter;
}

std::atomic<uint64_t> g_next_group{0};

// ---- GPU clock ----
std::atomic<int64_t> g_gpu_offset{INT64_MIN};  // host_ns = gpu_ns + offset; INT64_MIN: not set

int64_t clockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

CreationWindow openCreationWindow(uint64_t expected_nccl_hash) {
  std::lock_guard<std::mutex> lock(g_mutex);
  return CreationWindow{g_context_seq + 1, expected_nccl_hash};
}

PluginComm* newPluginComm(int version) {
  auto* pc = new (std::nothrow) PluginComm();
  if (pc == nullptr) return nullptr;
  pc->version = version;
  std::lock_guard<std::mutex> lock(g_mutex);
  pc->created_seq = ++g_context_seq;
  pc->next = g_contexts;
  g_contexts = pc;
  return pc;
}

int bindCreatedContexts(const CreationWindow& w, int32_t comm, int32_t rank, int32_t nranks, int32_t device,
                        int max_bind) {
  if (comm < 0) return 0;
  uint64_t hashes[64];
  int nh = 0;
  int bound = 0;
  {
  std::lock_guard<std::mutex> lock(g_mutex);
  // Candidates, oldest first (the list is newest first).
  PluginComm* cand[64];
  int n = 0;
  for (PluginComm* pc = g_contexts; pc != nullptr && n < 64; pc = pc->next) {
    if (pc->created_seq < w.first_seq) break;
    if (pc->comm.load(std::memory_order_acquire) >= 0) continue;
    cand[n++] = pc;
  }
  auto bind = [&](PluginComm* pc) {
    pc->comm.store(comm, std::memory_order_release);
    if (device >= 0) pc->device.store(device, std::memory_order_relaxed);
    if (pc->nccl_hash != 0 && nh < 64) hashes[nh++] = pc->nccl_hash;
    ++bound;
  };
  // 1. The NCCL hash we expected (ncclCommInitRank: NCCL's hash of the unique id).
  if (w.nccl_hash != 0)
    for (int i = n - 1; i >= 0 && bound < max_bind; --i)
      if (cand[i]->nccl_hash == w.nccl_hash && cand[i]->comm.load() < 0) bind(cand[i]);
  // 2. Same rank and size (v4+ tell the plugin both).
  for (int i = n - 1; i >= 0 && bound < max_bind; --i)
    if (cand[i]->rank >= 0 && cand[i]->rank == rank && cand[i]->nranks == nranks && cand[i]->comm.load() < 0)
      bind(cand[i]);
  // 3. Versions that say nothing: the oldest one created in the window.
  for (int i = n - 1; i >= 0 && bound < max_bind; --i)
    if (cand[i]->rank < 0 && cand[i]->comm.load() < 0) bind(cand[i]);
  }
  // NCCL's own hash of the communicator (v4+), e.g. of a split: names it in NCCL's log.
  for (int i = 0; i < nh; ++i) noteNcclHash(hashes[i], comm);
  return bound;
}

int32_t commForNcclHash(uint64_t hash) {
  if (hash == 0) return -1;
  for (int i = 0; i < kHashSlots; ++i) {
    HashSlot& s = g_hashes[(hash + static_cast<uint64_t>(i)) % kHashSlots];
    uint64_t h = s.hash.load(std::memory_order_acquire);
    if (h == 0) return -1;
    if (h == hash) return s.comm.load(std::memory_order_acquire);
  }
  return -1;
}

void noteNcclHash(uint64_t hash, int32_t comm) {
  if (hash == 0 || comm < 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int i = 0; i < kHashSlots; ++i) {
    HashSlot& s = g_hashes[(hash + static_cast<uint64_t>(i)) % kHashSlots];
    uint64_t h = s.hash.load(std::memory_order_acquire);
    if (h == hash || h == 0) {
      // comm first: a reader that sees the hash sees its communicator.
      s.comm.store(comm, std::memory_order_release);
      s.hash.store(hash, std::memory_order_release);
      return;
    }
  }
}

void setCommDevice(int32_t comm, int32_t device) {
  if (comm >= 0 && comm < kMaxComms && device >= 0) g_device[comm].store(device + 1, std::memory_order_relaxed);
}

int32_t commDevice(int32_t comm) {
  if (comm < 0 || comm >= kMaxComms) return -1;
  return g_device[comm].load(std::memory_order_relaxed) - 1;
}

void markWrapped(int32_t comm) {
  if (comm >= 0 && comm < kMaxComms) g_wrapped[comm].store(true, std::memory_order_release);
}

bool isWrapped(int32_t comm) {
  return comm >= 0 && comm < kMaxComms && g_wrapped[comm].load(std::memory_order_acquire);
}

bool pushPending(const Pending& p) {
  Queue& q = t_queue;
  if (q.count >= kQueue) return false;
  q.items[q.count++] = p;
  return true;
}

bool retirePending(uint64_t id) {
  Queue& q = t_queue;
  for (int i = 0; i < q.count; ++i)
    if (q.items[i].id == id) {
      removeAt(q, i);
      return true;
    }
  return false;
}

void retireGroup() {
  Queue& q = t_queue;
  // Everything still queued belonged to the group that just ended.
  q.count = 0;
}

bool claimPending(int32_t comm, uint8_t op, Pending* out) {
  Queue& q = t_queue;
  for (int i = 0; i < q.count; ++i) {
    const Pending& p = q.items[i];
    if (p.op == op && (comm < 0 || p.comm == comm)) {
      *out = p;
      removeAt(q, i);
      return true;
    }
  }
  return false;
}

bool peekComposite(int32_t comm, Pending* out) {
  Queue& q = t_queue;
  for (int i = 0; i < q.count; ++i) {
    const Pending& p = q.items[i];
    if (isComposite(p.op) && (comm < 0 || p.comm == comm)) {
      *out = p;
      return true;
    }
  }
  return false;
}

void groupStarted() {
  Queue& q = t_queue;
  if (q.depth++ == 0) q.group = newGroupId() + 1;
}

bool groupEnded() {
  Queue& q = t_queue;
  if (q.depth == 0) return false;  // unbalanced ncclGroupEnd: NCCL reports it; we stay consistent
  if (--q.depth > 0) return false;
  q.group = 0;
  return true;
}

uint64_t currentGroupPlusOne() { return t_queue.depth > 0 ? t_queue.group : 0; }

uint64_t newGroupId() { return g_next_group.fetch_add(1, std::memory_order_relaxed); }

int64_t gpuTimerToHostNs(uint64_t gpu_ns, int64_t observed_ns) {
  if (gpu_ns == 0) return 0;
  auto g = static_cast<int64_t>(gpu_ns);
  int64_t off = g_gpu_offset.load(std::memory_order_relaxed);
  if (off == INT64_MIN) {
    int64_t mono = clockNs(CLOCK_MONOTONIC);
    int64_t real = clockNs(CLOCK_REALTIME);
    constexpr int64_t kDay = 86400LL * 1000000000LL;
    // Unix time: REALTIME - MONOTONIC converts it; anything else: the causality bound alone.
    off = (g > real - kDay && g < real + kDay) ? mono - real : observed_ns - g;
    int64_t expected = INT64_MIN;
    g_gpu_offset.compare_exchange_strong(expected, off, std::memory_order_relaxed);
    off = g_gpu_offset.load(std::memory_order_relaxed);
  }
  // Causality: the GPU stamped it before NCCL's proxy thread told us.
  if (observed_ns > 0 && g + off > observed_ns) {
    int64_t want = observed_ns - g;
    int64_t cur = off;
    while (want < cur && !g_gpu_offset.compare_exchange_weak(cur, want, std::memory_order_relaxed)) {
    }
    off = g_gpu_offset.load(std::memory_order_relaxed);
  }
  return g + off;
}

Counters& counters() {
  static Counters c;
  return c;
}

void noteCountersMeta() {
  Counters& c = counters();
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "coll=%llu p2p=%llu claimed=%llu own=%llu proxy_ops=%llu proxy_steps=%llu kernel_ch=%llu "
                "net_plugin=%llu pxn_remote=%llu ce=%llu api=%llu unknown=%llu unmatched=%llu stale_parent=%llu",
                static_cast<unsigned long long>(c.colls.load()), static_cast<unsigned long long>(c.p2ps.load()),
                static_cast<unsigned long long>(c.claimed.load()), static_cast<unsigned long long>(c.own.load()),
                static_cast<unsigned long long>(c.proxy_ops.load()),
                static_cast<unsigned long long>(c.proxy_steps.load()),
                static_cast<unsigned long long>(c.kernel_ch.load()),
                static_cast<unsigned long long>(c.net_plugin.load()),
                static_cast<unsigned long long>(c.pxn_remote.load()), static_cast<unsigned long long>(c.ce.load()),
                static_cast<unsigned long long>(c.api.load()), static_cast<unsigned long long>(c.unknown.load()),
                static_cast<unsigned long long>(c.unmatched.load()),
                static_cast<unsigned long long>(c.stale_parent.load()));
  col::noteMeta("nccl_profiler_events", buf);
}

void maybeSetIdentity(int32_t rank, int32_t size) {
  static std::atomic<bool> done{false};
  if (done.load(std::memory_order_relaxed)) return;
  const char* ws = std::getenv("WORLD_SIZE");
  if (ws != nullptr && std::atoi(ws) > 0 && std::atoi(ws) != size) return;
  if (done.exchange(true)) return;
  col::setIdentity(rank, size, "nccl");
}

void startGpuActivityOnce() {
  static std::once_flag once;
  std::call_once(once, [] { col::startGpuActivity(); });
}

}  // namespace ringside::interpose::nccl_link
