// reference/local_job/local_job.h — run the reference's ranks as processes on one machine: fork
// n children that rendezvous on a free port on 127.0.0.1, collect each one's exit status,
// message and exit time. For reference's unit tests and the hand-run perf_reference program
// (library ringside_reference_local_job); never linked into the product.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ringside/reference/communicator.h"
#include "ringside/reference/rendezvous.h"

namespace ringside::reference::local_job {

struct RankResult {
  int status = -1;      // exit code, 128+signal, or -1 when killed for running past the limit
  std::string message;  // what the child reported
  double exit_ms = 0;   // when the parent saw it exit, from the start
};

// A child's body: returns its exit code, may fill *message (a few KiB at most).
using RankBody = std::function<int(int rank, int n, int port, std::string* message)>;
// Runs in the parent while the children run (e.g. to kill or stop one).
using Controller = std::function<void(const std::vector<pid_t>& pids)>;

int freePort();

std::vector<RankResult> runJob(int n, const RankBody& body,
                               std::chrono::milliseconds limit = std::chrono::seconds(40),
                               const Controller& controller = {},
                               double* controller_done_ms = nullptr,
                               int kill_when_others_exited = -1);

// Counters shared by the parent and its forked children (MAP_SHARED).
struct SharedCounters {
  SharedCounters();
  ~SharedCounters();
  std::atomic<int>* at(int i) { return &base_[i]; }
  // Waits until *at(i) >= v or the time passes; true if reached.
  bool waitAtLeast(int i, int v, std::chrono::milliseconds limit);

 private:
  std::atomic<int>* base_;
};

// In a child: the rendezvous and a communicator on it.
struct Member {
  std::unique_ptr<Rendezvous> rendezvous;
  std::unique_ptr<Communicator> comm;
};
uint64_t testToken();
std::unique_ptr<Rendezvous> joinRendezvous(
    int rank, int n, int port, std::string* error,
    std::chrono::milliseconds timeout = std::chrono::seconds(20));
std::unique_ptr<Communicator> makeComm(Rendezvous& rv, std::string* error, size_t chunk_bytes = 0,
                                       std::chrono::milliseconds timeout = std::chrono::seconds(20),
                                       const ExchangeFn& exchange = {});

// "rank 2: <message>" lines for the failures among `results` ("" if none).
std::string failures(const std::vector<RankResult>& results);

}  // namespace ringside::reference::local_job
