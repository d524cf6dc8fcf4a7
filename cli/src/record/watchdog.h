// cli/record/watchdog.h — `ringside record --hang-timeout`: watches the job's flight rings from
// outside (docs/flight-recorder.md). When a collective is open and no rank has completed one for
// the timeout, it reads every rank's ring, prints the verdict (analyzer/hang.h) at once, stamps it
// into every ring (a `watchdog` dump, which merge stores) and, with --on-hang kill, ends the job.
// Once per stuck point; the job is otherwise left alone. Never touches rank files.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace ringside::cli {

struct WatchdogOptions {
  std::string dir;              // the rank folder (this node's)
  double hang_timeout_s = 300;  // 0: off
  bool kill = false;            // --on-hang kill
  int64_t not_before_unix_ns = 0;  // rings of processes started before this are another run's
  // Every rank of the world writes into `dir` (one node): a rank with no ring is missing. False
  // for one node of several (--nnodes): it judges its own ranks only.
  bool whole_world = true;
  std::string prefix = "ringside record: ";
};

class Watchdog {
 public:
  explicit Watchdog(WatchdogOptions options);
  ~Watchdog();  // stops the thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  void start();
  void stop();
  // The verdict printed ("" if none) and when (ns since 1970), for the trace's meta.
  std::string verdict() const;
  int64_t verdictUnixNs() const { return verdict_unix_ns_.load(); }
  // record's launcher saw process `pid` end with wait status `status`: noted in its ring.
  void noteExit(pid_t pid, int status);

 private:
  void loop();
  void check();

  WatchdogOptions options_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  struct State;
  std::unique_ptr<State> state_;
  std::atomic<int64_t> verdict_unix_ns_{0};
};

}  // namespace ringside::cli
