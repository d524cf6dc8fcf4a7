// A stand-in for libcupti: the part of CUPTI's C ABI that ringside calls,
// replaying activity records from a text file instead of watching a GPU.
//
// Records are real CUPTI structs (from the toolkit's headers) written into the
// buffers ringside hands out, delivered through its buffer callbacks in the
// groups the file describes; timestamps live on the fake's own clock
// (CLOCK_MONOTONIC + kClockOffsetNs), so ringside's conversion to host time is
// exercised. Environment:
//   FAKE_CUPTI_RECORDS  the record file (format: tests/standins/cupti/README.md)
//   FAKE_CUPTI_MODE     busy: cuptiSubscribe fails with MULTIPLE_SUBSCRIBERS;
//                       busy_enable: cuptiActivityEnable does
//   FAKE_CUPTI_FLOOD    N: the first forced flush also produces N kernel records,
//                       holding every buffer until all N are placed (a burst)
//   FAKE_CUPTI_LOG      file the fake appends what happened to ("key value" lines)
#include <time.h>

#include <cupti.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr int64_t kClockOffsetNs = 3'000'000'000'000'000;  // the fake's clock = monotonic + this

int64_t monoNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// One record as written in the file, not yet laid out.
struct Line {
  std::string kind;
  std::map<std::string, std::string> kv;
  std::string name;  // the rest of the line after name=
};

struct Buffer {
  uint32_t ctx = 0;
  uint32_t stream = 0;
  size_t dropped = 0;      // reported by cuptiActivityGetNumDroppedRecords for this queue
  bool truncate = false;   // validSize ends inside the last record
  std::vector<Line> records;
};

struct Group {
  std::string trigger = "forced";  // forced | any | worker
  std::vector<Buffer> buffers;
};

struct Fake {
  std::mutex mutex;          // state below
  std::mutex deliver_mutex;  // one delivery at a time (like CUPTI's flush)
  std::deque<Group> groups;
  std::vector<uint64_t> pushes;  // external ids, in push order
  std::map<std::pair<uintptr_t, uint32_t>, size_t> dropped;  // (ctx, stream) -> count
  std::deque<std::string> names;  // kernel/marker names, alive for the process
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  bool subscribed = false;
  int64_t base_ts = 0;  // fake clock value that record times are relative to
  uint64_t flood = 0;
  bool flooded = false;
  std::string mode;
  std::string log_path;
  int enabled_kinds = 0;
  size_t max_held = 0;
};

Fake& fake() {
  static Fake* f = new Fake();
  return *f;
}

void logLine(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void logLine(const char* fmt, ...) {
  const std::string& path = fake().log_path;
  if (path.empty()) return;
  FILE* f = std::fopen(path.c_str(), "a");
  if (f == nullptr) return;
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(f, fmt, ap);
  va_end(ap);
  std::fputc('\n', f);
  std::fclose(f);
}

int64_t fakeNow() { return monoNs() + kClockOffsetNs; }

uint64_t num(const Line& l, const char* key, uint64_t dflt = 0) {
  auto it = l.kv.find(key);
  return it == l.kv.end() ? dflt : std::strtoull(it->second.c_str(), nullptr, 10);
}

void parseFile(const char* path) {
  auto& f = fake();
  std::ifstream in(path);
  std::string text;
  while (std::getline(in, text)) {
    size_t hash = text.find('#');
    if (hash != std::string::npos) text.resize(hash);
    std::istringstream ss(text);
    Line l;
    if (!(ss >> l.kind)) continue;
    std::string tok;
    while (ss >> tok) {
      size_t eq = tok.find('=');
      if (eq == std::string::npos) continue;
      std::string key = tok.substr(0, eq);
      if (key == "name") {  // the name runs to the end of the line
        std::string rest;
        std::getline(ss, rest);
        l.name = tok.substr(eq + 1) + rest;
        while (!l.name.empty() && l.name.back() == ' ') l.name.pop_back();
        break;
      }
      l.kv[key] = tok.substr(eq + 1);
    }
    if (l.kind == "group") {
      Group g;
      auto it = l.kv.find("trigger");
      if (it != l.kv.end()) g.trigger = it->second;
      f.groups.push_back(g);
    } else if (l.kind == "buffer") {
      if (f.groups.empty()) f.groups.emplace_back();
      Buffer b;
      b.ctx = static_cast<uint32_t>(num(l, "ctx"));
      b.stream = static_cast<uint32_t>(num(l, "stream"));
      b.dropped = num(l, "dropped");
      b.truncate = num(l, "truncate") != 0;
      f.groups.back().buffers.push_back(b);
    } else {
      if (f.groups.empty()) f.groups.emplace_back();
      if (f.groups.back().buffers.empty()) f.groups.back().buffers.emplace_back();
      f.groups.back().buffers.back().records.push_back(l);
    }
  }
}

size_t recordSize(uint32_t kind) {
  size_t s = 0;
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: s = sizeof(CUpti_ActivityKernel10); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: s = sizeof(CUpti_ActivityMemcpy6); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2: s = sizeof(CUpti_ActivityMemcpyPtoP4); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: s = sizeof(CUpti_ActivityMemset4); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: s = sizeof(CUpti_ActivitySynchronization2); break;
    case CUPTI_ACTIVITY_KIND_MARKER: s = sizeof(CUpti_ActivityMarker2); break;
    case CUPTI_ACTIVITY_KIND_CONTEXT: s = sizeof(CUpti_ActivityContext3); break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: s = sizeof(CUpti_ActivityExternalCorrelation); break;
    default: return 0;
  }
  return (s + 7) & ~size_t{7};
}

