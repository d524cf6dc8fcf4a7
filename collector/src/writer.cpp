// The background writer (writer.h): its loop, the rank file's life, calls and transfers.
//
// It is the only thread that touches the file. All signals are blocked in it
// (a full disk must give EFBIG/ENOSPC errors here, not SIGXFSZ in the app).
// Any I/O failure disables tracing with one warning; the job never notices.
#include "writer.h"

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
#include <memory>
#include <string>
#include <vector>

#include "clock_probe.h"
#include "cpu_usage.h"
#include "ringside/collector/gpu.h"
#include "ringside/storage/privacy.h"

#ifndef RINGSIDE_VERSION
#define RINGSIDE_VERSION "0.1.0"
#endif

namespace ringside::collector::detail {
namespace {

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

}  // namespace

void Writer::fail(const char* what) {
  if (failed_) return;
  failed_ = true;
  logWarning("tracing disabled: %s %s: %s (the job continues; %s keeps what was committed)", what,
             path_.c_str(), out_ ? out_->error().c_str() : "", path_.c_str());
  g_.state.store(static_cast<int>(State::kDisabled), std::memory_order_release);
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
  if (readCpuUsage(now, &row)) writeCpuSample(row);
}

void Writer::writeCpuSample(const storage::CpuSampleRow& row) {
  if (!ensureBatch()) return;
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
      pairing_.stage(e);
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
    link_totals_.add(row, p.phase);
    return;
  }
  ++message_rows_;
  if (!out_->addTransfer(row)) fail("cannot write");
}

void Writer::flushLinkTotals(int64_t before_ns) {
  link_totals_.flush(before_ns, [this](const storage::TransferRow& row) {
    if (!ensureBatch()) return false;
    if (!out_->addTransfer(row)) fail("cannot write");
    return true;
  });
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
  if (!failed_) pairing_.match(final_pass ? INT64_MAX : pass_start - TransferPairing::kReorderLagNs);
  if (!failed_ && !link_totals_.empty())
    flushLinkTotals(final_pass ? INT64_MAX
                               : pass_start - TransferPairing::kReorderLagNs -
                                     LinkTotals::kLinkQuietNs);
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
    const uint64_t unpaired_dones = pairing_.finish();
    flushLinkTotals(INT64_MAX);
    // In a bounded recording, completions of messages posted before the window opened have
    // no post: expected at its edges, so not counted as unmatched.
    if (!g_.config.window.bounded()) unmatched_done_ += unpaired_dones;
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
  // The counters at activation first: the analyzer gives a step CPU figures only between two
  // samples, and this thread's own come after open(), which a busy host delays (seen: 220 ms on
  // 2 cores under a load of 6, past a whole 6-step job: two of its three ranks had no CPU
  // figures, and e2e.corpus-oversub no oversubscribed finding).
  if (g_.start_cpu_ok && g_.window_open.load(std::memory_order_relaxed)) writeCpuSample(g_.start_cpu);
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

namespace {

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
