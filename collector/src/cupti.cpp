// CUDA activity through CUPTI: the CUPTI section of collector/gpu.h.
//
// What happens, in order:
// - startGpuActivity() (called by the NCCL wrappers at the first communicator)
//   loads libcupti only if the CUDA driver is already mapped in the process,
//   subscribes (CUPTI allows one subscriber per process: when another tool
//   holds it, the trace says "busy" and ringside carries on without it),
//   registers the buffer callbacks and enables kernels, copies, sets,
//   synchronization, NVTX markers and external correlation.
// - CUPTI fills fixed-size buffers from a small pool (bounded memory; when the
//   pool is empty CUPTI drops records and counts them) and hands them back
//   from its own thread or inside cuptiActivityFlushAll().
// - Each completed buffer is decoded: GPU timestamps converted to the host
//   clock in toHostNs() (the one place), kernels/copies linked to the NCCL
//   call that launched them through the external correlation id that
//   pushGpuCorrelation() put on CUPTI's stack, and the batch handed to
//   recordGpuActivities() (the writer's queue).
// - A small flusher thread asks CUPTI for completed buffers every
//   RINGSIDE_FLUSH_MS; a CUDA context about to be destroyed, and the process's
//   exit, force a flush first. After the exit flush CUPTI is never called again.
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cxxabi.h>
#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cupti_api.h"
#include "internal.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"

namespace ringside::collector {

#if !RINGSIDE_HAVE_CUPTI

// Built without the CUDA toolkit's headers: nothing to record; say so once.
bool startGpuActivity() {
  static std::atomic<bool> noted{false};
  if (activate() && !noted.exchange(true)) noteMeta("cupti", "not built");
  return false;
}
void pushGpuCorrelation(uint64_t) {}
void popGpuCorrelation() {}
void flushGpuActivity() {}

#else  // RINGSIDE_HAVE_CUPTI

namespace {

using detail::CuptiApi;

enum class Mode : int {
  kOff = 0,      // not started (or the process had no CUDA yet: may start later)
  kRecording,
  kBusy,         // another tool holds CUPTI
  kUnavailable,  // no libcupti, or it refused (said once in meta)
  kStopped,      // exit flush done, or a forked child: CUPTI is never called again
};

constexpr int64_t kNone = -1;  // GpuActivity: not known
constexpr size_t kMaxPending = 65536;     // records waiting for their external correlation
constexpr size_t kMaxCorrelations = 1 << 17;
constexpr size_t kMaxOpenMarkers = 4096;
constexpr size_t kMaxNameCache = 4096;

int64_t envInt(const char* name, int64_t dflt, int64_t lo, int64_t hi) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return dflt;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (end == v || *end != '\0' || x < lo || x > hi) return dflt;
  return x;
}

// A GpuActivity whose name is owned (waits across buffers).
struct Pending {
  GpuActivity a;
  std::string name;
  bool has_name = false;
};

struct Session {
  std::mutex start_mutex;
  std::atomic<int> mode{static_cast<int>(Mode::kOff)};
  CuptiApi api;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::string library_note;

  // Buffer pool: at most max_buffers of buffer_bytes each, reused forever.
  std::mutex pool_mutex;
  std::vector<uint8_t*> free_buffers;
  size_t buffer_bytes = 1 << 20;
  size_t max_buffers = 8;
  size_t allocated = 0;
  size_t in_use = 0;
  size_t max_in_use = 0;
  uint64_t refused = 0;

  // Host clock - CUPTI clock (see toHostNs).
  std::atomic<int64_t> offset_ns{0};

  // Flushes are serialised; the exit flush sets kStopped under this lock.
  std::mutex flush_mutex;
  int flush_ms = 200;

