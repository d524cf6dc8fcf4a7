// storage/src/flight_ring.cpp — the flight recorder's ring file (flight_ring.h).
#include "ringside/storage/flight_ring.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

namespace ringside::storage::flight {
namespace {

constexpr const char* kReasonNames[] = {"watchdog", "timeout", "error",    "signal", "exit-open",
                                        "sigusr2",  "request", "periodic", "end"};
constexpr const char* kStateNames[] = {"queued", "entered", "transferring", "done", "failed"};

std::string errnoLine(const std::string& path, const char* what) {
  return path + ": " + what + ": " + std::strerror(errno);
}

// A bounded, NUL-terminated name from a fixed field of a file another process wrote.
std::string fixedText(const char* field, size_t size) {
  return std::string(field, strnlen(field, size));
}

std::string nameAt(const char (*table)[16], int rows, uint8_t i) {
  return i < rows ? fixedText(table[i], 16) : std::string();
}

void copyCall(const Layout* l, int c, const CallSlot& s, FlightCallRow* r) {
  r->comm = fixedText(l->comms[c].name, sizeof l->comms[c].name);
  r->seq = s.seq;
  r->op = nameAt(l->header.op_names, 32, s.op);
  r->library = nameAt(l->header.library_names, 8, s.library);
  r->bytes = s.bytes;
  r->count = s.count;
  r->dtype = s.dtype < 16 ? fixedText(l->header.dtype_names[s.dtype], 8) : std::string();
  r->root = s.root;
  r->step = s.step;
  r->tid = s.tid;
  r->enter_ns = s.enter_ns;
  const int64_t exit_ns = s.exit_ns.load(std::memory_order_acquire);
  r->exit_ns = exit_ns != 0 ? exit_ns : kNone;
  const uint8_t st = s.state.load(std::memory_order_acquire);
  r->state = st < 5 ? kStateNames[st] : "entered";
}

// Reads slot `s` of communicator `c` when its generation stays the same across the copy.
bool readCall(const Layout* l, int c, const CallSlot& s, FlightCallRow* r) {
  const uint64_t before = s.gen.load(std::memory_order_acquire);
  if (before == 0 || before == kWriting) return false;
  copyCall(l, c, s, r);
  fence(std::memory_order_acquire);
  return s.gen.load(std::memory_order_relaxed) == before;
}

bool readMessage(const Layout* l, const MessageSlot& s, FlightMessageRow* r) {
  const uint64_t before = s.gen.load(std::memory_order_acquire);
  if (before == 0 || before == kWriting) return false;
  if (s.comm >= 0 && s.comm < kComms) {
    r->comm = fixedText(l->comms[s.comm].name, sizeof l->comms[s.comm].name);
  }
  r->seq = s.seq;
  r->peer = s.peer;
  r->direction = s.direction == 1 ? "send" : "recv";
  r->bytes = s.bytes;
  r->posted_ns = s.posted_ns;
  const int64_t done = s.done_ns.load(std::memory_order_acquire);
  r->done_ns = done != 0 ? done : kNone;
  fence(std::memory_order_acquire);
  return s.gen.load(std::memory_order_relaxed) == before;
}

void readDumps(const Layout* l, Snapshot* out) {
  const uint32_t n = std::min<uint32_t>(l->header.dump_count.load(), kDumps);
  for (uint32_t i = 0; i < n; ++i) {
    const DumpSlot& d = l->dumps[i];
    if (d.ready.load(std::memory_order_acquire) != 2) continue;
    FlightDumpRow r;
    r.dump = static_cast<int64_t>(out->dumps.size());
    r.reason = d.reason < 9 ? kReasonNames[d.reason] : "request";
    r.time_ns = d.time_ns;
    r.detail = fixedText(d.detail, sizeof d.detail);
    r.calls_dropped = static_cast<int64_t>(d.calls_dropped);
    out->dumps.push_back(std::move(r));
  }
}

bool validLayout(const Layout* l, size_t bytes) {
  return bytes >= kFileBytes && std::memcmp(l->header.magic, kMagic, sizeof kMagic) == 0 &&
         l->header.format == kFormat && l->header.file_bytes == kFileBytes;
}

uint64_t droppedCalls(const Layout* l) {
  uint64_t dropped = 0;
  for (int c = 0; c < kComms; ++c) {
    const uint64_t n = l->comms[c].calls.load(std::memory_order_relaxed);
    if (n > kCallsPerComm) dropped += n - kCallsPerComm;
  }
  return dropped;
}

}  // namespace

const char* reasonName(Reason r) {
  const auto i = static_cast<size_t>(r);
  return i < std::size(kReasonNames) ? kReasonNames[i] : "request";
}

const char* stateName(CallState s) {
  const auto i = static_cast<size_t>(s);
  return i < std::size(kStateNames) ? kStateNames[i] : "entered";
}

Writer::~Writer() {
  if (l_ != nullptr) ::munmap(l_, kFileBytes);
}

void Writer::release() {
  if (l_ != nullptr) ::munmap(l_, kFileBytes);
  l_ = nullptr;
}

bool Writer::create(const std::string& path, int64_t pid, int64_t start_unix_ns, int64_t start_ns,
                    const std::string& host, bool share, std::string* error) {
  // Sizing the file past the process's file-size limit would raise SIGXFSZ in the job (it is
  // called on the job's own threads): below the ring's size there is no ring, said once.
  struct rlimit fsize {};
  if (::getrlimit(RLIMIT_FSIZE, &fsize) == 0 && fsize.rlim_cur != RLIM_INFINITY &&
      fsize.rlim_cur < static_cast<rlim_t>(kFileBytes)) {
    *error = path + ": not created: the file-size limit (ulimit -f, " +
             std::to_string(static_cast<unsigned long long>(fsize.rlim_cur)) +
             " bytes) is below the flight ring's " + std::to_string(kFileBytes) + " bytes";
    return false;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        share ? 0666 : 0600);
  if (fd < 0) {
    *error = errnoLine(path, "cannot create");
    return false;
  }
  // The pages are allocated now, so a full disk fails here and never as SIGBUS in a write.
  const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(kFileBytes));
  if (rc != 0) {
    errno = rc;
    *error = errnoLine(path, "cannot size");
    ::close(fd);
    ::unlink(path.c_str());
    return false;
  }
  void* p = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *error = errnoLine(path, "cannot map");
    ::unlink(path.c_str());
    return false;
  }
  l_ = new (p) Layout();  // zero-filled by the file; constructs the atomics in place
  Header& h = l_->header;
  h.format = kFormat;
  h.file_bytes = static_cast<uint32_t>(kFileBytes);
  h.pid = pid;
  h.start_unix_ns = start_unix_ns;
  h.start_ns = start_ns;
  std::snprintf(h.host, sizeof h.host, "%s", host.c_str());
  h.rank.store(-1);
  h.world_size.store(-1);
  h.step.store(kNone);
  h.exit_status.store(-1);
  fence(std::memory_order_release);
  std::memcpy(h.magic, kMagic, sizeof kMagic);  // last: a reader sees a whole header or none
  return true;
}

