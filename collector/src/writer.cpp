// The background writer: drains every thread's ring, pairs each transfer's
// post with its completion, and writes rows to the rank file in batches.
//
// It is the only thread that touches the file. All signals are blocked in it
// (a full disk must give EFBIG/ENOSPC errors here, not SIGXFSZ in the app).
// Any I/O failure disables tracing with one warning; the job never notices.
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu_usage.h"
#include "internal.h"
#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"
#include "ringside/storage/privacy.h"
#include "ringside/storage/rank_writer.h"

#ifndef RINGSIDE_VERSION
#define RINGSIDE_VERSION "0.1.0"
#endif

namespace ringside::collector::detail {
namespace {

using storage::kNone;

bool makeDirs(const std::string& path, std::string* err) {
  std::string cur;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string::npos) next = path.size();
    cur = path.substr(0, next);
    pos = next + 1;
    if (cur.empty()) continue;
    // Private (0700) unless RINGSIDE_SHARE: a folder we make holds rank files.
    if (::mkdir(cur.c_str(), storage::outputDirMode()) != 0 && errno != EEXIST) {
      *err = cur + ": " + std::strerror(errno);
      return false;
    }
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *err = path + ": not a directory";
    return false;
  }
  return true;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out.push_back((isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_') ? c : '_');
  return out.empty() ? "host" : out;
}

struct TransferKey {
  uint64_t buffer;
  int32_t peer;
  uint8_t side;
  bool operator==(const TransferKey& o) const {
    return buffer == o.buffer && peer == o.peer && side == o.side;
  }
};

struct TransferKeyHash {
  size_t operator()(const TransferKey& k) const {
    return std::hash<uint64_t>()(k.buffer * 31 + static_cast<uint64_t>(k.peer) * 7 + k.side);
  }
};

constexpr int64_t kAnchorEveryNs = 1000000000;  // a wall-clock anchor about once a second
constexpr int64_t kTriggerPollNs = 100 * 1000 * 1000;  // the trigger file's stat, at most every
// After the window closed, completions still pass this long once the last kept post was paired
// (calls that started inside the window finish there).
constexpr int64_t kDonesGraceNs = 1000 * 1000 * 1000;
// A per-link total is written once its link has been quiet this long (event time).
constexpr int64_t kLinkQuietNs = 500 * 1000 * 1000;
// Per-link total rows (detail links, and auto past its budget): chunk holds this marker and slot
// the number of messages the row adds up (docs/schema.md).
constexpr int32_t kLinkTotalChunk = -2;

struct LinkKey {
  int64_t collective_id;
  int32_t src, dst;
  bool send;
  bool operator==(const LinkKey& o) const {
    return collective_id == o.collective_id && src == o.src && dst == o.dst && send == o.send;
  }
};

struct LinkKeyHash {
  size_t operator()(const LinkKey& k) const {
    return std::hash<int64_t>()(k.collective_id * 1000003 + k.src * 8191 + k.dst * 2 + k.send);
  }
};

struct LinkTotal {
  int64_t bytes = 0, messages = 0;
  int64_t start_ns = INT64_MAX, end_ns = kNone, last_ns = 0;
  uint8_t phase = 0;      // Phase, or 0xff when the messages differ
  int32_t channel = -1;   // or -2 when they differ
};

class Writer {
 public:
  void run();

 private:
  bool open();
  void drain(bool final_pass);
  void consume(const Event& e, int32_t tid);
  void matchStaged(int64_t before_ns);
  void post(const Event& e);
  void done(const Event& e);
  void writeTransfer(const Event& post, int32_t peer, int64_t end_ns);
  void addLinkTotal(const storage::TransferRow& row, uint8_t phase);
  void flushLinkTotals(int64_t before_ns);
  void pollWindow();
  void closeDones();
  bool writeWindowMeta();
  void writeCollectiveGpu(const Event& e);
  void drainGpu();
  void sampleCpu(bool force);
  bool ensureBatch();
  void commit(bool final_flush, int signal);
  void fail(const char* what);
  int32_t commRank(int16_t comm) const;

  Global& g_ = global();
  std::unique_ptr<storage::RankWriter> out_;
  std::string path_;
  bool in_batch_ = false;
  bool failed_ = false;
  uint64_t identity_gen_ = 0;
  Identity identity_;
  int64_t last_commit_ns_ = 0;
  int64_t last_cpu_sample_ns_ = 0;
  int64_t last_anchor_ns_ = 0;  // 0: none taken yet
  uint64_t unmatched_done_ = 0;
  std::string boot_id_;          // which kernel clock this is (clock domains, align/)
  int64_t timens_offset_ns_ = 0;
  std::unordered_map<TransferKey, std::deque<Event>, TransferKeyHash> posts_;
  std::unordered_map<TransferKey, std::deque<Event>, TransferKeyHash> dones_;
  std::vector<Ring*> rings_;
  // Transfer events wait here, sorted by time, until no earlier one can still
  // arrive from another ring (see matchStaged).
  std::vector<Event> staged_;
  // Detail level: message rows written so far, per-link totals waiting for their link to go
  // quiet, and what they added up.
  uint64_t message_rows_ = 0;
  uint64_t link_total_rows_ = 0;
  uint64_t messages_in_totals_ = 0;
  int64_t first_total_ns_ = kNone;  // auto: when per-link totals took over
  std::unordered_map<LinkKey, LinkTotal, LinkKeyHash> links_;
  // Recording window: the trigger file as last seen, when the last kept post was paired.
  int64_t trigger_checked_ns_ = 0;
  bool trigger_exists_ = false;
  int64_t trigger_mtime_ns_ = 0;
  int64_t last_kept_post_ns_ = 0;
};

int64_t emitTime(const Event& e) { return e.kind == EventKind::kTransferDone ? e.t1 : e.t0; }

// Events of one thread arrive in order, but rings are drained one after the
// other, so an event stamped earlier on thread A can reach us after a later
// one from thread B. Pairing posts with completions needs them in time order:
// only events older than the drain's start minus this lag are paired; a thread
// descheduled between taking its timestamp and publishing is the rare loser.
constexpr int64_t kReorderLagNs = 20 * 1000 * 1000;

void Writer::matchStaged(int64_t before_ns) {
  std::stable_sort(staged_.begin(), staged_.end(),
                   [](const Event& a, const Event& b) { return emitTime(a) < emitTime(b); });
  size_t n = 0;
  while (n < staged_.size() && emitTime(staged_[n]) < before_ns) {
    if (staged_[n].kind == EventKind::kTransferPost)
      post(staged_[n]);
    else
      done(staged_[n]);
    ++n;
  }
  staged_.erase(staged_.begin(), staged_.begin() + static_cast<std::ptrdiff_t>(n));
}

void Writer::fail(const char* what) {
  if (failed_) return;
  failed_ = true;
  logWarning("tracing disabled: %s %s: %s (the job continues; %s keeps what was committed)", what,
             path_.c_str(), out_ ? out_->error().c_str() : "", path_.c_str());
  g_.state.store(static_cast<int>(State::kDisabled), std::memory_order_release);
}

// CLOCK_REALTIME read between two readings of CLOCK_MONOTONIC; the tightest of a few tries (a
// preemption between the readings widens one).
storage::ClockAnchorRow takeAnchor() {
  storage::ClockAnchorRow best;
  best.spread_ns = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    timespec a{}, w{}, b{};
    clock_gettime(CLOCK_MONOTONIC, &a);
    clock_gettime(CLOCK_REALTIME, &w);
    clock_gettime(CLOCK_MONOTONIC, &b);
    const int64_t t0 = static_cast<int64_t>(a.tv_sec) * 1000000000 + a.tv_nsec;
    const int64_t t1 = static_cast<int64_t>(b.tv_sec) * 1000000000 + b.tv_nsec;
    const int64_t spread = (t1 - t0) / 2;
    if (spread < best.spread_ns) {
      best.clock_ns = t0 + spread;
      best.unix_ns = static_cast<int64_t>(w.tv_sec) * 1000000000 + w.tv_nsec;
      best.spread_ns = spread;
    }
  }
  return best;
}

// The kernel's boot id ("" if unreadable): ranks with the same one and the same time namespace
// offset read one CLOCK_MONOTONIC.
std::string readBootId() {
  char buf[64] = {};
  FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "re");
  if (f == nullptr) return {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string id(buf, n);
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

// CLOCK_MONOTONIC's offset in this process's time namespace (0 outside one, or if unreadable):
// the line "monotonic <seconds> <nanoseconds>" of /proc/self/timens_offsets (Linux 5.6+).
int64_t readTimensOffsetNs() {
  FILE* f = std::fopen("/proc/self/timens_offsets", "re");
  if (f == nullptr) return 0;
  char line[128];
  int64_t out = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    char name[32] = {};
    long long sec = 0, nsec = 0;
    if (std::sscanf(line, "%31s %lld %lld", name, &sec, &nsec) == 3 &&
        std::strcmp(name, "monotonic") == 0) {
      out = static_cast<int64_t>(sec) * 1000000000 + nsec;
    }
  }
  std::fclose(f);
  return out;
}

bool Writer::open() {
  boot_id_ = readBootId();
  timens_offset_ns_ = readTimensOffsetNs();
  std::string err;
  if (!makeDirs(g_.config.dir, &err)) {
    logWarning("tracing disabled: cannot create the rank file folder %s (the job continues)", err.c_str());
    return false;
  }
  path_ = g_.config.dir + "/rank-" + sanitize(g_.identity.host) + "-" + std::to_string(g_.identity.pid) +
          "-" + std::to_string(g_.start_unix_ns) + ".sqlite";
  out_ = storage::RankWriter::create(path_, &err);
  if (!out_) {
    logWarning("tracing disabled: cannot create %s: %s (the job continues)", path_.c_str(), err.c_str());
    return false;
  }
  bool ok = out_->setMeta("tool_version", RINGSIDE_VERSION) &&
            out_->setMeta("clock", "CLOCK_MONOTONIC") &&
            out_->setMeta("start_unix_ns", std::to_string(g_.start_unix_ns)) &&
            out_->setMeta("command_line", g_.identity.command_line) &&
            out_->setMeta("run_id", g_.config.run_id) &&
            out_->setMeta("buffer_bytes", std::to_string(g_.config.buffer_bytes));
  const CpuCores cores = readCpuCores();
  ok = ok && out_->setMeta("cpu_cores_allowed", std::to_string(cores.allowed)) &&
       out_->setMeta("cpu_cores_online", std::to_string(cores.online));
  if (!ok) {
    logWarning("tracing disabled: cannot write %s: %s (the job continues)", path_.c_str(), out_->error().c_str());
    return false;
  }
  const std::string& trigger = g_.config.window.trigger_file;
  struct stat st;
  if (!trigger.empty() && ::stat(trigger.c_str(), &st) == 0) {
    // A file there before the job is no trigger; touching it (a new mtime) is.
    trigger_exists_ = true;
    trigger_mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  logVerbose("writing %s", path_.c_str());
  return true;
}

// The process's CPU use, every kCpuSampleIntervalNs and at the end (cpu_usage.h): on this
// thread, so the hot path pays nothing. Left out while the recording window is closed, like calls.
void Writer::sampleCpu(bool force) {
  const int64_t now = nowNs();
  if (!force && now - last_cpu_sample_ns_ < kCpuSampleIntervalNs) return;
  last_cpu_sample_ns_ = now;
  if (!g_.window_open.load(std::memory_order_relaxed) && !force) return;
  storage::CpuSampleRow row;
  if (!readCpuUsage(now, &row) || !ensureBatch()) return;
  if (!out_->addCpuSample(row)) fail("cannot write");
}

bool Writer::ensureBatch() {
  if (failed_) return false;
  if (!in_batch_) {
    if (!out_->begin()) {
      fail("cannot write");
      return false;
    }
    in_batch_ = true;
  }
  return true;
}

int32_t Writer::commRank(int16_t comm) const {
  if (comm >= 0 && comm < g_.comm_count.load(std::memory_order_acquire)) return g_.comms[comm].rank;
  return identity_.rank;
}

void Writer::consume(const Event& e, int32_t tid) {
  switch (e.kind) {
    case EventKind::kCollective: {
      if (!ensureBatch()) return;
      storage::CollectiveRow row;
      row.id = static_cast<int64_t>(e.id);
      row.rank = identity_.rank;
      int n = g_.comm_count.load(std::memory_order_acquire);
      row.comm = (e.comm >= 0 && e.comm < n) ? std::string_view(g_.comms[e.comm].name) : std::string_view();
      row.seq = static_cast<int64_t>(e.key);
      row.op = opName(static_cast<Op>(e.op));
      row.library = libraryName(static_cast<Library>(e.library));
      row.bytes = static_cast<int64_t>(e.bytes);
      row.count = static_cast<int64_t>(e.aux);
      row.dtype = dtypeName(static_cast<DType>(e.dtype));
      row.reduce_op = reduceOpName(static_cast<ReduceOp>(e.reduce_op));
      row.algorithm = algorithmName(static_cast<Algorithm>(e.algorithm));
      row.start_ns = e.t0;
      row.end_ns = e.t1;
      row.root = e.peer;
      row.tid = tid;
      row.status = e.status;
      if (!out_->addCollective(row)) fail("cannot write");
      return;
    }
    case EventKind::kTransferPost:
    case EventKind::kTransferDone:
      staged_.push_back(e);
      return;
    case EventKind::kTransfer:
      writeTransfer(e, e.peer, e.t1);
      return;
    case EventKind::kCollectiveGpu:
      writeCollectiveGpu(e);
      return;
    case EventKind::kStepMarker: {
      if (!ensureBatch()) return;
      storage::StepMarkerRow row;
      row.step = static_cast<int64_t>(e.key);
      row.start_ns = e.t0;
      if (!out_->addStepMarker(row)) fail("cannot write");
      return;
    }
  }
}

void Writer::writeCollectiveGpu(const Event& e) {
  if (!ensureBatch()) return;
  storage::CollectiveGpuRow row;
  row.collective_id = static_cast<int64_t>(e.id);
  row.gpu_start_ns = e.t0 != 0 ? e.t0 : kNone;
  row.gpu_end_ns = e.t1 != 0 ? e.t1 : kNone;
  row.algorithm = algorithmName(static_cast<Algorithm>(e.algorithm));
  row.protocol = protocolName(static_cast<Protocol>(e.protocol));
  row.channels = e.peer >= 0 ? e.peer : -1;
  row.group_id = e.aux != 0 ? static_cast<int64_t>(e.aux - 1) : kNone;
  row.stream = e.key != 0 ? static_cast<int64_t>(e.key & INT64_MAX) : kNone;
  row.device = e.comm;
  if (!out_->addCollectiveGpu(row)) fail("cannot write");
}

// GPU activity records and communicator notes: taken whole under their locks,
// written outside them.
void Writer::drainGpu() {
  std::vector<PendingActivity> batch;
  {
    std::lock_guard<std::mutex> lock(g_.gpu_mutex);
    batch.swap(g_.gpu_pending);
    g_.gpu_pending_bytes = 0;
  }
  for (const PendingActivity& a : batch) {
    if (failed_ || !ensureBatch()) return;
    storage::GpuActivityRow row;
    row.kind = gpuActivityKindName(static_cast<GpuActivityKind>(a.kind));
    row.name = a.name;
    row.start_ns = a.start_ns;
    row.end_ns = a.end_ns >= 0 ? a.end_ns : kNone;
    row.device = a.device;
    row.stream = a.stream >= 0 ? a.stream : kNone;
    row.bytes = a.bytes >= 0 ? a.bytes : kNone;
    row.copy_kind = copyKindName(static_cast<CopyKind>(a.copy_kind));
    row.correlation_id = a.correlation_id >= 0 ? a.correlation_id : kNone;
    row.collective_id = a.collective_id != 0 ? static_cast<int64_t>(a.collective_id) : kNone;
    if (!out_->addGpuActivity(row)) fail("cannot write");
  }
  if (!g_.comm_notes_dirty.exchange(false, std::memory_order_acq_rel)) return;
  struct Copy {
    std::string comm, library, parent, end_state, topology;
    int32_t rank, size;
    int64_t created, ended;
  };
  std::vector<Copy> notes;
  {
    std::lock_guard<std::mutex> lock(g_.mutex);
    const int n = g_.comm_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      CommNote& note = g_.comm_notes[i];
      if (!note.dirty) continue;
      note.dirty = false;
      const Comm& c = g_.comms[i];
      Copy copy;
      copy.comm = c.name;
      const char* slash = std::strchr(c.name, '/');
      copy.library = slash != nullptr ? std::string(c.name, static_cast<size_t>(slash - c.name)) : "";
      copy.parent = note.parent >= 0 && note.parent < n ? g_.comms[note.parent].name : "";
      copy.end_state = note.end_state;
      copy.topology = note.topology;
      copy.rank = c.rank;
      copy.size = c.size;
      copy.created = note.created_ns;
      copy.ended = note.ended_ns;
      notes.push_back(std::move(copy));
    }
  }
  for (const Copy& c : notes) {
    if (failed_ || !ensureBatch()) return;
    storage::CommunicatorRow row;
    row.comm = c.comm;
    row.library = c.library;
    row.comm_rank = c.rank;
    row.comm_size = c.size;
    row.parent = c.parent;
    row.created_ns = c.created >= 0 ? c.created : kNone;
    row.ended_ns = c.ended >= 0 ? c.ended : kNone;
    row.end_state = c.end_state;
    row.topology = c.topology;
    if (!out_->addCommunicator(row)) fail("cannot write");
  }
}

// A completion may be drained before its post (they come from different
// threads' rings), so both sides wait for each other in FIFO order per
// (buffer, peer, side): a library completes one peer's messages on one buffer
// in the order they were posted.
//
// A completion that ended before this post began cannot be its completion: its own post was
// left out (a bounded recording drops posts outside the window but lets completions pass until
// the kept posts are paired) or lost. Pairing it would give the message an end before its start
// (seen with --steps and --trigger-file: most message rows did), so it is dropped here.
void Writer::post(const Event& e) {
  TransferKey key{e.key, e.peer, e.side};
  auto it = dones_.find(key);
  if (it != dones_.end()) {
    std::deque<Event>& waiting = it->second;
    while (!waiting.empty() && waiting.front().t1 < e.t0) {
      if (!g_.config.window.bounded()) ++unmatched_done_;
      waiting.pop_front();
    }
    if (waiting.empty()) dones_.erase(it);
  }
  it = dones_.find(key);
  if (it != dones_.end() && !it->second.empty()) {
    Event d = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) dones_.erase(it);
    writeTransfer(e, d.peer, d.t1);
    return;
  }
  posts_[key].push_back(e);
}

