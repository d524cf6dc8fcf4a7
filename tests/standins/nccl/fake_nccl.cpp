// A stand-in libnccl.so.2: NCCL's C ABI with CPU "collectives" on host
// memory, for the tests of ringside's NCCL wrapper and profiler plugin on
// machines without a GPU.
//
// - Ranks of one communicator are processes that share a folder
//   (FAKE_NCCL_DIR): each call writes this rank's contribution to a file and
//   reads the others' (world size 1 needs no folder). Results are exact.
// - Like NCCL, it loads the profiler plugin named by NCCL_PROFILER_PLUGIN
//   (a path, or NAME for libnccl-profiler-NAME.so), takes the newest
//   ncclProfiler_vN it knows (FAKE_NCCL_PROFILER_VERSION, default 6, plays
//   NCCL's own newest version), calls init per communicator and feeds every
//   call's events in NCCL's order (feed.h).
// - Calls between ncclGroupStart/End run at ncclGroupEnd, sends first.
// - FAKE_NCCL_CHANNELS (2), FAKE_NCCL_ALGO (Ring), FAKE_NCCL_PROTO (Simple)
//   shape the events.
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "feed.h"
#include "nccl_c_api.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm {
  uint64_t hash = 0;
  int rank = 0;
  int nranks = 1;
  int device = 0;
  uint64_t tag = 0;       // collective exchanges on this communicator, in call order
  uint64_t seq = 0;       // NCCL's collective sequence number (what the profiler sees)
  std::vector<uint64_t> sent, received;  // point-to-point messages per peer
  uint32_t splits = 0;
  void* prof = nullptr;   // the plugin's context for this communicator
};

namespace {

using fake_nccl::feed::Op;
namespace feed = fake_nccl::feed;

feed::Plugin g_plugin;
std::once_flag g_plugin_once;
std::mutex g_mutex;  // the plugin table and contexts

int envInt(const char* name, int dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::atoi(v) : dflt;
}
const char* envStr(const char* name, const char* dflt) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : dflt;
}

void loadPlugin() {
  std::call_once(g_plugin_once, [] {
    const char* spec = std::getenv("NCCL_PROFILER_PLUGIN");
    if (spec == nullptr || spec[0] == '\0') return;
    std::string err;
    if (!feed::load(spec, envInt("FAKE_NCCL_PROFILER_VERSION", 6), &g_plugin, &err))
      std::fprintf(stderr, "fake-nccl: profiler plugin %s not loaded: %s\n", spec, err.c_str());
  });
}

uint64_t idHash(const ncclUniqueId& id) {
  // NCCL's hash of the unique id (djb2 with xor, signed chars).
  uint64_t h = 5381;
  for (char c : id.internal) h = ((h << 5) + h) ^ static_cast<uint64_t>(static_cast<int64_t>(c));
  return h;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdULL;
}

