// collector/src/gpu.cpp — the non-hot-path inputs of the GPU parts (gpu.h):
// named communicators and their life cycle, and the queue of GPU activity
// records that the writer drains. Everything here takes a lock; nothing here
// does I/O.
#include "ringside/collector/gpu.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "internal.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/flight.h"

namespace ringside::collector {

using detail::global;
using detail::State;

int32_t registerCommNamed(const void* key, int32_t rank, int32_t size, const char* library, const char* name) {
  auto& g = global();
  std::lock_guard<std::mutex> lock(g.mutex);
  const int n = g.comm_count.load();
  if (n >= detail::kMaxComms) return -1;
  auto& c = g.comms[n];
  c.rank = rank;
  c.size = size;
  c.seq.store(0);
  std::snprintf(c.name, sizeof c.name, "%s", name != nullptr && name[0] != '\0' ? name : library);
  c.key.store(key, std::memory_order_relaxed);
  flight::noteComm(n, c.name, rank, size);  // NCCL's calls feed the flight ring too
  g.comm_count.store(n + 1, std::memory_order_release);
  return n;
}

const char* commName(int32_t comm) {
  auto& g = global();
  if (comm < 0 || comm >= g.comm_count.load(std::memory_order_acquire)) return "";
  return g.comms[comm].name;
}

namespace {

// Runs `fn` on the note of `comm` under the lock, if the collector records.
template <typename Fn>
void withNote(int32_t comm, Fn&& fn) {
  auto& g = global();
  if (detail::state() != State::kActive) return;
  if (comm < 0 || comm >= g.comm_count.load(std::memory_order_acquire)) return;
  try {
    std::lock_guard<std::mutex> lock(g.mutex);
    detail::CommNote& note = g.comm_notes[comm];
    fn(note);
    note.noted = true;
    note.dirty = true;
    g.comm_notes_dirty.store(true, std::memory_order_release);
  } catch (const std::bad_alloc&) {
    // A note lost to memory pressure never disturbs the job.
  }
}

// A share of RINGSIDE_BUFFER_MB for queued GPU records: CUPTI hands over whole
// buffers, and the writer takes the queue every few ms.
uint64_t gpuQueueCap() { return global().config.buffer_bytes / 4; }

}  // namespace

void noteCommCreated(int32_t comm, int32_t parent, int64_t created_ns) {
  withNote(comm, [&](detail::CommNote& n) {
    n.parent = parent;
    n.created_ns = created_ns;
  });
}

void noteCommTopology(int32_t comm, const char* line) {
  if (line == nullptr || line[0] == '\0') return;
  withNote(comm, [&](detail::CommNote& n) {
    if (n.topology.size() > 64 * 1024) return;  // bounded: a huge log stays out of the trace
    if (!n.topology.empty()) n.topology += '\n';
    n.topology += line;
  });
}

void noteCommEnded(int32_t comm, int64_t ended_ns, const char* end_state) {
  withNote(comm, [&](detail::CommNote& n) {
    n.ended_ns = ended_ns;
    n.end_state = end_state != nullptr ? end_state : "";
  });
}

const char* gpuActivityKindName(GpuActivityKind k) {
  switch (k) {
    case GpuActivityKind::kKernel: return "kernel";
    case GpuActivityKind::kMemcpy: return "memcpy";
    case GpuActivityKind::kMemset: return "memset";
    case GpuActivityKind::kSync: return "sync";
    case GpuActivityKind::kNvtx: return "nvtx";
  }
  return "";
}

const char* copyKindName(CopyKind k) {
  switch (k) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    case CopyKind::kNone: break;
  }
  return "";
}

void recordGpuActivities(const GpuActivity* records, size_t n) {
  auto& g = global();
  if (records == nullptr || n == 0) return;
  if (detail::state() != State::kActive) return;
  const uint64_t cap = gpuQueueCap();
  std::lock_guard<std::mutex> lock(g.gpu_mutex);
  size_t i = 0;
  try {
    for (; i < n; ++i) {
      const GpuActivity& a = records[i];
      const size_t name_len = a.name != nullptr ? std::strlen(a.name) : 0;
      const uint64_t cost = sizeof(detail::PendingActivity) + name_len;
      if (g.gpu_pending_bytes + cost > cap) break;
      detail::PendingActivity p;
      p.kind = static_cast<uint8_t>(a.kind);
      p.copy_kind = static_cast<uint8_t>(a.copy_kind);
      p.device = a.device;
      p.start_ns = a.start_ns;
      p.end_ns = a.end_ns;
      p.stream = a.stream;
      p.bytes = a.bytes;
      p.correlation_id = a.correlation_id;
      p.collective_id = a.collective_id;
      if (name_len > 0) p.name.assign(a.name, name_len);
      g.gpu_pending.push_back(std::move(p));
      g.gpu_pending_bytes += cost;
    }
  } catch (const std::bad_alloc&) {
  }
  g.gpu_queued.fetch_add(i, std::memory_order_relaxed);
  g.gpu_dropped.fetch_add(n - i, std::memory_order_relaxed);
}

GpuCounters gpuCounters() {
  auto& g = global();
  GpuCounters c;
  c.activities_queued = g.gpu_queued.load(std::memory_order_relaxed);
  c.activities_dropped = g.gpu_dropped.load(std::memory_order_relaxed);
  return c;
}

}  // namespace ringside::collector
