// Faults with ranks as processes: a peer SIGKILLed mid-collective, a peer
// SIGSTOPped (only the deadline catches it), stray connections during setup,
// and results under a transport that passes 1-7 bytes per call with EINTR.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

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
        for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
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