uint8_t copyKind(const std::string& k) {
  if (k == "HtoD") return CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  if (k == "DtoH") return CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  if (k == "DtoD") return CUPTI_ACTIVITY_MEMCPY_KIND_DTOD;
  if (k == "HtoH") return CUPTI_ACTIVITY_MEMCPY_KIND_HTOH;
  return CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN;
}

uint64_t ts(const Line& l, const char* key) {
  auto it = l.kv.find(key);
  if (it == l.kv.end()) return 0;  // CUPTI's "not recorded"
  return static_cast<uint64_t>(fake().base_ts) + std::strtoull(it->second.c_str(), nullptr, 10);
}

const char* keepName(const std::string& n) {
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  return f.names.emplace_back(n).c_str();
}

// The fields that kernel, memcpy and memset records all have, under the same names.
template <class Record>
void layOutOnStream(const Line& l, Record* r) {
  r->start = ts(l, "start");
  r->end = ts(l, "end");
  r->deviceId = static_cast<uint32_t>(num(l, "dev"));
  r->streamId = static_cast<uint32_t>(num(l, "stream"));
  r->correlationId = static_cast<uint32_t>(num(l, "corr"));
}

// Copies the finished record to `out`; returns its size in the buffer.
template <class Record>
size_t put(const Record& r, uint8_t* out) {
  std::memcpy(out, &r, sizeof r);
  return recordSize(r.kind);
}