void Writer::done(const Event& e) {
  for (int32_t peer : {e.peer, -1}) {  // -1: a receive posted for "any of these ranks"
    auto it = posts_.find(TransferKey{e.key, peer, e.side});
    if (it == posts_.end() || it->second.empty()) continue;
    if (it->second.front().t0 > e.t1) continue;  // not its post (see post())
    Event p = it->second.front();
    it->second.pop_front();
    if (it->second.empty()) posts_.erase(it);
    writeTransfer(p, e.peer, e.t1);
    return;
  }
  dones_[TransferKey{e.key, e.peer, e.side}].push_back(e);
}

void Writer::writeTransfer(const Event& p, int32_t peer, int64_t end_ns) {
  if (!ensureBatch()) return;
  storage::TransferRow row;
  int32_t me = commRank(p.comm);
  bool send = static_cast<Side>(p.side) == Side::kSend;
  row.collective_id = p.id != 0 ? static_cast<int64_t>(p.id) : kNone;
  row.src_rank = send ? me : peer;
  row.dst_rank = send ? peer : me;
  row.bytes = static_cast<int64_t>(p.bytes);
  row.start_ns = p.t0;
  row.end_ns = end_ns;
  row.side = sideName(static_cast<Side>(p.side));
  row.phase = phaseName(static_cast<Phase>(p.phase));
  row.step = p.step;
  if (p.kind == EventKind::kTransfer)
    row.chunk = static_cast<int32_t>(p.aux);
  else
    row.slot = static_cast<int64_t>(p.aux);
  row.channel = p.channel != 0 ? p.channel - 1 : -1;
  last_kept_post_ns_ = nowNs();
  const WindowConfig& w = g_.config.window;
  const bool totals = w.detail == Detail::kLinks ||
                      (w.detail == Detail::kAuto && message_rows_ >= w.message_rows);
  if (totals) {
    addLinkTotal(row, p.phase);
    return;
  }
  ++message_rows_;
  if (!out_->addTransfer(row)) fail("cannot write");
}