// NCCL_DEBUG=INFO with NCCL_DEBUG_FILE: the lines NCCL prints when it creates
// a communicator (its rings, its trees, "Init COMPLETE" with the commId), from
// the thread that set the communicator up. Rings: 0 1 ... n-1 on every
// channel; trees: a chain, rank r's parent r-1.
void logInit(ncclComm* c, const char* fn) {
  const char* level = std::getenv("NCCL_DEBUG");
  const char* spec = std::getenv("NCCL_DEBUG_FILE");
  if (level == nullptr || std::strcmp(level, "INFO") != 0 || spec == nullptr) return;
  static std::mutex m;
  static FILE* f = nullptr;
  std::lock_guard<std::mutex> lock(m);
  char host[128] = {};
  gethostname(host, sizeof host - 1);
  if (f == nullptr) {
    std::string path;
    for (const char* p = spec; *p != '\0'; ++p) {
      if (p[0] == '%' && p[1] == 'h') { path += host; ++p; }
      else if (p[0] == '%' && p[1] == 'p') { path += std::to_string(getpid()); ++p; }
      else path += *p;
    }
    f = std::fopen(path.c_str(), "w");
    if (f == nullptr) return;
  }
  long tid = static_cast<long>(gettid());
  int channels = envInt("FAKE_NCCL_CHANNELS", 2);
  for (int ch = 0; ch < channels; ++ch) {
    std::fprintf(f, "%s:%d:%ld [%d] NCCL INFO Channel %02d/%02d :", host, getpid(), tid, c->device, ch, channels);
    for (int r = 0; r < c->nranks; ++r) std::fprintf(f, " %4d", r);
    std::fprintf(f, "\n");
  }
  std::fprintf(f, "%s:%d:%ld [%d] NCCL INFO Channel 00/0 : %d[%d] -> %d[%d] via P2P/IPC\n", host, getpid(), tid,
               c->device, c->rank, c->device, (c->rank + 1) % c->nranks, (c->rank + 1) % c->nranks);
  std::fprintf(f, "%s:%d:%ld [%d] NCCL INFO Trees", host, getpid(), tid, c->device);
  for (int ch = 0; ch < channels; ++ch)
    std::fprintf(f, " [%d] %d/-1/-1->%d->%d", ch, c->rank + 1 < c->nranks ? c->rank + 1 : -1, c->rank, c->rank - 1);
  std::fprintf(f, "\n");
  std::fprintf(f, "%s:%d:%ld [%d] NCCL INFO %s comm %p rank %d nranks %d cudaDev %d nvmlDev %d busId 0 "
               "commId 0x%llx - Init COMPLETE\n", host, getpid(), tid, c->device, fn, static_cast<void*>(c), c->rank,
               c->nranks, c->device, c->device,
               // like NCCL, another hash of the id than the commHash its profiler sees
               static_cast<unsigned long long>(mix(c->hash, 0xdead)));
  std::fflush(f);
}

void profInit(ncclComm* c) {
  loadPlugin();
  if (g_plugin.version == 0) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  bool ok = false;
  c->prof = feed::init(g_plugin, c->hash, "fake", 1, c->nranks, c->rank, &ok);
  // Like NCCL (src/plugin/profiler.cc, ncclProfilerPluginInit): a failed
  // init leaves the context null and NCCL goes on "without profiler" for this
  // communicator, yet still calls the plugin's startEvent/stopEvent with that
  // null context wherever the event mask (set by any communicator's init)
  // asks for an event; only finalize is skipped.
  if (!ok) c->prof = nullptr;
}

// ---- the exchange between ranks (files in FAKE_NCCL_DIR) ----
std::string dir() { return envStr("FAKE_NCCL_DIR", "/tmp"); }

bool writeFile(const std::string& path, const std::string& data) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return false;
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