// Lays `l` out as its CUPTI struct at `out` (recordSize bytes, zeroed). Returns the size, 0 if unknown.
size_t layOut(const Line& l, uint8_t* out) {
  if (l.kind == "kernel") {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    layOutOnStream(l, &k);
    k.completed = k.end;
    k.contextId = static_cast<uint32_t>(num(l, "ctx", 1));
    k.name = keepName(l.name);
    return put(k, out);
  }
  if (l.kind == "memcpy") {
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = copyKind(l.kv.count("copy") ? l.kv.at("copy") : "");
    m.bytes = num(l, "bytes");
    layOutOnStream(l, &m);
    m.contextId = static_cast<uint32_t>(num(l, "ctx", 1));
    return put(m, out);
  }
  if (l.kind == "memcpy2") {
    CUpti_ActivityMemcpyPtoP4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    m.bytes = num(l, "bytes");
    layOutOnStream(l, &m);
    return put(m, out);
  }
  if (l.kind == "memset") {
    CUpti_ActivityMemset4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.bytes = num(l, "bytes");
    layOutOnStream(l, &m);
    m.contextId = static_cast<uint32_t>(num(l, "ctx", 1));
    return put(m, out);
  }
  if (l.kind == "sync") {
    CUpti_ActivitySynchronization2 y{};
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = static_cast<CUpti_ActivitySynchronizationType>(num(l, "type"));
    y.start = ts(l, "start");
    y.end = ts(l, "end");
    y.correlationId = static_cast<uint32_t>(num(l, "corr"));
    y.contextId = static_cast<uint32_t>(num(l, "ctx", 1));
    y.streamId = static_cast<uint32_t>(num(l, "stream", UINT32_MAX));
    return put(y, out);
  }
  if (l.kind == "marker_start" || l.kind == "marker_end" || l.kind == "marker") {
    CUpti_ActivityMarker2 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = l.kind == "marker_start" ? CUPTI_ACTIVITY_FLAG_MARKER_START
              : l.kind == "marker_end" ? CUPTI_ACTIVITY_FLAG_MARKER_END
                                       : CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
    m.timestamp = ts(l, "ts");
    m.id = static_cast<uint32_t>(num(l, "id"));
    m.name = l.kind == "marker_end" ? nullptr : keepName(l.name);
    return put(m, out);
  }
  if (l.kind == "context") {
    CUpti_ActivityContext3 c{};
    c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    c.contextId = static_cast<uint32_t>(num(l, "ctx", 1));
    c.deviceId = static_cast<uint32_t>(num(l, "dev"));
    return put(c, out);
  }
  if (l.kind == "extcorr") {
    CUpti_ActivityExternalCorrelation x{};
    x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    x.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
    size_t k = num(l, "push");  // the k-th id the app pushed (1-based), as CUPTI would have seen it
    {
      std::lock_guard<std::mutex> lock(fake().mutex);
      x.externalId = (k >= 1 && k <= fake().pushes.size()) ? fake().pushes[k - 1] : 0;
    }
    x.correlationId = static_cast<uint32_t>(num(l, "corr"));
    return put(x, out);
  }
  return 0;
}