void Writer::addLinkTotal(const storage::TransferRow& row, uint8_t phase) {
  if (first_total_ns_ == kNone) first_total_ns_ = row.start_ns;
  LinkTotal& t = links_[LinkKey{row.collective_id, row.src_rank, row.dst_rank, row.side == "send"}];
  if (t.messages == 0) {
    t.phase = phase;
    t.channel = row.channel;
  }
  t.bytes += row.bytes;
  ++t.messages;
  t.start_ns = std::min(t.start_ns, row.start_ns);
  if (row.end_ns != kNone) t.end_ns = std::max(t.end_ns, row.end_ns);
  t.last_ns = std::max(t.last_ns, std::max(row.start_ns, row.end_ns));
  if (t.phase != phase) t.phase = 0xff;
  if (t.channel != row.channel) t.channel = -2;
}

// One row per (call, peer, side) whose link has been quiet since before_ns: bytes and message
// count; start = first post, end = last completion. A call whose link stays busy longer than
// kLinkQuietNs between two messages gets more than one row (the sums stay right).
void Writer::flushLinkTotals(int64_t before_ns) {
  for (auto it = links_.begin(); it != links_.end();) {
    const LinkTotal& t = it->second;
    if (t.last_ns >= before_ns) {
      ++it;
      continue;
    }
    if (!ensureBatch()) return;
    storage::TransferRow row;
    row.collective_id = it->first.collective_id;
    row.src_rank = it->first.src;
    row.dst_rank = it->first.dst;
    row.bytes = t.bytes;
    row.start_ns = t.start_ns;
    row.end_ns = t.end_ns;
    row.side = it->first.send ? "send" : "recv";
    row.phase = t.phase == 0xff ? "" : phaseName(static_cast<Phase>(t.phase));
    row.chunk = kLinkTotalChunk;
    row.slot = t.messages;
    row.channel = t.channel >= 0 ? t.channel : -1;
    if (!out_->addTransfer(row)) fail("cannot write");
    ++link_total_rows_;
    messages_in_totals_ += static_cast<uint64_t>(t.messages);
    it = links_.erase(it);
  }
}