  // Decoding state (CUPTI's thread and flushing threads).
  std::mutex decode_mutex;
  std::unordered_map<uint32_t, uint64_t> external;  // correlation id -> collective id
  std::deque<uint32_t> external_order;               // for bounding `external`
  std::unordered_map<uint32_t, int32_t> context_device;
  struct OpenMarker {
    std::string name;
    int64_t start_ns;
  };
  std::unordered_map<uint32_t, OpenMarker> open_markers;
  std::unordered_map<std::string, std::string> demangled;
  std::deque<Pending> pending;
  std::vector<GpuActivity> batch;
  std::deque<std::string> batch_names;  // owns batch names until handed over
  uint64_t records = 0;                 // decoded activity records
  uint64_t invalid_records = 0;         // incomplete or unreadable records
  std::atomic<uint64_t> dropped{0};     // CUPTI's dropped-record count (no buffer space)
  std::atomic<uint64_t> buffers_completed{0};
};

Session& session() {
  static Session* s = new Session();  // leaked: CUPTI may call back during exit
  return *s;
}

Mode mode() { return static_cast<Mode>(session().mode.load(std::memory_order_acquire)); }
void setMode(Mode m) { session().mode.store(static_cast<int>(m), std::memory_order_release); }

// ---- time domains ----------------------------------------------------------
// CUPTI stamps every record on one clock: the one cuptiGetTimestamp() reads
// (GPU timer values are normalised to it by CUPTI). ringside's host clock is
// CLOCK_MONOTONIC (nowNs()). The offset between the two is measured as the
// midpoint of two nowNs() reads around one cuptiGetTimestamp(), at start and
// again before every flush, so slow drift between the clocks is followed. A
// record is converted with the offset current when it is decoded.
void sampleClockOffset() {
  auto& s = session();
  uint64_t cupti_ns = 0;
  int64_t before = nowNs();
  if (s.api.getTimestamp(&cupti_ns) != CUPTI_SUCCESS || cupti_ns == 0) return;
  int64_t after = nowNs();
  s.offset_ns.store(before + (after - before) / 2 - static_cast<int64_t>(cupti_ns), std::memory_order_relaxed);
}

// The one place a CUPTI timestamp becomes host time. 0 means "not recorded".
int64_t toHostNs(uint64_t cupti_ns) {
  if (cupti_ns == 0) return kNone;
  return static_cast<int64_t>(cupti_ns) + session().offset_ns.load(std::memory_order_relaxed);
}

// ---- buffers ---------------------------------------------------------------
void CUPTIAPI onBufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  auto& s = session();
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;  // as many as fit
  std::lock_guard<std::mutex> lock(s.pool_mutex);
  uint8_t* b = nullptr;
  if (!s.free_buffers.empty()) {
    b = s.free_buffers.back();
    s.free_buffers.pop_back();
  } else if (s.allocated < s.max_buffers) {
    b = static_cast<uint8_t*>(std::aligned_alloc(8, s.buffer_bytes));
    if (b != nullptr) ++s.allocated;
  }
  if (b == nullptr) {
    ++s.refused;  // CUPTI drops what it cannot store and counts it
    return;
  }
  ++s.in_use;
  if (s.in_use > s.max_in_use) s.max_in_use = s.in_use;
  *buffer = b;
  *size = s.buffer_bytes;
}

void returnBuffer(uint8_t* b) {
  auto& s = session();
  std::lock_guard<std::mutex> lock(s.pool_mutex);
  s.free_buffers.push_back(b);
  if (s.in_use > 0) --s.in_use;
}

// ---- decoding --------------------------------------------------------------
const char* demangle(Session& s, const char* name) {
  if (name == nullptr) return nullptr;
  if (name[0] != '_' || name[1] != 'Z') return name;
  auto it = s.demangled.find(name);
  if (it != s.demangled.end()) return it->second.c_str();
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = (status == 0 && d != nullptr) ? d : name;
  std::free(d);
  // Names in the current batch point into the cache: never evict, stop caching.
  if (s.demangled.size() >= kMaxNameCache) return s.batch_names.emplace_back(std::move(out)).c_str();
  return s.demangled.emplace(name, std::move(out)).first->second.c_str();
}

CopyKind copyKind(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return CopyKind::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return CopyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return CopyKind::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return CopyKind::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return CopyKind::kPtoP;
    default: return CopyKind::kNone;
  }
}