size_t layOutSize(const Line& l) {
  if (l.kind == "kernel") return recordSize(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (l.kind == "memcpy") return recordSize(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (l.kind == "memcpy2") return recordSize(CUPTI_ACTIVITY_KIND_MEMCPY2);
  if (l.kind == "memset") return recordSize(CUPTI_ACTIVITY_KIND_MEMSET);
  if (l.kind == "sync") return recordSize(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  if (l.kind.rfind("marker", 0) == 0) return recordSize(CUPTI_ACTIVITY_KIND_MARKER);
  if (l.kind == "context") return recordSize(CUPTI_ACTIVITY_KIND_CONTEXT);
  if (l.kind == "extcorr") return recordSize(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  return 0;
}

void addDropped(uint32_t ctx, uint32_t stream, size_t n) {
  if (n == 0) return;
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.dropped[{ctx, stream}] += n;
}

CUcontext ctxHandle(uint32_t ctx) { return reinterpret_cast<CUcontext>(static_cast<uintptr_t>(ctx)); }

struct Filled {
  uint8_t* data;
  size_t valid;
  uint32_t ctx;
  uint32_t stream;
};

// Fills one buffer the client hands out with `b`'s records; what doesn't fit
// (or gets no buffer) is dropped and counted, as CUPTI does.
bool fill(const Buffer& b, Filled* out) {
  auto& f = fake();
  uint8_t* data = nullptr;
  size_t size = 0, max_records = 0;
  f.request(&data, &size, &max_records);
  if (data == nullptr || size == 0) {
    addDropped(b.ctx, b.stream, b.records.size() + b.dropped);
    return false;
  }
  size_t used = 0, last = 0, placed = 0;
  for (const Line& l : b.records) {
    size_t need = layOutSize(l);
    if (need == 0) continue;
    if (used + need > size || (max_records != 0 && placed == max_records)) {
      addDropped(b.ctx, b.stream, 1);
      continue;
    }
    std::memset(data + used, 0, need);
    layOut(l, data + used);
    last = need;
    used += need;
    ++placed;
  }
  addDropped(b.ctx, b.stream, b.dropped);
  if (b.truncate && last > 0) used -= last / 2;  // the last record ends past validSize
  *out = {data, used, b.ctx, b.stream};
  return true;
}

void noteHeld(size_t held) {
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (held > f.max_held) f.max_held = held;
}

// A burst: N kernel records placed while every buffer is held (none completed
// until all are placed), so the client's pool runs dry.
void flood(uint64_t n) {
  auto& f = fake();
  std::vector<Filled> held;
  Buffer current;
  current.ctx = 1;
  current.stream = 99;
  uint64_t done = 0;
  while (done < n) {
    uint8_t* data = nullptr;
    size_t size = 0, max_records = 0;
    f.request(&data, &size, &max_records);
    if (data == nullptr) {
      addDropped(1, 99, n - done);
      break;
    }
    size_t rec = recordSize(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    size_t used = 0;
    while (done < n && used + rec <= size) {
      Line l;
      l.kind = "kernel";
      l.kv["start"] = std::to_string(1000000 + done * 10);
      l.kv["end"] = std::to_string(1000000 + done * 10 + 5);
      l.kv["stream"] = "99";
      l.name = "flood_kernel";
      std::memset(data + used, 0, rec);
      layOut(l, data + used);
      used += rec;
      ++done;
    }
    held.push_back({data, used, 1, 99});
    noteHeld(held.size());
  }
  for (const Filled& h : held) f.complete(ctxHandle(h.ctx), h.stream, h.data, 0, h.valid);
  logLine("flood_held_max %zu", held.size());
}

// Delivers the next group if its trigger matches. Returns true if one was delivered.
bool deliverNext(const char* why) {
  auto& f = fake();
  std::lock_guard<std::mutex> deliver(f.deliver_mutex);
  uint64_t flood_now = 0;
  {
    std::lock_guard<std::mutex> lock(f.mutex);
    if (f.request == nullptr || f.complete == nullptr) return false;
    if (std::strcmp(why, "forced") == 0 && f.flood > 0 && !f.flooded) {
      f.flooded = true;
      flood_now = f.flood;
    }
  }
  if (flood_now > 0) flood(flood_now);
  Group g;
  {
    std::lock_guard<std::mutex> lock(f.mutex);
    if (f.groups.empty()) return false;
    const std::string& t = f.groups.front().trigger;
    bool match = t == why || (t == "any" && std::strcmp(why, "worker") != 0);
    if (!match) return false;
    g = std::move(f.groups.front());
    f.groups.pop_front();
  }
  // Every buffer of the group is filled first, then completed (CUPTI holds
  // several at once, and returns them in no particular order).
  std::vector<Filled> filled;
  for (const Buffer& b : g.buffers) {
    Filled x{};
    if (fill(b, &x)) filled.push_back(x);
    noteHeld(filled.size());
  }
  for (const Filled& x : filled) f.complete(ctxHandle(x.ctx), x.stream, x.data, 0, x.valid);
  logLine("delivered %s buffers %zu", why, filled.size());
  return true;
}

struct Init {
  Init() {
    auto& f = fake();
    const char* log = std::getenv("FAKE_CUPTI_LOG");
    if (log != nullptr) f.log_path = log;
    const char* mode = std::getenv("FAKE_CUPTI_MODE");
    if (mode != nullptr) f.mode = mode;
    const char* fl = std::getenv("FAKE_CUPTI_FLOOD");
    if (fl != nullptr) f.flood = std::strtoull(fl, nullptr, 10);
    const char* rec = std::getenv("FAKE_CUPTI_RECORDS");
    if (rec != nullptr) parseFile(rec);
    logLine("loaded groups %zu", f.groups.size());
  }
} g_init;

}  // namespace

// ---- the CUPTI ABI subset ----------------------------------------------------

FAKE_EXPORT CUptiResult cuptiGetVersion(uint32_t* version) {
  *version = CUPTI_API_VERSION;
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetResultString(CUptiResult result, const char** str) {
  switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiGetTimestamp(uint64_t* timestamp) {
  *timestamp = static_cast<uint64_t>(fakeNow());
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* subscriber, CUpti_CallbackFunc callback,
                                       void* userdata) {
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.mode == "busy" || f.subscribed) {
    logLine("subscribe refused");
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  }
  f.subscribed = true;
  f.callback = callback;
  f.userdata = userdata;
  *subscriber = reinterpret_cast<CUpti_SubscriberHandle>(&f);
  logLine("subscribed");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.subscribed = false;
  f.callback = nullptr;
  logLine("unsubscribed");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle, CUpti_CallbackDomain domain,
                                            CUpti_CallbackId cbid) {
  logLine("callback %u domain %d cbid %u", enable, static_cast<int>(domain), cbid);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                                       CUpti_BuffersCallbackCompleteFunc complete) {
  auto& f = fake();
  int64_t host = monoNs();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.request = request;
  f.complete = complete;
  // Record times in the file are relative to this instant.
  f.base_ts = host + kClockOffsetNs;
  logLine("base_host_ns %lld", static_cast<long long>(host));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  if (f.mode == "busy_enable" && kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  ++f.enabled_kinds;
  logLine("enable %d", static_cast<int>(kind));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
  logLine("disable %d", static_cast<int>(kind));
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag) {
  bool forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
  logLine("flush %s", forced ? "forced" : "periodic");
  deliverNext(forced ? "forced" : "any");
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  size_t off = 0;
  if (*record != nullptr) {
    size_t cur = recordSize(static_cast<uint32_t>((*record)->kind));
    off = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer) + cur;
  }
  if (off >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  if (valid - off < sizeof(CUpti_Activity)) return CUPTI_ERROR_INVALID_KIND;
  uint32_t kind;
  std::memcpy(&kind, buffer + off, sizeof kind);
  size_t size = recordSize(kind);
  if (size == 0 || off + size > valid) return CUPTI_ERROR_INVALID_KIND;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + off);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t stream, size_t* dropped) {
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  auto key = std::make_pair(reinterpret_cast<uintptr_t>(context), stream);
  auto it = f.dropped.find(key);
  *dropped = it != f.dropped.end() ? it->second : 0;
  if (it != f.dropped.end()) f.dropped.erase(it);  // reset on read, as CUPTI does
  return CUPTI_SUCCESS;
}

namespace {
thread_local std::vector<uint64_t> t_stack;
}

FAKE_EXPORT CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t id) {
  t_stack.push_back(id);
  auto& f = fake();
  std::lock_guard<std::mutex> lock(f.mutex);
  f.pushes.push_back(id);
  return CUPTI_SUCCESS;
}

FAKE_EXPORT CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t* last) {
  if (t_stack.empty()) return CUPTI_ERROR_INVALID_PARAMETER;
  *last = t_stack.back();
  t_stack.pop_back();
  return CUPTI_SUCCESS;
}

// ---- test controls (not CUPTI) ------------------------------------------------

// CUPTI's worker thread returning a full buffer: delivers the next "worker"
// group from a thread of the fake's own, and waits for it.
FAKE_EXPORT void fake_cupti_worker_delivery() {
  std::thread t([] { deliverNext("worker"); });
  t.join();
}

// cuCtxDestroy of context `ctx`: CUPTI calls the subscriber first.
FAKE_EXPORT void fake_cupti_destroy_context(uint32_t ctx) {
  auto& f = fake();
  CUpti_CallbackFunc cb;
  void* user;
  {
    std::lock_guard<std::mutex> lock(f.mutex);
    cb = f.callback;
    user = f.userdata;
  }
  logLine("destroy_context %u", ctx);
  if (cb == nullptr) return;
  CUpti_ResourceData data{};
  data.context = ctxHandle(ctx);
  cb(user, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING, &data);
}

// The most buffers the fake held at once (never more than the client's pool).
FAKE_EXPORT size_t fake_cupti_max_held() {
  std::lock_guard<std::mutex> lock(fake().mutex);
  return fake().max_held;
}

FAKE_EXPORT size_t fake_cupti_groups_left() {
  std::lock_guard<std::mutex> lock(fake().mutex);
  return fake().groups.size();
}