Mapping::~Mapping() {
  if (l_ != nullptr) ::munmap(l_, kFileBytes);
}

bool Mapping::open(const std::string& path, bool writable, std::string* error) {
  const int fd = ::open(path.c_str(), (writable ? O_RDWR : O_RDONLY) | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = errnoLine(path, "cannot open");
    return false;
  }
  struct stat sb {};
  if (::fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
      static_cast<size_t>(sb.st_size) < kFileBytes) {
    ::close(fd);
    *error = path + ": not a ringside flight ring (size)";
    return false;
  }
  void* p = ::mmap(nullptr, kFileBytes, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    *error = errnoLine(path, "cannot map");
    return false;
  }
  l_ = static_cast<Layout*>(p);
  if (!validLayout(l_, static_cast<size_t>(sb.st_size))) {
    ::munmap(p, kFileBytes);
    l_ = nullptr;
    *error = path + ": not a ringside flight ring (header)";
    return false;
  }
  return true;
}

int stampDump(Layout* l, Reason reason, int64_t time_ns, const char* detail) {
  const uint32_t n = l->header.dump_count.fetch_add(1);
  const uint32_t i = n < kDumps ? n : kDumps - 1;
  DumpSlot& d = l->dumps[i];
  d.ready.store(1, std::memory_order_relaxed);
  fence(std::memory_order_release);
  d.reason = static_cast<uint8_t>(reason);
  d.time_ns = time_ns;
  d.calls_dropped = droppedCalls(l);
  size_t k = 0;
  for (; detail != nullptr && detail[k] != '\0' && k + 1 < sizeof d.detail; ++k) d.detail[k] = detail[k];
  d.detail[k] = '\0';
  d.ready.store(2, std::memory_order_release);
  if (n >= kDumps) l->header.dump_count.store(kDumps);
  return static_cast<int>(i);
}

void noteComm(Layout* l, int index, const char* name, int32_t comm_rank, int32_t comm_size) {
  if (index < 0 || index >= kComms) return;
  CommSlot& c = l->comms[index];
  if (c.ready.load(std::memory_order_acquire) != 0) return;
  std::snprintf(c.name, sizeof c.name, "%s", name);
  c.comm_rank = comm_rank;
  c.comm_size = comm_size;
  c.ready.store(1, std::memory_order_release);
  uint32_t count = l->header.comm_count.load();
  while (count < static_cast<uint32_t>(index + 1) &&
         !l->header.comm_count.compare_exchange_weak(count, static_cast<uint32_t>(index + 1))) {
  }
}