bool readFile(const std::string& path, std::string* out) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(envInt("FAKE_NCCL_TIMEOUT_S", 60));
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream f(path, std::ios::binary);
    if (f) {
      std::stringstream ss;
      ss << f.rdbuf();
      *out = ss.str();
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::fprintf(stderr, "fake-nccl: timed out waiting for %s\n", path.c_str());
  return false;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// Every rank's contribution to exchange `tag` of `c`, in rank order.
bool allContributions(ncclComm* c, uint64_t tag, const std::string& mine, std::vector<std::string>* parts) {
  parts->assign(static_cast<size_t>(c->nranks), std::string());
  (*parts)[static_cast<size_t>(c->rank)] = mine;
  if (c->nranks == 1) return true;
  std::string base = dir() + "/c-" + hex(c->hash) + "-" + std::to_string(tag) + "-";
  if (!writeFile(base + std::to_string(c->rank), mine)) return false;
  for (int r = 0; r < c->nranks; ++r)
    if (r != c->rank && !readFile(base + std::to_string(r), &(*parts)[static_cast<size_t>(r)])) return false;
  return true;
}

std::string p2pPath(ncclComm* c, int from, int to, uint64_t n) {
  return dir() + "/p-" + hex(c->hash) + "-" + std::to_string(from) + "-" + std::to_string(to) + "-" +
         std::to_string(n);
}

size_t typeSize(int t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}
const char* typeName(int t) {
  static const char* kNames[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
                                 "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64", "ncclBfloat16"};
  return t >= 0 && t < 10 ? kNames[t] : "ncclInt8";
}

template <class T>
void reduceTyped(T* acc, const T* in, size_t n, int op) {
  for (size_t i = 0; i < n; ++i) {
    switch (op) {
      case ncclProd: acc[i] = acc[i] * in[i]; break;
      case ncclMax: acc[i] = in[i] > acc[i] ? in[i] : acc[i]; break;
      case ncclMin: acc[i] = in[i] < acc[i] ? in[i] : acc[i]; break;
      default: acc[i] = acc[i] + in[i]; break;
    }
  }
}

// Reduces the parts (each `count` elements) in rank order.
std::string reduceAll(const std::vector<std::string>& parts, size_t count, int dtype, int op) {
  std::string acc = parts[0];
  for (size_t r = 1; r < parts.size(); ++r) {
    void* a = acc.data();
    const void* b = parts[r].data();
    switch (dtype) {
      case ncclInt8: reduceTyped(static_cast<int8_t*>(a), static_cast<const int8_t*>(b), count, op); break;
      case ncclUint8: reduceTyped(static_cast<uint8_t*>(a), static_cast<const uint8_t*>(b), count, op); break;
      case ncclInt32: reduceTyped(static_cast<int32_t*>(a), static_cast<const int32_t*>(b), count, op); break;
      case ncclUint32: reduceTyped(static_cast<uint32_t*>(a), static_cast<const uint32_t*>(b), count, op); break;
      case ncclInt64: reduceTyped(static_cast<int64_t*>(a), static_cast<const int64_t*>(b), count, op); break;
      case ncclUint64: reduceTyped(static_cast<uint64_t*>(a), static_cast<const uint64_t*>(b), count, op); break;
      case ncclFloat32: reduceTyped(static_cast<float*>(a), static_cast<const float*>(b), count, op); break;
      case ncclFloat64: reduceTyped(static_cast<double*>(a), static_cast<const double*>(b), count, op); break;
      default: break;  // 16-bit floats: not reduced by the stand-in
    }
  }
  if (op == ncclAvg && dtype == ncclFloat32)
    for (size_t i = 0; i < count; ++i) reinterpret_cast<float*>(acc.data())[i] /= static_cast<float>(parts.size());
  return acc;
}

// ---- calls, groups ----
struct Task {
  Op op;
  ncclComm* comm = nullptr;
  void* api = nullptr;
  bool send = false;
  std::function<void()> before;   // sends: write the message (before anything waits)
  std::function<bool()> work;     // the data movement; false: failed
};

thread_local int t_depth = 0;
thread_local std::vector<Task> t_tasks;
thread_local void* t_group_api = nullptr;

ncclResult_t launch() {
  std::vector<Task> tasks;
  tasks.swap(t_tasks);
  bool ok = true;
  for (auto& t : tasks)
    if (t.before) t.before();
  std::map<void*, void*> groups;  // plugin context → its group event
  for (auto& t : tasks)
    if (g_plugin.version > 0 && groups.count(t.comm->prof) == 0)
      groups[t.comm->prof] = feed::groupStart(g_plugin, t.comm->prof, t_group_api, t.comm->rank);
  for (auto& t : tasks) {
    auto work = [&] {
      if (!t.work()) ok = false;
    };
    feed::runOp(g_plugin, t.comm->prof, t.op, t.api, groups[t.comm->prof], work);  // no plugin: work()
  }
  for (auto& g : groups) feed::groupStop(g_plugin, g.second);
  feed::groupApiStop(g_plugin, t_group_api);
  t_group_api = nullptr;
  return ok ? ncclSuccess : ncclRemoteError;
}

Op describe(ncclComm* c, const char* func, bool p2p, size_t count, int dtype, int root, int peer,
            cudaStream_t stream, size_t bytes, const void* send, void* recv) {
  Op o;
  o.p2p = p2p;
  o.func = func;
  o.count = count;
  o.dtype = dtype;
  o.dtype_name = typeName(dtype);
  o.root = root;
  o.peer = peer;
  o.stream = stream;
  o.comm_hash = c->hash;
  o.seq = p2p ? 0 : c->seq++;
  o.rank = c->rank;
  o.nranks = c->nranks;
  o.bytes = bytes;
  o.channels = envInt("FAKE_NCCL_CHANNELS", 2);
  o.algo = envStr("FAKE_NCCL_ALGO", "Ring");
  o.proto = envStr("FAKE_NCCL_PROTO", "Simple");
  o.sendbuff = send;
  o.recvbuff = recv;
  return o;
}

ncclResult_t enqueue(Task t) {
  bool implicit = t_depth == 0;
  if (implicit) t_group_api = feed::groupApiStart(g_plugin, t.comm->prof, 1);
  t.api = feed::apiEvent(g_plugin, t.comm->prof, t_group_api, t.op);  // also with a null context, as NCCL
  t_tasks.push_back(std::move(t));
  return implicit ? launch() : ncclSuccess;
}

// A collective: every rank contributes `in_bytes` from `send`; `finish` makes
// this rank's result from all contributions.
ncclResult_t collective(ncclComm* c, const char* func, const void* send, size_t in_bytes, void* recv, size_t count,
                        int dtype, int root, cudaStream_t stream,
                        std::function<void(const std::vector<std::string>&)> finish) {
  if (c == nullptr) return ncclInvalidArgument;
  Task t;
  t.comm = c;
  t.op = describe(c, func, false, count, dtype, root, -1, stream, in_bytes, send, recv);
  uint64_t tag = c->tag++;
  std::string mine(static_cast<const char*>(send), send != nullptr ? in_bytes : 0);
  t.work = [c, tag, mine, finish] {
    std::vector<std::string> parts;
    if (!allContributions(c, tag, mine, &parts)) return false;
    finish(parts);
    return true;
  };
  return enqueue(std::move(t));
}

}  // namespace

