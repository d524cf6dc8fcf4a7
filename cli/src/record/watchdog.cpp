// cli/src/record/watchdog.cpp — record's hang watchdog (watchdog.h).
#include "record/watchdog.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <iostream>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "ringside/analyzer/hang.h"
#include "ringside/analyzer/hang_flight.h"
#include "ringside/storage/flight_ring.h"

namespace ringside::cli {
namespace {

namespace ring = storage::flight;
namespace hang = analyzer::hang;

int64_t monotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

int64_t unixNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

struct Watchdog::State {
  std::mutex mutex;
  std::string verdict;
  std::set<std::pair<std::string, int64_t>> reported;  // stuck points already reported
};

Watchdog::Watchdog(WatchdogOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

Watchdog::~Watchdog() { stop(); }

void Watchdog::start() {
  if (options_.hang_timeout_s <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Watchdog::stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

std::string Watchdog::verdict() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->verdict;
}

void Watchdog::loop() {
  // Checked four times a second (at most 25 ms of CPU for 64 rings): the verdict comes within
  // 250 ms of the timeout.
  while (!stop_.load()) {
    try {
      check();
    } catch (const std::exception&) {
      // A ring that vanished or an allocation that failed: the next round tries again.
    }
    for (int i = 0; i < 5 && !stop_.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

namespace {

// One rank's state for the verdict: its ring's calls and messages, and whether it lives.
hang::Rank toRank(ring::Snapshot&& s) {
  hang::Rank r;
  r.rank = s.rank;
  if (s.ended == ring::Ended::kExited) {
    hang::applyExit(s.exit_status, 0, &r);
  } else if (s.ended == ring::Ended::kSignal) {
    hang::applyExit(-1, s.exit_signal, &r);
  } else if (::kill(static_cast<pid_t>(s.pid), 0) != 0 && errno == ESRCH) {
    r.liveness = hang::Liveness::kCutOff;  // gone without a word: SIGKILL, OOM
  }
  r.last_seen_ns = s.last_done_ns;
  for (const storage::FlightCallRow& c : s.calls) r.calls.push_back(hang::fromFlight(c));
  for (const storage::FlightMessageRow& m : s.messages) r.messages.push_back(hang::fromFlight(m));
  if (!s.dumps.empty()) r.detail = s.dumps.back().reason + ": " + s.dumps.back().detail;
  return r;
}

// A call the job waits on: inside its API call, or an NCCL call queued where this ring has seen
// NCCL completions (the profiler plugin reports them, so one that never comes is news). Without
// a completion source every NCCL call stays queued: judged only when a call blocks in the API.
bool waitsOn(const storage::FlightCallRow& c, bool nccl_completions) {
  if (c.state == "queued") return nccl_completions;
  return c.exit_ns == storage::kNone && c.state != "failed";
}

}  // namespace

void Watchdog::check() {
  hang::Input input;
  std::vector<std::string> paths;
  std::vector<pid_t> pids;
  int32_t world = -1;
  int64_t last_done = 0, oldest_open = INT64_MAX;
  for (const std::string& path : ring::listRings(options_.dir)) {
    ring::Snapshot s;
    std::string error;
    if (!ring::readRing(path, &s, &error) || s.start_unix_ns < options_.not_before_unix_ns) continue;
    world = std::max(world, s.world_size);
    last_done = std::max(last_done, s.last_done_ns);
    const bool completions = std::any_of(s.calls.begin(), s.calls.end(), [](const storage::FlightCallRow& c) {
      return c.library == "nccl" && c.state == "done";
    });
    for (const storage::FlightCallRow& c : s.calls)
      if (waitsOn(c, completions)) oldest_open = std::min(oldest_open, c.enter_ns);
    if (s.ended == ring::Ended::kRunning) pids.push_back(static_cast<pid_t>(s.pid));
    input.ranks.push_back(toRank(std::move(s)));
    paths.push_back(path);
  }
  if (oldest_open == INT64_MAX) return;
  const int64_t now = monotonicNs();
  if (now - std::max(last_done, oldest_open) < static_cast<int64_t>(options_.hang_timeout_s * 1e9)) return;
  // Ranks of the world with no ring at all: never started, or died before their first call.
  std::set<int> seen;
  for (const hang::Rank& r : input.ranks) seen.insert(r.rank);
  for (int r = 0; options_.whole_world && r < world && r < 65536; ++r) {
    if (seen.count(r)) continue;
    hang::Rank missing;
    missing.rank = r;
    missing.liveness = hang::Liveness::kMissing;
    input.ranks.push_back(std::move(missing));
  }
  input.now_ns = now;
  // Every rank has gone hang_timeout_s without completing a call: a message waiting that long
  // is not in flight, so the floor of the stall bound is no longer than the timeout.
  input.min_stall_ns =
      std::min(hang::kMinStallNs, static_cast<int64_t>(options_.hang_timeout_s * 1e9));
  const std::vector<hang::Verdict> verdicts = hang::judgeHang(input);
  if (verdicts.empty()) return;
  const hang::Verdict& v = verdicts.front();
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->reported.insert({v.comm, v.seq}).second) return;
  }
  std::string line = "hang (" + v.rule + "): " + v.message;
  // The step where the verdict's own line leaves it out.
  if (v.step >= 0 && line.find("step ") == std::string::npos) line += " (step " + std::to_string(v.step) + ")";
  std::cerr << options_.prefix << line << (options_.kill ? "; stopping the job (--on-hang kill)" : "")
            << "\n"
            << std::flush;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->verdict.empty()) {
      state_->verdict = line;
      verdict_unix_ns_.store(unixNs());
    }
  }
  for (const std::string& path : paths) {
    ring::Mapping m;
    std::string error;
    if (m.open(path, true, &error)) ring::stampDump(m.layout(), ring::Reason::kWatchdog, now, line.c_str());
  }
  if (options_.kill) {
    for (pid_t pid : pids) {
      ::kill(pid, SIGTERM);
      ::kill(pid, SIGCONT);  // a stopped rank takes its SIGTERM too
    }
  }
}

void Watchdog::noteExit(pid_t pid, int status) {
  for (const std::string& path : ring::listRings(options_.dir)) {
    ring::Mapping m;
    std::string error;
    if (!m.open(path, true, &error) || m.layout()->header.pid != pid) continue;
    const bool signaled = WIFSIGNALED(status);
    ring::noteEnd(m.layout(), signaled ? ring::Ended::kSignal : ring::Ended::kExited, 2,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, signaled ? WTERMSIG(status) : 0,
                  monotonicNs());
    return;
  }
}

}  // namespace ringside::cli