const char* syncName(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "event_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "stream_wait_event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "stream_synchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "context_synchronize";
    default: return "unknown";
  }
}

void addToBatch(Session& s, const GpuActivity& a) { s.batch.push_back(a); }

// Records launched by a library call wait here until the buffer with their
// external correlation arrives (CUPTI delivers buffers in no particular order).
void addCorrelated(Session& s, const GpuActivity& a) {
  auto it = s.external.find(static_cast<uint32_t>(a.correlation_id));
  if (it != s.external.end()) {
    GpuActivity linked = a;
    linked.collective_id = it->second;
    addToBatch(s, linked);
    return;
  }
  if (s.pending.size() >= kMaxPending) {
    // Oldest first, unlinked: memory stays bounded.
    Pending& old = s.pending.front();
    if (old.has_name) old.a.name = s.batch_names.emplace_back(std::move(old.name)).c_str();
    addToBatch(s, old.a);
    s.pending.pop_front();
  }
  Pending p;
  p.a = a;
  if (a.name != nullptr) {
    p.name = a.name;
    p.has_name = true;
  }
  s.pending.push_back(std::move(p));
}

// Moves pending records whose correlation is now known (all of them when
// `all`: nothing more can link them) into the batch.
void resolvePending(Session& s, bool all) {
  std::deque<Pending> keep;
  for (Pending& p : s.pending) {
    auto it = s.external.find(static_cast<uint32_t>(p.a.correlation_id));
    if (it == s.external.end() && !all) {
      keep.push_back(std::move(p));
      continue;
    }
    if (it != s.external.end()) p.a.collective_id = it->second;
    if (p.has_name) p.a.name = s.batch_names.emplace_back(std::move(p.name)).c_str();
    addToBatch(s, p.a);
  }
  s.pending.swap(keep);
}

void handOver(Session& s) {
  if (!s.batch.empty()) recordGpuActivities(s.batch.data(), s.batch.size());
  s.batch.clear();
  s.batch_names.clear();
}

void noteExternal(Session& s, uint32_t correlation, uint64_t collective) {
  if (s.external.size() >= kMaxCorrelations && !s.external_order.empty()) {
    s.external.erase(s.external_order.front());
    s.external_order.pop_front();
  }
  if (s.external.emplace(correlation, collective).second) s.external_order.push_back(correlation);
}

// The fields that kernel, memcpy and memset records all have, under the same names.
template <class Record>
void decodeOnStream(GpuActivity& a, const Record* m) {
  a.start_ns = toHostNs(m->start);
  a.end_ns = toHostNs(m->end);
  a.device = static_cast<int32_t>(m->deviceId);
  a.stream = m->streamId;
  a.correlation_id = m->correlationId;
}