// ---------------------------------------------------------------------------
FAKE_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version != nullptr) *version = 22900;
  return ncclSuccess;
}

FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "no error" : "fake error"; }

FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id->internal, 0, sizeof id->internal);
  std::ifstream f("/dev/urandom", std::ios::binary);
  f.read(id->internal, 32);
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  if (out == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  auto* c = new ncclComm();
  c->hash = idHash(id);
  c->rank = rank;
  c->nranks = nranks;
  c->device = rank;
  c->sent.assign(static_cast<size_t>(nranks), 0);
  c->received.assign(static_cast<size_t>(nranks), 0);
  // NCCL runs communicator setup on a thread of its own: so does the stand-in.
  std::thread([c] {
    profInit(c);
    logInit(c, "ncclCommInitRank");
  }).join();
  *out = c;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int nranks, ncclUniqueId id, int rank,
                                                ncclConfig_t*) {
  return ncclCommInitRank(out, nranks, id, rank);
}

FAKE_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int*) {
  if (comms == nullptr || ndev < 1) return ncclInvalidArgument;
  ncclUniqueId id;
  ncclGetUniqueId(&id);
  for (int i = 0; i < ndev; ++i) {
    auto* c = new ncclComm();
    c->hash = idHash(id);
    c->rank = i;
    c->nranks = ndev;
    c->device = i;
    c->sent.assign(static_cast<size_t>(ndev), 0);
    c->received.assign(static_cast<size_t>(ndev), 0);
    profInit(c);
    comms[i] = c;
  }
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* out, ncclConfig_t*) {
  if (comm == nullptr || out == nullptr) return ncclInvalidArgument;
  // Every member says its color and key; members of one color, ordered by (key, rank), form the child.
  std::string mine = std::to_string(color) + " " + std::to_string(key);
  std::vector<std::string> parts;
  if (!allContributions(comm, comm->tag++, mine, &parts)) return ncclRemoteError;
  uint32_t nth = comm->splits++;
  *out = nullptr;
  if (color < 0) return ncclSuccess;
  std::vector<std::pair<int, int>> members;  // (key, parent rank)
  for (int r = 0; r < comm->nranks; ++r) {
    int col = 0, k = 0;
    std::sscanf(parts[static_cast<size_t>(r)].c_str(), "%d %d", &col, &k);
    if (col == color) members.emplace_back(k, r);
  }
  std::sort(members.begin(), members.end());
  auto* c = new ncclComm();
  c->hash = mix(mix(comm->hash, static_cast<uint64_t>(color)), nth);
  c->nranks = static_cast<int>(members.size());
  for (size_t i = 0; i < members.size(); ++i)
    if (members[i].second == comm->rank) c->rank = static_cast<int>(i);
  c->device = comm->device;
  c->sent.assign(members.size(), 0);
  c->received.assign(members.size(), 0);
  std::thread([c] {
    profInit(c);
    logInit(c, "ncclCommSplit");
  }).join();
  *out = c;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) { return comm != nullptr ? ncclSuccess : ncclInvalidArgument; }