// The time and trigger conditions of the window, from the writer's loop (every few ms; the
// trigger file's stat at most every kTriggerPollNs). Steps are applied by markStep itself.
void Writer::pollWindow() {
  const WindowConfig& w = g_.config.window;
  if (!w.time && w.trigger_file.empty()) return;
  const char* cause = "time";
  const int64_t now = nowNs();
  if (!w.trigger_file.empty() && now - trigger_checked_ns_ >= kTriggerPollNs) {
    trigger_checked_ns_ = now;
    struct stat st;
    const bool exists = ::stat(w.trigger_file.c_str(), &st) == 0;
    const int64_t mtime = exists ? static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                                       st.st_mtim.tv_nsec
                                 : 0;
    // A touch: the file appears, or its modification time changes.
    if (exists && (!trigger_exists_ || mtime != trigger_mtime_ns_)) {
      g_.touches.fetch_add(1, std::memory_order_relaxed);
      cause = "trigger";
    }
    trigger_exists_ = exists;
    trigger_mtime_ns_ = mtime;
  }
  updateWindow(cause);
}

// Completions carry no call id, so after the window closed they pass until the kept posts have
// been paired and none came for kDonesGraceNs; then they are left out at emit too.
void Writer::closeDones() {
  if (g_.window_open.load(std::memory_order_relaxed) ||
      !g_.dones_open.load(std::memory_order_relaxed) || !posts_.empty())
    return;
  for (const Event& e : staged_)
    if (e.kind == EventKind::kTransferPost) return;
  if (nowNs() - last_kept_post_ns_ < kDonesGraceNs) return;
  // Re-checked under the window's lock: the window may have opened again meanwhile.
  while (g_.window_lock.test_and_set(std::memory_order_acquire)) {
  }
  if (!g_.window_open.load(std::memory_order_relaxed))
    g_.dones_open.store(false, std::memory_order_relaxed);
  g_.window_lock.clear(std::memory_order_release);
}