void noteEnd(Layout* l, Ended how, int32_t by, int32_t exit_status, int32_t signal, int64_t ns) {
  // The process notes first (its exit status is unknown to an atexit handler); the launcher,
  // which saw the wait status, overwrites.
  int32_t running = 0;
  if (by != 2 && !l->header.ended.compare_exchange_strong(running, -1)) return;
  l->header.ended_by.store(by);
  l->header.exit_status.store(exit_status);
  l->header.exit_signal.store(signal);
  l->header.exit_ns.store(ns);
  l->header.ended.store(static_cast<int32_t>(how), std::memory_order_release);
}

int openCalls(const Layout* l) {
  int open = 0;
  for (int c = 0; c < kComms; ++c) {
    for (const CallSlot& s : l->calls[c]) {
      const uint64_t gen = s.gen.load(std::memory_order_acquire);
      if (gen == 0 || gen == kWriting) continue;
      const uint8_t st = s.state.load(std::memory_order_relaxed);
      if (st == static_cast<uint8_t>(CallState::kEntered) ||
          st == static_cast<uint8_t>(CallState::kTransferring))
        ++open;
    }
  }
  return open;
}

void snapshot(const Layout* l, Snapshot* out) {
  const Header& h = l->header;
  out->rank = h.rank.load();
  out->world_size = h.world_size.load();
  out->pid = h.pid;
  out->start_unix_ns = h.start_unix_ns;
  out->host = fixedText(h.host, sizeof h.host);
  out->last_done_ns = h.last_done_ns.load();
  out->step = h.step.load();
  const int32_t ended = h.ended.load(std::memory_order_acquire);
  out->ended = ended == 1 ? Ended::kExited : ended == 2 ? Ended::kSignal : Ended::kRunning;
  out->ended_by = h.ended_by.load();
  out->exit_status = h.exit_status.load();
  out->exit_signal = h.exit_signal.load();
  out->exit_ns = h.exit_ns.load();
  out->calls_dropped = droppedCalls(l);
  readDumps(l, out);
  const int64_t dump = out->dumps.empty() ? 0 : out->dumps.back().dump;
  for (int c = 0; c < kComms; ++c) {
    if (l->comms[c].ready.load(std::memory_order_acquire) == 0) continue;
    for (const CallSlot& s : l->calls[c]) {
      FlightCallRow r;
      if (!readCall(l, c, s, &r)) continue;
      r.rank = out->rank;
      r.dump = dump;
      out->calls.push_back(std::move(r));
    }
  }
  std::sort(out->calls.begin(), out->calls.end(), [](const FlightCallRow& a, const FlightCallRow& b) {
    return a.comm != b.comm ? a.comm < b.comm : a.seq < b.seq;
  });
  for (const MessageSlot& s : l->messages) {
    FlightMessageRow r;
    if (!readMessage(l, s, &r)) continue;
    r.rank = out->rank;
    r.dump = dump;
    out->messages.push_back(std::move(r));
  }
  std::sort(out->messages.begin(), out->messages.end(),
            [](const FlightMessageRow& a, const FlightMessageRow& b) { return a.posted_ns < b.posted_ns; });
}

bool readRing(const std::string& path, Snapshot* out, std::string* error) {
  Mapping m;
  if (!m.open(path, false, error)) return false;
  try {
    snapshot(m.layout(), out);
  } catch (const std::bad_alloc&) {
    *error = path + ": out of memory reading the ring";
    return false;
  }
  return true;
}

bool exitRow(const Snapshot& s, RankExitRow* out) {
  if (s.ended == Ended::kRunning) return false;
  out->rank = s.rank;
  out->pid = s.pid;
  out->exit_status = s.ended == Ended::kExited ? s.exit_status : -1;
  out->signal = s.ended == Ended::kSignal ? s.exit_signal : 0;
  out->time_ns = s.exit_ns != 0 ? s.exit_ns : kNone;
  int64_t open = 0;
  for (const FlightCallRow& c : s.calls) open += c.exit_ns == kNone && c.state != "failed";
  out->open_calls = open;
  out->source = s.ended_by == 2 ? "launcher" : "process";
  return true;
}

std::string ringPath(const std::string& folder, int64_t pid, int64_t start_unix_ns) {
  return folder + "/flight-" + std::to_string(pid) + "-" + std::to_string(start_unix_ns) + kSuffix;
}

std::vector<std::string> listRings(const std::string& folder) {
  std::vector<std::string> out;
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return out;
  const std::string_view suffix = kSuffix;
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view name = e->d_name;
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix)
      out.push_back(folder + "/" + std::string(name));
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ringside::storage::flight
