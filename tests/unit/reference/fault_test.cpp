// Faults with ranks as processes: a peer SIGKILLed mid-collective, a peer
// SIGSTOPped (only the deadline catches it), stray connections during setup,
// and results under a transport that passes 1-7 bytes per call with EINTR.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io.h"
#include "job.h"
#include "values.h"
#include "wire.h"

namespace ringside::reference {
namespace {

constexpr int kFailed = 10;

// Loops all-reduces until one fails; reports "<iteration>|<error>".
int loopUntilFailure(int rank, int n, int port, std::string* msg, Algorithm alg,
                     std::chrono::milliseconds timeout, test::SharedCounters* ready) {
  auto rv = test::joinRendezvous(rank, n, port, msg);
  if (!rv) return 2;
  auto comm = test::makeComm(*rv, msg, 0, timeout);
  if (!comm) return 3;
  const size_t count = 1 << 18;  // 1 MiB of f32
  std::vector<float> buf(count, 1.0f);
  for (int i = 0; i < 1000000; ++i) {
    std::string err;
    if (!comm->allreduce(buf.data(), count, DType::kF32, ReduceOp::kMax, alg, &err)) {
      *msg = std::to_string(i) + "|" + err;
      return kFailed;
    }
    if (i == 2) ready->at(0)->fetch_add(1);
  }
  return 0;
}

void killedPeer(Algorithm alg) {
  const int n = 4, victim = 2;
  test::SharedCounters ready;
  double killed_ms = 0;
  auto results = test::runJob(
      n,
      [&](int rank, int nn, int port, std::string* msg) {
        return loopUntilFailure(rank, nn, port, msg, alg, std::chrono::seconds(20), &ready);
      },
      std::chrono::seconds(40),
      [&](const std::vector<pid_t>& pids) {
        ASSERT_TRUE(ready.waitAtLeast(0, n, std::chrono::seconds(30)));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        ::kill(pids[victim], SIGKILL);
      },
      &killed_ms);
  EXPECT_EQ(results[victim].status, 128 + SIGKILL);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    const auto& res = results[static_cast<size_t>(r)];
    ASSERT_EQ(res.status, kFailed) << "rank " << r << ": " << res.message;
    size_t bar = res.message.find('|');
    ASSERT_NE(bar, std::string::npos) << res.message;
    std::string iteration = res.message.substr(0, bar), error = res.message.substr(bar + 1);
    EXPECT_NE(error.find("allreduce seq " + iteration + ":"), std::string::npos)
        << "rank " << r << ": " << error;
    EXPECT_NE(error.find("rank " + std::to_string(victim)), std::string::npos)
        << "rank " << r << ": " << error;
    EXPECT_LT(res.exit_ms - killed_ms, 3000)
        << "rank " << r << " took too long to notice: " << error;
  }
}

TEST(Faults, KilledPeerRing) { killedPeer(Algorithm::kRing); }
TEST(Faults, KilledPeerTree) { killedPeer(Algorithm::kTree); }
TEST(Faults, KilledPeerMultipath) { killedPeer(Algorithm::kMultipath); }

TEST(Faults, StoppedPeerHitsTheDeadline) {
  const int n = 3, victim = 1;
  const auto timeout = std::chrono::milliseconds(1500);
  test::SharedCounters ready;
  double stopped_ms = 0;
  auto results = test::runJob(
      n,
      [&](int rank, int nn, int port, std::string* msg) {
        return loopUntilFailure(rank, nn, port, msg, Algorithm::kRing, timeout, &ready);
      },
      std::chrono::seconds(40),
      [&](const std::vector<pid_t>& pids) {
        ASSERT_TRUE(ready.waitAtLeast(0, n, std::chrono::seconds(30)));
        ::kill(pids[victim], SIGSTOP);
      },
      &stopped_ms, victim);
  for (int r = 0; r < n; ++r) {
    if (r == victim) continue;
    const auto& res = results[static_cast<size_t>(r)];
    ASSERT_EQ(res.status, kFailed) << "rank " << r << ": " << res.message;
    EXPECT_NE(res.message.find("allreduce seq "), std::string::npos) << res.message;
    EXPECT_NE(res.message.find("for 1500 ms"), std::string::npos) << res.message;
    EXPECT_LT(res.exit_ms - stopped_ms, 1500 + 2500) << res.message;
  }
}

// Raw connections at a listener: another job's hello, garbage, a silent
// connection, an unknown rank, a truncated hello. Returns fds to keep open.
std::vector<int> strayConnections(const std::string& address, uint64_t token) {
  std::vector<int> keep;
  std::string host;
  int port = 0;
  if (!detail::splitHostPort(address, &host, &port)) return keep;
  auto open = [&]() {
    std::string err;
    return detail::dialTcp(host, port, detail::Clock::now() + std::chrono::seconds(2), &err);
  };
  auto hello = [&](uint64_t tok, uint32_t rank, size_t len, bool close_after) {
    int fd = open();
    if (fd < 0) return;
    detail::Hello h;
    h.kind = static_cast<uint8_t>(detail::HelloKind::kHello);
    h.token = tok;
    h.rank = rank;
    h.world_size = 4;
    unsigned char b[detail::kHelloBytes];
    detail::encodeHello(h, b);
    detail::writeFull(fd, b, len, detail::Clock::now() + std::chrono::seconds(1));
    if (close_after)
      ::close(fd);
    else
      keep.push_back(fd);
  };
  hello(token ^ 1, 3, detail::kHelloBytes, false);  // another job
  hello(token, 99, detail::kHelloBytes, true);      // unknown rank
  hello(token, 3, 10, true);                        // truncated
  keep.push_back(open());                           // silent
  int g = open();
  if (g >= 0) {
    const char junk[] = "GET / HTTP/1.0\r\n\r\n";
    detail::writeFull(g, junk, sizeof junk, detail::Clock::now() + std::chrono::seconds(1));
    keep.push_back(g);
  }
  return keep;
}

TEST(Faults, StrayConnectionsDuringSetupAreDiscarded) {
  const int n = 4;
  auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 2;
    std::vector<int> keep;
    ExchangeFn ex = [&](const std::string& mine, std::vector<std::string>* all, std::string* e) {
      if (!rv->exchange(mine, all, e)) return false;
      if (rank == 0)  // before rank 0 accepts anyone: at itself and at the others
        for (const std::string& a : *all) {
          auto k = strayConnections(a, rv->jobToken());
          keep.insert(keep.end(), k.begin(), k.end());
        }
      return true;
    };
    auto comm = test::makeComm(*rv, msg, 0, std::chrono::seconds(20), ex);
    if (!comm) return 3;
    auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, 10007);
    std::string err, first;
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
      buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, 10007);
      if (!comm->allreduce(buf.data(), 10007, DType::kF32, ReduceOp::kSum, a, &err)) {
        *msg = err;
        return 4;
      }
      if (test::countWrong(DType::kF32, ReduceOp::kSum, nn, buf.data(), 10007, &first) != 0) {
        *msg = first;
        return 5;
      }
    }
    std::vector<std::string> all;
    if (!rv->exchange("", &all, &err)) return 6;
    for (int fd : keep) ::close(fd);
    return 0;
  });
  EXPECT_EQ(test::failures(results), "");
}