void decodeRecord(Session& s, const CUpti_Activity* r) {
  GpuActivity a;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      // Fields read here sit in the prefix shared by every CUpti_ActivityKernel version.
      auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      a.kind = GpuActivityKind::kKernel;
      a.name = demangle(s, k->name);
      decodeOnStream(a, k);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      a.kind = GpuActivityKind::kMemcpy;
      decodeOnStream(a, m);
      a.bytes = static_cast<int64_t>(m->bytes);
      a.copy_kind = copyKind(m->copyKind);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(r);
      a.kind = GpuActivityKind::kMemcpy;
      decodeOnStream(a, m);
      a.bytes = static_cast<int64_t>(m->bytes);
      a.copy_kind = CopyKind::kPtoP;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      a.kind = GpuActivityKind::kMemset;
      decodeOnStream(a, m);
      a.bytes = static_cast<int64_t>(m->bytes);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* y = reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
      a.kind = GpuActivityKind::kSync;
      a.name = syncName(static_cast<uint32_t>(y->type));
      a.start_ns = toHostNs(y->start);
      a.end_ns = toHostNs(y->end);
      auto dev = s.context_device.find(y->contextId);
      a.device = dev != s.context_device.end() ? dev->second : -1;
      // CUPTI_SYNCHRONIZATION_INVALID_VALUE (all ones) for context-wide syncs.
      a.stream = y->streamId != UINT32_MAX ? static_cast<int64_t>(y->streamId) : kNone;
      a.correlation_id = y->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(r);
      uint32_t flags = static_cast<uint32_t>(m->flags);
      int64_t t = toHostNs(m->timestamp);
      if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_START) != 0) {
        if (s.open_markers.size() >= kMaxOpenMarkers) {
          ++s.invalid_records;  // a range never closed; forget the oldest-looking one
          s.open_markers.erase(s.open_markers.begin());
        }
        s.open_markers[m->id] = {m->name != nullptr ? m->name : "", t};
        ++s.records;
        return;
      }
      a.kind = GpuActivityKind::kNvtx;
      if ((flags & CUPTI_ACTIVITY_FLAG_MARKER_END) != 0) {
        auto it = s.open_markers.find(m->id);
        if (it == s.open_markers.end()) {
          ++s.invalid_records;  // an end without its start
          return;
        }
        a.name = s.batch_names.emplace_back(std::move(it->second.name)).c_str();
        a.start_ns = it->second.start_ns;
        s.open_markers.erase(it);
      } else {  // instantaneous
        a.name = m->name;
        a.start_ns = t;
      }
      a.end_ns = t;
      ++s.records;
      addToBatch(s, a);
      return;
    }
    default:
      return;  // external correlation and context records were taken in the first pass
  }
  ++s.records;
  if (a.start_ns == kNone) {  // never started (a forced flush may return such records)
    ++s.invalid_records;
    return;
  }
  if (a.correlation_id > 0)
    addCorrelated(s, a);
  else
    addToBatch(s, a);
}

// Decodes one completed buffer. Two passes: correlation and context records
// first, so records in the same buffer link whatever their order.
void decodeBuffer(Session& s, uint8_t* buffer, size_t valid) {
  std::lock_guard<std::mutex> lock(s.decode_mutex);
  for (int pass = 0; pass < 2; ++pass) {
    CUpti_Activity* r = nullptr;
    for (;;) {
      CUptiResult rc = s.api.getNextRecord(buffer, valid, &r);
      if (rc == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (rc != CUPTI_SUCCESS) {
        if (pass == 0) ++s.invalid_records;  // incomplete or unreadable: the rest of the buffer is lost
        break;
      }
      if (pass == 0) {
        if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
          auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
          if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
            noteExternal(s, x->correlationId, x->externalId);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_CONTEXT) {
          auto* c = reinterpret_cast<const CUpti_ActivityContext3*>(r);
          s.context_device[c->contextId] = static_cast<int32_t>(c->deviceId);
        }
      } else {
        decodeRecord(s, r);
      }
    }
  }
  resolvePending(s, false);
  handOver(s);
}

void CUPTIAPI onBufferCompleted(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  auto& s = session();
  size_t dropped = 0;
  if (s.api.getNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
    s.dropped.fetch_add(dropped, std::memory_order_relaxed);
  if (buffer == nullptr) return;
  s.buffers_completed.fetch_add(1, std::memory_order_relaxed);
  // After the exit flush the writer is gone: buffers are only recycled.
  if (isActive() && valid > 0) decodeBuffer(s, buffer, valid);
  returnBuffer(buffer);
}

// ---- flushing --------------------------------------------------------------
void noteCounters(Session& s) {
  uint64_t records, invalid, refused;
  size_t max_in_use;
  {
    std::lock_guard<std::mutex> lock(s.decode_mutex);
    records = s.records;
    invalid = s.invalid_records;
  }
  {
    std::lock_guard<std::mutex> lock(s.pool_mutex);
    refused = s.refused;
    max_in_use = s.max_in_use;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(records));
  noteMeta("cupti_records", buf);
  std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(s.dropped.load()));
  noteMeta("cupti_records_dropped", buf);
  std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(invalid));
  noteMeta("cupti_records_invalid", buf);
  std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(refused));
  noteMeta("cupti_buffers_refused", buf);
  std::snprintf(buf, sizeof buf, "%zu of %zu x %zu KiB", max_in_use, s.max_buffers, s.buffer_bytes >> 10);
  noteMeta("cupti_buffers_max_in_use", buf);
}