std::string secondsAfter(int64_t t_ns, int64_t start_ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(t_ns - start_ns) / 1e9);
  return buf;
}

// What the recording kept (docs/schema.md, rank file meta): the detail level always; the
// window, its changes and the counts left out when the recording was bounded.
bool Writer::writeWindowMeta() {
  const WindowConfig& w = g_.config.window;
  std::string detail = detailName(w.detail);
  if (w.detail == Detail::kAuto) {
    detail += ": every message for the first " + std::to_string(w.message_rows) +
              " message rows, then per-link totals";
  }
  const Counters c = counters();
  bool ok = out_->setMeta("recording_detail", detail) &&
            out_->setMeta("message_rows", std::to_string(message_rows_)) &&
            out_->setMeta("link_total_rows", std::to_string(link_total_rows_)) &&
            out_->setMeta("messages_in_link_totals", std::to_string(messages_in_totals_));
  if (ok && first_total_ns_ != kNone && w.detail == Detail::kAuto)
    ok = out_->setMeta("link_totals_from", secondsAfter(first_total_ns_, g_.start_ns));
  if (ok && (w.bounded() || c.left_out_calls + c.left_out_messages > 0)) {
    ok = out_->setMeta("left_out_calls", std::to_string(c.left_out_calls)) &&
         out_->setMeta("left_out_messages", std::to_string(c.left_out_messages));
  }
  if (!ok || !w.bounded()) return ok;
  std::string changes;
  while (g_.window_lock.test_and_set(std::memory_order_acquire)) {
  }
  const int n = std::min(g_.window_change_count, kMaxWindowChanges);
  for (int i = 0; i < n; ++i) {
    const WindowChange& ch = g_.window_changes[i];
    if (!changes.empty()) changes += "; ";
    changes += std::string(ch.open ? "open" : "close") + " at " +
               secondsAfter(ch.t_ns, g_.start_ns) + " (" + ch.cause +
               (ch.step >= 0 ? " " + std::to_string(ch.step) : "") + ")";
  }
  if (g_.window_change_count > n)
    changes += "; and " + std::to_string(g_.window_change_count - n) + " more";
  g_.window_lock.clear(std::memory_order_release);
  std::string window = describeWindow(w);
  if (w.steps && g_.markers.load(std::memory_order_relaxed) == 0)
    window += "; no step markers (ringside_step): every call kept";
  return out_->setMeta("recording_window", window) &&
         out_->setMeta("recording_window_changes", changes);
}