// Start-up under strangers, before any real peer can know where a rank listens:
// rank 0's own listener and the store get a silent connection, garbage, and an
// impostor that presents the job token (the rendezvous token is no secret: by
// default it is derived from MASTER_ADDR:PORT) and claims to be rank 1. Only
// peers that present the run's secret from the address exchange are links, so
// the all-reduces complete with correct results, quickly.
TEST(Faults, StrangersAndAnImpostorDuringStartupAreDropped) {
  const int n = 3;
  auto start = std::chrono::steady_clock::now();
  auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
    std::vector<int> keep;
    auto dial = [&](const std::string& host, int p) {
      std::string err;
      int fd = detail::dialTcp(host, p, detail::Clock::now() + std::chrono::seconds(2), &err);
      if (fd >= 0) keep.push_back(fd);
      return fd;
    };
    auto garbage = [&](int fd) {
      const char junk[] = "GET / HTTP/1.0\r\n\r\n\x01\x02\x03\x04\x05\x06";
      if (fd >= 0)
        detail::writeFull(fd, junk, sizeof junk, detail::Clock::now() + std::chrono::seconds(1));
    };
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 2;
    if (rank == 0) {  // at the store, while the others join
      dial("127.0.0.1", port);
      garbage(dial("127.0.0.1", port));
    }
    ExchangeFn ex = [&](const std::string& mine, std::vector<std::string>* all, std::string* e) {
      if (rank == 0) {  // at our own listener, before our address is published
        std::string addr = mine.substr(0, mine.find('#'));  // "host:port[#secret]"
        std::string host;
        int lp = 0;
        detail::splitHostPort(addr, &host, &lp);
        dial(host, lp);
        garbage(dial(host, lp));
        int fd = dial(host, lp);
        if (fd >= 0) {
          detail::Hello h;
          h.kind = static_cast<uint8_t>(detail::HelloKind::kHello);
          h.token = rv->jobToken();
          h.rank = 1;
          h.world_size = static_cast<uint32_t>(nn);
          unsigned char b[detail::kHelloBytes];
          detail::encodeHello(h, b);
          detail::writeFull(fd, b, sizeof b, detail::Clock::now() + std::chrono::seconds(1));
        }
      }
      return rv->exchange(mine, all, e);
    };
    auto comm = test::makeComm(*rv, msg, 0, std::chrono::seconds(3), ex);
    if (!comm) return 3;
    std::string err, first;
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
      auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, 4099);
      if (!comm->allreduce(buf.data(), 4099, DType::kF32, ReduceOp::kSum, a, &err)) {
        *msg = err;
        return 4;
      }
      if (test::countWrong(DType::kF32, ReduceOp::kSum, nn, buf.data(), 4099, &first) != 0) {
        *msg = first;
        return 5;
      }
    }
    std::vector<std::string> all;
    if (!rv->exchange("", &all, &err)) return 6;
    for (int fd : keep) ::close(fd);
    return 0;
  }, std::chrono::seconds(15));
  EXPECT_EQ(test::failures(results), "");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

