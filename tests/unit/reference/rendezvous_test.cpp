// The MASTER_ADDR:MASTER_PORT store: set/get/exchange across processes with
// binary values and waiting gets, a wrong token refused, deadlines, and the
// torchrun environment.
#include "ringside/reference/rendezvous.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <thread>
#include <vector>

#include "job.h"

namespace ringside::reference {
namespace {

std::string binaryValue(int rank, size_t len) {
  std::string v(len, '\0');
  for (size_t i = 0; i < len; ++i)
    v[i] = static_cast<char>((i * 31 + static_cast<size_t>(rank) * 7) & 0xff);
  return v;
}

TEST(Rendezvous, SetGetExchangeAcrossProcesses) {
  const int n = 4;
  auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, nn, port, msg, std::chrono::seconds(10));
    if (!rv) return 2;
    std::string err;
    if (rank == 3)
      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // others' get() waits
    size_t len = rank == 0 ? (size_t{1} << 20) : 1000 + static_cast<size_t>(rank);
    if (!rv->set("k" + std::to_string(rank), binaryValue(rank, len), &err)) {
      *msg = err;
      return 3;
    }
    for (int r = 0; r < nn; ++r) {
      std::string v;
      if (!rv->get("k" + std::to_string(r), &v, &err)) {
        *msg = err;
        return 4;
      }
      size_t want = r == 0 ? (size_t{1} << 20) : 1000 + static_cast<size_t>(r);
      if (v != binaryValue(r, want)) {
        *msg = "wrong value for k" + std::to_string(r);
        return 5;
      }
    }
    for (int round = 0; round < 2; ++round) {
      std::vector<std::string> all;
      std::string mine =
          "r" + std::to_string(rank) + "/" + std::to_string(round) + std::string(1, '\0');
      if (!rv->exchange(mine, &all, &err)) {
        *msg = err;
        return 6;
      }
      for (int r = 0; r < nn; ++r)
        if (all[static_cast<size_t>(r)] !=
            "r" + std::to_string(r) + "/" + std::to_string(round) + std::string(1, '\0')) {
          *msg = "exchange round " + std::to_string(round) + " wrong for rank " + std::to_string(r);
          return 7;
        }
    }
    return 0;
  });
  EXPECT_EQ(test::failures(results), "");
}

RendezvousOptions options(int port, int rank, uint64_t token, int timeout_ms) {
  RendezvousOptions o;
  o.master_port = port;
  o.rank = rank;
  o.world_size = 2;
  o.job_token = token;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  return o;
}

TEST(Rendezvous, WrongTokenIsRefused) {
  int port = test::freePort();
  std::string err;
  auto master = Rendezvous::connect(options(port, 0, 111, 5000), &err);
  ASSERT_TRUE(master) << err;
  auto stranger = Rendezvous::connect(options(port, 1, 222, 5000), &err);
  EXPECT_FALSE(stranger);
  EXPECT_NE(err.find("wrong job token"), std::string::npos) << err;
  auto member = Rendezvous::connect(options(port, 1, 111, 5000), &err);
  ASSERT_TRUE(member) << err;
  ASSERT_TRUE(member->set("x", "1", &err)) << err;
  std::string v;
  ASSERT_TRUE(master->get("x", &v, &err)) << err;
  EXPECT_EQ(v, "1");
}

TEST(Rendezvous, DeadlineWhenTheMasterNeverAppears) {
  int port = test::freePort();
  std::string err;
  auto start = std::chrono::steady_clock::now();
  auto r = Rendezvous::connect(options(port, 1, 1, 700), &err);
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r);
  EXPECT_NE(err.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << err;
  EXPECT_GE(ms, 500);
  EXPECT_LT(ms, 3000);
}

TEST(Rendezvous, GetHasADeadline) {
  int port = test::freePort();
  std::string err;
  auto master = Rendezvous::connect(options(port, 0, 5, 300), &err);
  ASSERT_TRUE(master) << err;
  std::string v;
  EXPECT_FALSE(master->get("never", &v, &err));
  EXPECT_NE(err.find("'never' not set within 300 ms"), std::string::npos) << err;
  // The client reconnects after a timed-out request.
  ASSERT_TRUE(master->set("later", "ok", &err)) << err;
  ASSERT_TRUE(master->get("later", &v, &err)) << err;
  EXPECT_EQ(v, "ok");
}

// A plain TCP connection to 127.0.0.1:port that sends nothing (-1 on failure).
int idleConnection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

double processCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Issue 28: 1,100 idle connections to the store took rank 0's descriptors and made its store
// thread spin. Now: at most store_max_connections at once, those that send nothing are closed
// after store_idle_timeout (or to make room), the store thread sleeps meanwhile, and the ranks'
// own connections (the master's included, older than every idle one) still work.
TEST(Rendezvous, IdleConnectionsNeitherBlockTheJobNorSpin) {
  const int port = test::freePort();
  RendezvousOptions o = options(port, 0, 77, 10000);
  o.store_max_connections = 16;
  o.store_idle_timeout = std::chrono::milliseconds(2000);
  std::string err;
  auto master = Rendezvous::connect(o, &err);
  ASSERT_TRUE(master) << err;

  constexpr int kIdle = 300;
  std::vector<int> idle;
  for (int i = 0; i < kIdle; ++i) {
    const int fd = idleConnection(port);
    ASSERT_GE(fd, 0) << "connection " << i << ": " << std::strerror(errno);
    idle.push_back(fd);
  }
  // The store thread must sleep while they sit there (it spun at 100 % before).
  const double cpu0 = processCpuSeconds();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu = processCpuSeconds() - cpu0;
  EXPECT_LT(cpu, 0.25) << "the store thread is busy while connections sit idle";

  // A real rank joins (its new connection takes the place of an idle one) and the job's
  // exchange completes, the master's own connection included.
  std::unique_ptr<Rendezvous> member;
  std::thread joiner([&] {
    std::string e;
    member = Rendezvous::connect(options(port, 1, 77, 10000), &e);
    if (!member) ADD_FAILURE() << e;
  });
  joiner.join();
  ASSERT_TRUE(member);
  std::vector<std::string> all0, all1;
  std::string e0, e1;
  bool ok1 = false;
  std::thread t1([&] { ok1 = member->exchange("one", &all1, &e1); });
  const bool ok0 = master->exchange("zero", &all0, &e0);
  t1.join();
  ASSERT_TRUE(ok0) << e0;
  ASSERT_TRUE(ok1) << e1;
  EXPECT_EQ(all0, (std::vector<std::string>{"zero", "one"}));
  EXPECT_EQ(all1, all0);

  // Every idle connection is closed by the store by now (to make room, or after 2 s idle).
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  int closed = 0;
  for (int fd : idle) {
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
    ::close(fd);
  }
  EXPECT_EQ(closed, kIdle);
  // The ranks' connections were not closed for being idle those 2.5 s.
  ASSERT_TRUE(member->set("after", "idle", &err)) << err;
  std::string v;
  ASSERT_TRUE(master->get("after", &v, &err)) << err;
  EXPECT_EQ(v, "idle");
}

// When accept() fails with EMFILE the listening socket stays readable: polling it again at
// once was a busy loop. The store now waits 100 ms between tries, and serves again as soon as
// descriptors are free. Rank 0 runs in a child whose descriptors are used up on purpose.
TEST(Rendezvous, AcceptWithoutDescriptorsDoesNotSpin) {
  const int port = test::freePort();
  int ready[2], go[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(ready[0]);
    ::close(go[1]);
    std::string err;
    auto master = Rendezvous::connect(options(port, 0, 99, 10000), &err);
    if (!master) ::_exit(2);
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = std::min<rlim_t>(lim.rlim_cur, 256);
    ::setrlimit(RLIMIT_NOFILE, &lim);
    std::vector<int> spare;
    for (;;) {
      const int fd = ::dup(0);
      if (fd < 0) break;
      spare.push_back(fd);
    }
    char c = 1;
    if (::write(ready[1], &c, 1) != 1) ::_exit(5);
    if (::read(go[0], &c, 1) != 1) ::_exit(6);  // the parent has connected
    const double cpu0 = processCpuSeconds();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double cpu = processCpuSeconds() - cpu0;
    for (int fd : spare) ::close(fd);
    std::string v;
    if (!master->get("k", &v, &err) || v != "v") ::_exit(4);
    ::_exit(cpu < 0.25 ? 0 : 3);
  }
  ::close(ready[1]);
  ::close(go[0]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  std::vector<int> waiting;
  for (int i = 0; i < 4; ++i) waiting.push_back(idleConnection(port));  // accept: EMFILE
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  std::string err;
  // Served once the child frees its descriptors (after its second of measuring).
  auto member = Rendezvous::connect(options(port, 1, 99, 10000), &err);
  EXPECT_TRUE(member) << err;
  if (member) {
    EXPECT_TRUE(member->set("k", "v", &err)) << err;
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  for (int fd : waiting) ::close(fd);
  ::close(ready[0]);
  ::close(go[1]);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0)
      << "3: the store thread spun while accept() failed; 4: the store did not serve after; "
         "2, 5, 6: setup";
}

TEST(Rendezvous, OptionsFromTheTorchrunEnvironment) {
  const char* names[] = {"MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "RINGSIDE_JOB_TOKEN"};
  std::vector<std::pair<std::string, std::string>> saved;
  for (const char* n : names)
    if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
  for (const char* n : names) ::unsetenv(n);
  RendezvousOptions o;
  std::string err;
  EXPECT_FALSE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_NE(err.find("MASTER_ADDR"), std::string::npos);
  ::setenv("MASTER_ADDR", "10.1.2.3", 1);
  ::setenv("MASTER_PORT", "29500", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  ::setenv("RANK", "4", 1);
  EXPECT_FALSE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_NE(err.find("RANK"), std::string::npos);
  ::setenv("RANK", "3", 1);
  ASSERT_TRUE(rendezvousOptionsFromEnv(&o, &err)) << err;
  EXPECT_EQ(o.master_addr, "10.1.2.3");
  EXPECT_EQ(o.master_port, 29500);
  EXPECT_EQ(o.rank, 3);
  EXPECT_EQ(o.world_size, 4);
  uint64_t derived = o.job_token;
  EXPECT_NE(derived, 0u);
  ::setenv("MASTER_PORT", "29501", 1);
  ASSERT_TRUE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_NE(o.job_token, derived);  // another master, another job
  ::setenv("RINGSIDE_JOB_TOKEN", "42", 1);
  ASSERT_TRUE(rendezvousOptionsFromEnv(&o, &err));
  EXPECT_EQ(o.job_token, 42u);
  ::setenv("MASTER_PORT", "http", 1);
  EXPECT_FALSE(rendezvousOptionsFromEnv(&o, &err));
  for (const char* n : names) ::unsetenv(n);
  for (auto& [k, v] : saved) ::setenv(k.c_str(), v.c_str(), 1);
}

}  // namespace
}  // namespace ringside::reference