void Writer::drain(bool final_pass) {
  const int64_t pass_start = nowNs();
  {
    std::lock_guard<std::mutex> lock(g_.mutex);
    rings_.clear();
    for (Ring* r = g_.rings; r != nullptr; r = r->next) rings_.push_back(r);
    if (g_.identity_gen.load() != identity_gen_) {
      identity_gen_ = g_.identity_gen.load();
      identity_ = g_.identity;
      if (out_ && !failed_) {
        storage::RankInfo info;
        info.rank = identity_.rank;
        info.world_size = identity_.world_size;
        info.local_rank = identity_.local_rank;
        info.host = identity_.host;
        info.pid = identity_.pid;
        info.launcher = identity_.launcher;
        info.start_ns = g_.start_ns;
        info.start_unix_ns = g_.start_unix_ns;
        info.command_line = identity_.command_line;
        info.identity_source = identity_.source;
        info.boot_id = boot_id_;
        info.timens_offset_ns = timens_offset_ns_;
        if (ensureBatch() && !out_->setRank(info)) fail("cannot write");
      }
    }
    if (!g_.meta.empty() && out_ && !failed_ && ensureBatch()) {
      for (auto& kv : g_.meta)
        if (!out_->setMeta(kv.first, kv.second)) fail("cannot write");
      g_.meta.clear();
    }
  }
  std::vector<Ring*> drained;
  for (Ring* r : rings_) {
    bool retired = r->retired.load(std::memory_order_acquire);
    uint64_t t = r->tail.load(std::memory_order_relaxed);
    uint64_t h = r->head.load(std::memory_order_acquire);
    int32_t tid = r->tid.load(std::memory_order_relaxed);
    for (uint64_t i = t; i < h; ++i) {
      if (!failed_) consume(r->events[i & r->mask], tid);
    }
    r->tail.store(h, std::memory_order_release);
    g_.recorded.fetch_add(failed_ ? 0 : h - t, std::memory_order_relaxed);
    if (failed_) r->dropped.fetch_add(h - t, std::memory_order_relaxed);
    if (retired) drained.push_back(r);
  }
  if (!failed_) matchStaged(final_pass ? INT64_MAX : pass_start - kReorderLagNs);
  if (!failed_ && !links_.empty())
    flushLinkTotals(final_pass ? INT64_MAX : pass_start - kReorderLagNs - kLinkQuietNs);
  if (!failed_) closeDones();
  if (!failed_ && out_) drainGpu();
  if (!drained.empty()) {
    // Rings of exited threads go back to the pool for new threads.
    std::lock_guard<std::mutex> lock(g_.mutex);
    for (Ring* r : drained) {
      for (Ring** p = &g_.rings; *p != nullptr; p = &(*p)->next) {
        if (*p == r) {
          *p = r->next;
          break;
        }
      }
      r->next = g_.free_rings;
      g_.free_rings = r;
    }
  }
}