static ncclResult_t endComm(ncclComm_t comm) {
  if (comm == nullptr) return ncclInvalidArgument;
  if (comm->prof != nullptr) {
    std::lock_guard<std::mutex> lock(g_mutex);
    feed::finalize(g_plugin, comm->prof);
  }
  delete comm;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return endComm(comm); }
FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return endComm(comm); }

FAKE_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (comm == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (comm == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (comm == nullptr || device == nullptr) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclGroupStart() {
  if (t_depth++ == 0) t_group_api = feed::groupApiStart(g_plugin, nullptr, 2);
  return ncclSuccess;
}
FAKE_EXPORT ncclResult_t ncclGroupEnd() {
  if (t_depth == 0) return ncclInvalidUsage;
  if (--t_depth > 0) return ncclSuccess;
  return launch();
}

FAKE_EXPORT ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                       ncclComm_t c, cudaStream_t s) {
  size_t n = count * typeSize(dt);
  return collective(c, "AllReduce", send, n, recv, count, dt, -1, s, [=](const std::vector<std::string>& p) {
    std::string r = reduceAll(p, count, dt, op);
    std::memcpy(recv, r.data(), n);
  });
}

FAKE_EXPORT ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t dt, int root,
                                       ncclComm_t c, cudaStream_t s) {
  if (c == nullptr) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  return collective(c, "Broadcast", c->rank == root ? send : nullptr, n, recv, count, dt, root, s,
                    [=](const std::vector<std::string>& p) {
                      std::memcpy(recv, p[static_cast<size_t>(root)].data(), n);
                    });
}

FAKE_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t dt, int root, ncclComm_t c,
                                   cudaStream_t s) {
  return ncclBroadcast(buff, buff, count, dt, root, c, s);
}

FAKE_EXPORT ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                    int root, ncclComm_t c, cudaStream_t s) {
  if (c == nullptr) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  int me = c->rank;
  return collective(c, "Reduce", send, n, recv, count, dt, root, s, [=](const std::vector<std::string>& p) {
    if (me != root) return;
    std::string r = reduceAll(p, count, dt, op);
    std::memcpy(recv, r.data(), n);
  });
}

FAKE_EXPORT ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t dt, ncclComm_t c,
                                       cudaStream_t s) {
  size_t n = count * typeSize(dt);
  return collective(c, "AllGather", send, n, recv, count, dt, -1, s, [=](const std::vector<std::string>& p) {
    for (size_t r = 0; r < p.size(); ++r) std::memcpy(static_cast<char*>(recv) + r * n, p[r].data(), n);
  });
}