// Asks CUPTI for its buffers (forced: including ones with records still in
// flight) and emits every record still waiting for a correlation. Caller holds
// flush_mutex and has checked the mode.
void flushLocked(bool forced) {
  auto& s = session();
  sampleClockOffset();
  s.api.flushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  {
    std::lock_guard<std::mutex> lock(s.decode_mutex);
    resolvePending(s, true);
    handOver(s);
  }
}

void flushNow(bool forced) {
  auto& s = session();
  std::lock_guard<std::mutex> lock(s.flush_mutex);
  if (mode() != Mode::kRecording || !isActive()) return;
  flushLocked(forced);
  if (forced) noteCounters(s);
}

// Flushes periodically: CUPTI's own thread returns only full buffers.
void* flusherMain(void*) {
  auto& s = session();
  for (;;) {
    timespec ts{s.flush_ms / 1000, static_cast<long>(s.flush_ms % 1000) * 1000000L};
    nanosleep(&ts, nullptr);
    std::lock_guard<std::mutex> lock(s.flush_mutex);
    if (mode() != Mode::kRecording || !isActive()) return nullptr;
    flushLocked(false);
  }
}

void startFlusher() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread inherits: it never takes the app's signals
  pthread_t t;
  if (pthread_create(&t, nullptr, flusherMain, nullptr) == 0) pthread_detach(t);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// Final flush at exit, then never again. Registered after activate()'s exit
// handler, so it runs before the collector's final flush.
void onExit() {
  auto& s = session();
  std::lock_guard<std::mutex> lock(s.flush_mutex);
  if (mode() != Mode::kRecording) return;
  if (isActive()) {
    flushLocked(true);
    noteCounters(s);
  }
  setMode(Mode::kStopped);
}

void onForkChild() {
  // CUPTI's state and threads belong to the parent.
  session().mode.store(static_cast<int>(Mode::kStopped), std::memory_order_release);
}

void CUPTIAPI onCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void*) {
  // The context's pending buffers go away with it: take them first.
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
    flushNow(true);
}

const CUpti_ActivityKind kKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,           CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_MARKER,
    CUPTI_ACTIVITY_KIND_CONTEXT,           CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
};

const char* kindLabel(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "kernel";
    case CUPTI_ACTIVITY_KIND_MEMCPY: return "memcpy";
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return "memcpy2";
    case CUPTI_ACTIVITY_KIND_MEMSET: return "memset";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return "sync";
    case CUPTI_ACTIVITY_KIND_MARKER: return "nvtx";
    case CUPTI_ACTIVITY_KIND_CONTEXT: return "context";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return "external_correlation";
    default: return "?";
  }
}

bool busyResult(CUptiResult r) { return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; }

void markBusy(const std::string& what) {
  setMode(Mode::kBusy);
  std::string v = "busy: " + what +
                  " (another tool, e.g. PyTorch's profiler or Nsight Systems, holds CUPTI; GPU activity not recorded)";
  noteMeta("cupti", v.c_str());
  detail::logVerbose("CUPTI %s", v.c_str());
}

void markUnavailable(const std::string& why) {
  setMode(Mode::kUnavailable);
  std::string v = "unavailable: " + why;
  noteMeta("cupti", v.c_str());
  detail::logVerbose("CUPTI %s", v.c_str());
}

