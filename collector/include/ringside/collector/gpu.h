// collector/gpu.h — what the GPU parts (NCCL wrapper, NCCL profiler plugin,
// CUPTI) hand the collector besides hot-path Events (see event.h:
// kCollectiveGpu, and kTransfer's channel).
//
// None of these is the hot path: each takes a lock and may copy strings.
// CUPTI delivers whole buffers at a time from its own thread, communicators
// are created rarely. Like the rest of the collector they never throw, never
// block on I/O, and do nothing while the collector is not active.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringside::collector {

// Like registerComm(), with the communicator id given by the caller (NCCL: a
// hash of the ncclUniqueId, equal on every member rank) instead of derived
// from creation order. `name` is truncated to 47 characters.
int32_t registerCommNamed(const void* key, int32_t rank, int32_t size, const char* library,
                          const char* name);
// The id registerComm*() gave communicator `comm` ("" if out of range). The
// pointer stays valid for the process's life.
const char* commName(int32_t comm);

// Communicator life cycle, stored in the trace's communicator table.
// `parent` is the parent's index (-1 none). Times on nowNs()'s clock.
void noteCommCreated(int32_t comm, int32_t parent, int64_t created_ns);
// Appends one line ("ring 0: 0 1 2 3", "tree 0: ...") to the communicator's topology text.
void noteCommTopology(int32_t comm, const char* line);
// end_state: "destroyed" or "aborted".
void noteCommEnded(int32_t comm, int64_t ended_ns, const char* end_state);

enum class GpuActivityKind : uint8_t { kKernel = 1, kMemcpy, kMemset, kSync, kNvtx };
enum class CopyKind : uint8_t { kNone, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };

const char* gpuActivityKindName(GpuActivityKind k);
const char* copyKindName(CopyKind k);

// One CUPTI activity record (or NVTX range) already converted to the host
// clock (nowNs()'s). `name` is copied; may be null.
struct GpuActivity {
  GpuActivityKind kind = GpuActivityKind::kKernel;
  const char* name = nullptr;
  int64_t start_ns = 0;
  int64_t end_ns = -1;
  int32_t device = -1;
  int64_t stream = -1;
  int64_t bytes = -1;
  CopyKind copy_kind = CopyKind::kNone;
  int64_t correlation_id = -1;
  uint64_t collective_id = 0;  // 0: not launched by a recorded collective
};

// Queues records for the writer. Bounded (a share of RINGSIDE_BUFFER_MB):
// past the cap records are dropped and counted (meta gpu_activity_dropped).
void recordGpuActivities(const GpuActivity* records, size_t n);

// Counters for tests and the final meta rows.
struct GpuCounters {
  uint64_t activities_queued = 0;
  uint64_t activities_dropped = 0;
};
GpuCounters gpuCounters();

// ---- CUDA activity through CUPTI (collector/src/cupti*.cpp) ----
// Starts CUPTI activity recording if this process uses CUDA and libcupti can
// be dlopen'ed (RINGSIDE_CUPTI=0 turns it off; RINGSIDE_CUPTI_LIB names the
// library). Idempotent; returns true when recording. When another tool holds
// CUPTI, returns false and notes it in the trace's meta (cupti = "busy: ...").
bool startGpuActivity();
// Bracket a library call that launches GPU work: work it launches gets
// `collective_id` as external correlation. No-ops when CUPTI isn't recording.
void pushGpuCorrelation(uint64_t collective_id);
void popGpuCorrelation();
// Flushes CUPTI's buffers into the collector (before a CUDA context or a
// communicator goes away, and at exit before the final flush).
void flushGpuActivity();

}  // namespace ringside::collector