void Writer::commit(bool final_flush, int signal) {
  if (failed_ || !out_) return;
  if (final_flush) {
    // Posts that never completed are kept, with no end time.
    for (auto& kv : posts_)
      for (const Event& p : kv.second) writeTransfer(p, p.peer, kNone);
    posts_.clear();
    flushLinkTotals(INT64_MAX);
    // In a bounded recording, completions of messages posted before the window opened have
    // no post: expected at its edges, so not counted as unmatched.
    if (!g_.config.window.bounded())
      for (auto& kv : dones_) unmatched_done_ += kv.second.size();
    dones_.clear();
  }
  if (!ensureBatch()) return;
  // Wall-clock anchors (align/ places hosts' clocks on one time line with them): at the first
  // commit, about once a second (NTP's slewing and steps show) and at the end.
  const int64_t now = nowNs();
  if (last_anchor_ns_ == 0 || final_flush || now - last_anchor_ns_ >= kAnchorEveryNs) {
    last_anchor_ns_ = now;
    if (!out_->addClockAnchor(takeAnchor())) {
      fail("cannot write");
      return;
    }
  }
  Counters c = counters();
  bool ok = out_->setMeta("events_emitted", std::to_string(c.emitted)) &&
            out_->setMeta("events_recorded", std::to_string(c.recorded)) &&
            out_->setMeta("events_dropped", std::to_string(c.dropped)) &&
            out_->setMeta("transfers_unmatched", std::to_string(unmatched_done_));
  if (ok && c.forked_child_calls > 0) {  // only then: a run without such children is unchanged
    ok = out_->setMeta("forked_child_calls", std::to_string(c.forked_child_calls)) &&
         out_->setMeta("forked_children", std::to_string(c.forked_children));
  }
  const GpuCounters gc = gpuCounters();
  if (ok && gc.activities_queued + gc.activities_dropped > 0) {
    ok = out_->setMeta("gpu_activity_recorded", std::to_string(gc.activities_queued)) &&
         out_->setMeta("gpu_activity_dropped", std::to_string(gc.activities_dropped));
  }
  if (ok) ok = writeWindowMeta();
  if (ok && final_flush) {
    ok = out_->setMeta("end_state", "clean") &&
         (signal == 0 || out_->setMeta("end_signal", std::to_string(signal)));
  }
  if (!ok || !out_->commit()) {
    fail("cannot write");
    return;
  }
  in_batch_ = false;
  last_commit_ns_ = nowNs();
}