// Under start_mutex, mode kOff, collector active.
bool startLocked() {
  auto& s = session();
  std::string why;
  if (!detail::loadCupti(&s.api, &why)) {
    markUnavailable(why);
    return false;
  }
  uint32_t version = 0;
  s.api.getVersion(&version);
  s.buffer_bytes = static_cast<size_t>(envInt("RINGSIDE_CUPTI_BUFFER_KB", 1024, 16, 1 << 16)) << 10;
  s.max_buffers = static_cast<size_t>(envInt("RINGSIDE_CUPTI_BUFFERS", 8, 2, 1024));
  s.flush_ms = static_cast<int>(envInt("RINGSIDE_FLUSH_MS", 200, 10, 600000));

  CUptiResult rc = s.api.subscribe(&s.subscriber, onCallback, nullptr);
  if (rc != CUPTI_SUCCESS) {
    if (busyResult(rc))
      markBusy("cuptiSubscribe: " + s.api.resultName(rc));
    else
      markUnavailable("cuptiSubscribe: " + s.api.resultName(rc));
    return false;
  }
  s.api.enableCallback(1, s.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
  rc = s.api.registerCallbacks(onBufferRequested, onBufferCompleted);
  if (rc != CUPTI_SUCCESS) {
    s.api.unsubscribe(s.subscriber);
    if (busyResult(rc))
      markBusy("cuptiActivityRegisterCallbacks: " + s.api.resultName(rc));
    else
      markUnavailable("cuptiActivityRegisterCallbacks: " + s.api.resultName(rc));
    return false;
  }
  std::string not_enabled;
  int enabled = 0;
  for (CUpti_ActivityKind k : kKinds) {
    rc = s.api.enable(k);
    if (rc == CUPTI_SUCCESS) {
      ++enabled;
      continue;
    }
    if (busyResult(rc)) {
      for (CUpti_ActivityKind e : kKinds)
        if (e != k) s.api.disable(e);
      s.api.unsubscribe(s.subscriber);
      markBusy(std::string("cuptiActivityEnable(") + kindLabel(k) + "): " + s.api.resultName(rc));
      return false;
    }
    if (!not_enabled.empty()) not_enabled += ", ";
    not_enabled += std::string(kindLabel(k)) + " (" + s.api.resultName(rc) + ")";
  }
  if (enabled == 0) {
    s.api.unsubscribe(s.subscriber);
    markUnavailable("no activity kind could be enabled: " + not_enabled);
    return false;
  }
  sampleClockOffset();
  char head[96];
  std::snprintf(head, sizeof head, "recording (CUPTI %u, ", version);
  std::string v = head + s.api.path + ")";
  noteMeta("cupti", v.c_str());
  if (!not_enabled.empty()) noteMeta("cupti_not_enabled", not_enabled.c_str());
  noteMeta("gpu_clock", "CUPTI timestamps + (CLOCK_MONOTONIC - cuptiGetTimestamp()), re-measured at every flush");
  setMode(Mode::kRecording);
  pthread_atfork(nullptr, nullptr, onForkChild);
  std::atexit(onExit);
  startFlusher();
  detail::logVerbose("CUPTI recording GPU activity (%s)", s.api.path.c_str());
  return true;
}

}  // namespace

bool startGpuActivity() {
  Mode m = mode();
  if (m != Mode::kOff) return m == Mode::kRecording;
  const char* off = std::getenv("RINGSIDE_CUPTI");
  if (off != nullptr && std::strcmp(off, "0") == 0) {
    auto& s = session();
    std::lock_guard<std::mutex> lock(s.start_mutex);
    if (mode() == Mode::kOff && activate()) {
      setMode(Mode::kUnavailable);
      noteMeta("cupti", "off (RINGSIDE_CUPTI=0)");
    }
    return false;
  }
  if (!activate()) return false;
  // Only a process that uses CUDA loads CUPTI; one that doesn't yet may call again later.
  if (!detail::processUsesCuda()) return false;
  auto& s = session();
  std::lock_guard<std::mutex> lock(s.start_mutex);
  if (mode() != Mode::kOff) return mode() == Mode::kRecording;
  return startLocked();
}

void pushGpuCorrelation(uint64_t collective_id) {
  if (mode() != Mode::kRecording || !isActive()) return;
  session().api.pushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, collective_id);
}

void popGpuCorrelation() {
  if (mode() != Mode::kRecording || !isActive()) return;
  uint64_t last = 0;
  session().api.popExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

void flushGpuActivity() { flushNow(true); }

#endif  // RINGSIDE_HAVE_CUPTI

}  // namespace ringside::collector