FAKE_EXPORT ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dt,
                                           ncclRedOp_t op, ncclComm_t c, cudaStream_t s) {
  if (c == nullptr) return ncclInvalidArgument;
  size_t n = count * typeSize(dt), total = n * static_cast<size_t>(c->nranks);
  int me = c->rank, nr = c->nranks;
  return collective(c, "ReduceScatter", send, total, recv, count, dt, -1, s, [=](const std::vector<std::string>& p) {
    std::string r = reduceAll(p, count * static_cast<size_t>(nr), dt, op);
    std::memcpy(recv, r.data() + static_cast<size_t>(me) * n, n);
  });
}

FAKE_EXPORT ncclResult_t ncclAlltoAll(const void* send, void* recv, size_t count, ncclDataType_t dt, ncclComm_t c,
                                      cudaStream_t s) {
  if (c == nullptr) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  int me = c->rank;
  return collective(c, "AlltoAll", send, n * static_cast<size_t>(c->nranks), recv, count, dt, -1, s,
                    [=](const std::vector<std::string>& p) {
                      for (size_t r = 0; r < p.size(); ++r)
                        std::memcpy(static_cast<char*>(recv) + r * n, p[r].data() + static_cast<size_t>(me) * n, n);
                    });
}

FAKE_EXPORT ncclResult_t ncclGather(const void* send, void* recv, size_t count, ncclDataType_t dt, int root,
                                    ncclComm_t c, cudaStream_t s) {
  if (c == nullptr) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  int me = c->rank;
  return collective(c, "Gather", send, n, recv, count, dt, root, s, [=](const std::vector<std::string>& p) {
    if (me != root) return;
    for (size_t r = 0; r < p.size(); ++r) std::memcpy(static_cast<char*>(recv) + r * n, p[r].data(), n);
  });
}

FAKE_EXPORT ncclResult_t ncclScatter(const void* send, void* recv, size_t count, ncclDataType_t dt, int root,
                                     ncclComm_t c, cudaStream_t s) {
  if (c == nullptr) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  int me = c->rank;
  return collective(c, "Scatter", c->rank == root ? send : nullptr, n * static_cast<size_t>(c->nranks), recv, count,
                    dt, root, s, [=](const std::vector<std::string>& p) {
                      std::memcpy(recv, p[static_cast<size_t>(root)].data() + static_cast<size_t>(me) * n, n);
                    });
}

FAKE_EXPORT ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
                                  cudaStream_t s) {
  if (c == nullptr || peer < 0 || peer >= c->nranks) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  Task t;
  t.comm = c;
  t.send = true;
  t.op = describe(c, "Send", true, count, dt, -1, peer, s, n, send, nullptr);
  std::string path = p2pPath(c, c->rank, peer, c->sent[static_cast<size_t>(peer)]++);
  std::string data(static_cast<const char*>(send), n);
  t.before = [path, data] { writeFile(path, data); };
  t.work = [] { return true; };
  return enqueue(std::move(t));
}

FAKE_EXPORT ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t dt, int peer, ncclComm_t c,
                                  cudaStream_t s) {
  if (c == nullptr || peer < 0 || peer >= c->nranks) return ncclInvalidArgument;
  size_t n = count * typeSize(dt);
  Task t;
  t.comm = c;
  t.op = describe(c, "Recv", true, count, dt, -1, peer, s, n, nullptr, recv);
  std::string path = p2pPath(c, peer, c->rank, c->received[static_cast<size_t>(peer)]++);
  t.work = [path, recv, n] {
    std::string data;
    if (!readFile(path, &data) || data.size() != n) return false;
    std::memcpy(recv, data.data(), n);
    return true;
  };
  return enqueue(std::move(t));
}