void Writer::run() {
  if (!open()) {
    g_.state.store(static_cast<int>(State::kDisabled), std::memory_order_release);
    g_.writer_done.store(1, std::memory_order_release);
    g_.writer_running.store(false, std::memory_order_release);
    return;
  }
  const int64_t flush_ns = static_cast<int64_t>(g_.config.flush_ms) * 1000000;
  last_commit_ns_ = nowNs();
  for (;;) {
    int req = g_.flush_request.load(std::memory_order_acquire);
    pollWindow();
    drain(false);
    sampleCpu(req != 0);
    if (req != 0) {
      drain(true);  // anything emitted while the request was being noticed
      commit(true, req > 1 ? req - 1 : 0);
      if (out_ && !out_->close() && !failed_) fail("cannot close");
      break;
    }
    if (nowNs() - last_commit_ns_ >= flush_ns) commit(false, 0);
    if (failed_) break;
    timespec ts{0, 5 * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
  g_.writer_done.store(1, std::memory_order_release);
  g_.writer_running.store(false, std::memory_order_release);
}

void* writerMain(void*) {
  // On the heap, owned by this thread: a writer abandoned at exit is still
  // running when the process ends and must not be destroyed under it.
  auto* w = new Writer();
  w->run();
  delete w;
  return nullptr;
}

}  // namespace

bool startWriter() {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);  // the new thread inherits this mask
  pthread_t th;
  global().writer_running.store(true, std::memory_order_release);
  int rc = pthread_create(&th, nullptr, writerMain, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) {
    global().writer_running.store(false);
    return false;
  }
  pthread_setname_np(th, "ringside-writer");
  pthread_detach(th);
  return true;
}

}  // namespace ringside::collector::detail