// The local addresses (hex, as /proc/net/tcp{,6} write them) of the sockets
// listening on `port`.
std::vector<std::string> listenersOn(int port) {
  std::vector<std::string> out;
  char want[8];
  std::snprintf(want, sizeof want, "%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    FILE* f = std::fopen(table, "r");
    if (f == nullptr) continue;
    char line[512];
    while (std::fgets(line, sizeof line, f) != nullptr) {
      char local[64] = {}, remote[64] = {}, state[8] = {};
      if (std::sscanf(line, " %*s %63s %63s %7s", local, remote, state) != 3) continue;
      std::string l = local;
      size_t colon = l.rfind(':');
      const bool listening = std::strcmp(state, "0A") == 0;
      if (colon != std::string::npos && l.substr(colon + 1) == want && listening)
        out.push_back(l.substr(0, colon));
    }
    std::fclose(f);
  }
  return out;
}

// A local job (MASTER_ADDR 127.0.0.1) listens on the loopback only: the store
// and, with the default listen address, each rank's peer listener.
TEST(Faults, ListenersBindTheLoopbackForALocalJob) {
  if (::access("/proc/net/tcp", R_OK) != 0)
    GTEST_SKIP() << "no /proc/net/tcp to read the listeners from";
  auto results = test::runJob(2, [](int rank, int nn, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 2;
    const std::string loopback = "0100007F";  // 127.0.0.1 as /proc/net/tcp writes it
    auto onlyLoopback = [&](int p, const char* what) {
      std::vector<std::string> l = listenersOn(p);
      for (const std::string& a : l)
        if (a != loopback) {
          *msg = std::string(what) + " listens on " + a;
          return false;
        }
      if (l.empty()) *msg = std::string(what) + ": no listener found on port " + std::to_string(p);
      return !l.empty();
    };
    if (rank == 0 && !onlyLoopback(port, "the store")) return 7;
    CommunicatorOptions o;  // listen_address left to its default
    o.rank = rank;
    o.world_size = nn;
    o.job_token = rv->jobToken();
    o.timeout = std::chrono::seconds(5);
    bool ok = true;
    ExchangeFn ex = [&](const std::string& mine, std::vector<std::string>* all, std::string* e) {
      std::string host;
      int lp = 0;
      detail::splitHostPort(mine.substr(0, mine.find('#')), &host, &lp);
      ok = onlyLoopback(lp, "the peer listener");
      return rv->exchange(mine, all, e);
    };
    ::setenv("MASTER_ADDR", "127.0.0.1", 1);
    auto comm = Communicator::create(o, ex, msg);
    if (!comm) return 3;
    if (!ok) return 8;
    std::vector<std::string> all;
    std::string err;
    if (!rv->exchange("", &all, &err)) return 6;
    return 0;
  }, std::chrono::seconds(15));
  EXPECT_EQ(test::failures(results), "");
}

// Random (not exactly summable) floats: the result must be bit-identical
// whether the transport moves whole buffers or 1-7 bytes per call with EINTR.
TEST(Faults, ShortReadsWritesAndEintrGiveIdenticalBits) {
  for (int n : {3, 4}) {
    auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
      detail::setIoShim(true);  // rendezvous and handshake through the shim too
      auto rv = test::joinRendezvous(rank, nn, port, msg);
      if (!rv) return 2;
      auto comm = test::makeComm(*rv, msg, 64);
      if (!comm) return 3;
      std::mt19937 gen(static_cast<unsigned>(rank) * 7919u + 1);
      std::uniform_real_distribution<float> dist(-1000, 1000);
      for (DType t : {DType::kF32, DType::kF16}) {
        for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kMultipath}) {
          for (size_t count : {size_t{1}, size_t{5}, size_t{1001}}) {
            std::vector<uint64_t> input((count * dtypeSize(t)) / 8 + 1);
            for (size_t i = 0; i < count; ++i) test::store(t, input.data(), i, dist(gen));
            std::vector<uint64_t> shim = input, plain = input;
            std::string err;
            detail::setIoShim(true);
            if (!comm->allreduce(shim.data(), count, t, ReduceOp::kSum, a, &err)) {
              *msg = "shim: " + err;
              return 4;
            }
            detail::setIoShim(false);
            if (!comm->allreduce(plain.data(), count, t, ReduceOp::kSum, a, &err)) {
              *msg = "plain: " + err;
              return 5;
            }
            if (std::memcmp(shim.data(), plain.data(), count * dtypeSize(t)) != 0) {
              *msg = std::string(algorithmName(a)) + " " + collector::dtypeName(t) + " count " +
                     std::to_string(count) + ": results differ";
              return 6;
            }
          }
        }
      }
      std::vector<std::string> all;
      std::string err;
      return rv->exchange("", &all, &err) ? 0 : 7;
    });
    EXPECT_EQ(test::failures(results), "") << "n " << n;
  }
}

}  // namespace
}  // namespace ringside::reference
