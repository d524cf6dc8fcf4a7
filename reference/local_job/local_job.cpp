// reference/local_job/local_job.cpp — see local_job.h.
#include "local_job.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <thread>

namespace ringside::reference::local_job {

int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa);
  socklen_t len = sizeof sa;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

uint64_t testToken() { return 0x5eed0000ull + static_cast<uint64_t>(::getppid()); }

std::vector<RankResult> runJob(int n, const RankBody& body, std::chrono::milliseconds limit,
                               const Controller& controller, double* controller_done_ms,
                               int kill_when_others_exited) {
  const int port = freePort();
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (::pipe(p) != 0) std::abort();
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      std::string msg;
      int rc = 99;
      rc = body(r, n, port, &msg);
      if (msg.size() > 4000) msg.resize(4000);
      ssize_t w = ::write(p[1], msg.data(), msg.size());
      (void)w;
      ::_exit(rc);
    }
    ::close(p[1]);
    pids.push_back(pid);
    pipes.push_back(p[0]);
  }
  auto ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  };
  if (controller) {
    controller(pids);
    if (controller_done_ms != nullptr) *controller_done_ms = ms();
  }
  std::vector<RankResult> results(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  int left = n;
  while (left > 0) {
    bool late = std::chrono::steady_clock::now() - start > limit;
    if (kill_when_others_exited >= 0 && left == 1 &&
        !done[static_cast<size_t>(kill_when_others_exited)])
      ::kill(pids[static_cast<size_t>(kill_when_others_exited)], SIGKILL);
    for (int r = 0; r < n; ++r) {
      if (done[static_cast<size_t>(r)]) continue;
      if (late) ::kill(pids[static_cast<size_t>(r)], SIGKILL);
      int st = 0;
      pid_t w = ::waitpid(pids[static_cast<size_t>(r)], &st, late ? 0 : WNOHANG);
      if (w != pids[static_cast<size_t>(r)]) continue;
      auto& res = results[static_cast<size_t>(r)];
      res.exit_ms = ms();
      res.status = late ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      done[static_cast<size_t>(r)] = true;
      --left;
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  for (int r = 0; r < n; ++r) {
    char buf[4096];
    ssize_t k;
    while ((k = ::read(pipes[static_cast<size_t>(r)], buf, sizeof buf)) > 0)
      results[static_cast<size_t>(r)].message.append(buf, static_cast<size_t>(k));
    ::close(pipes[static_cast<size_t>(r)]);
  }
  return results;
}

std::unique_ptr<Rendezvous> joinRendezvous(int rank, int n, int port, std::string* error,
                                           std::chrono::milliseconds timeout) {
  RendezvousOptions o;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.rank = rank;
  o.world_size = n;
  o.job_token = testToken();
  o.timeout = timeout;
  return Rendezvous::connect(o, error);
}

std::unique_ptr<Communicator> makeComm(Rendezvous& rv, std::string* error, size_t chunk_bytes,
                                       std::chrono::milliseconds timeout,
                                       const ExchangeFn& exchange) {
  CommunicatorOptions o;
  o.rank = rv.rank();
  o.world_size = rv.worldSize();
  o.job_token = rv.jobToken();
  o.timeout = timeout;
  o.listen_address = "127.0.0.1";
  o.chunk_bytes = chunk_bytes;
  ExchangeFn ex = exchange
                      ? exchange
                      : ExchangeFn([&rv](const std::string& mine, std::vector<std::string>* all,
                                         std::string* e) { return rv.exchange(mine, all, e); });
  return Communicator::create(o, ex, error);
}

SharedCounters::SharedCounters() {
  void* p = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();
  base_ = static_cast<std::atomic<int>*>(p);
  for (int i = 0; i < 64; ++i) new (&base_[i]) std::atomic<int>(0);
}

SharedCounters::~SharedCounters() { ::munmap(base_, 4096); }

bool SharedCounters::waitAtLeast(int i, int v, std::chrono::milliseconds limit) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (at(i)->load() < v) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

std::string failures(const std::vector<RankResult>& results) {
  std::string out;
  for (size_t r = 0; r < results.size(); ++r)
    if (results[r].status != 0)
      out += "rank " + std::to_string(r) + " (status " + std::to_string(results[r].status) +
             "): " + results[r].message + "\n";
  return out;
}

}  // namespace ringside::reference::local_job
