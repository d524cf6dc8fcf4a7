// collector/src/writer_window.cpp — the writer's side of the recording window (window.h): the
// time and trigger conditions, when completions stop passing, and the meta that says what the
// recording kept.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "writer.h"

namespace ringside::collector::detail {
namespace {

std::string secondsAfter(int64_t t_ns, int64_t start_ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(t_ns - start_ns) / 1e9);
  return buf;
}

}  // namespace

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
      !g_.dones_open.load(std::memory_order_relaxed) || pairing_.postsWaiting())
    return;
  if (nowNs() - last_kept_post_ns_ < kDonesGraceNs) return;
  // Re-checked under the window's lock: the window may have opened again meanwhile.
  while (g_.window_lock.test_and_set(std::memory_order_acquire)) {
  }
  if (!g_.window_open.load(std::memory_order_relaxed))
    g_.dones_open.store(false, std::memory_order_relaxed);
  g_.window_lock.clear(std::memory_order_release);
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
            out_->setMeta("link_total_rows", std::to_string(link_totals_.rowsWritten())) &&
            out_->setMeta("messages_in_link_totals", std::to_string(link_totals_.messagesWritten()));
  if (ok && link_totals_.firstNs() != kNone && w.detail == Detail::kAuto)
    ok = out_->setMeta("link_totals_from", secondsAfter(link_totals_.firstNs(), g_.start_ns));
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

}  // namespace ringside::collector::detail
