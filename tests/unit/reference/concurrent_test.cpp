// Collectives in flight on several threads of a rank at once (Communicator::allreduceTagged),
// as PyTorch's Gloo process group issues them from two worker threads: every rank takes the
// calls off one queue in the same order, but its threads reach the communicator in another
// order than its peers' (random delays, one rank never delayed: it races ahead). Every frame
// must reach the call whose id it carries: each call's input depends on its id, so a frame
// taken by the wrong call gives a wrong sum even where the sizes agree.
//
// RINGSIDE_STRESS_CALLS sets the number of calls (default 600) for longer hand runs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "job.h"
#include "ringside/reference/communicator.h"

namespace ringside::reference {
namespace {

int stressCalls(int fallback) {
  const char* v = std::getenv("RINGSIDE_STRESS_CALLS");
  return v != nullptr && std::atoi(v) > 0 ? std::atoi(v) : fallback;
}

// Call `id`'s size: 1 element to ~48 K (192 KiB), many sizes that do not divide by n, and
// neighbours that differ (the old failure: frames of one size read as another's).
size_t callCount(int id) {
  static const size_t kSizes[] = {1, 3, 64, 1000, 4097, 12289, 30000, 49151, 7, 2048};
  return kSizes[static_cast<size_t>(id) % 10] + static_cast<size_t>(id % 13);
}

Algorithm callAlgorithm(int id, const std::vector<Algorithm>& algos) {
  return algos[static_cast<size_t>(id) % algos.size()];
}

// Input and expected sum: exact in int32 for any id and up to 8 ranks.
int32_t inputOf(int rank, int id, size_t i) {
  return (rank + 1) * (id % 101 + 1) + static_cast<int32_t>(i % 7);
}
int32_t sumOf(int n, int id, size_t i) {
  return (id % 101 + 1) * n * (n + 1) / 2 + n * static_cast<int32_t>(i % 7);
}

// One rank: `threads` threads take ids 0..calls-1 off a shared counter and run them, each
// after a random pause (rank 0: none).
int rankBody(int rank, int n, int port, std::string* msg, int calls, int threads,
             const std::vector<Algorithm>& algos, int max_pause_us) {
  auto rv = test::joinRendezvous(rank, n, port, msg);
  if (!rv) return 2;
  CommunicatorOptions o;
  o.rank = rank;
  o.world_size = n;
  o.job_token = rv->jobToken();
  o.timeout = std::chrono::seconds(30);
  o.listen_address = "127.0.0.1";
  o.prepare_multipath = true;
  auto comm = Communicator::create(
      o,
      [&](const std::string& mine, std::vector<std::string>* all, std::string* e) {
        return rv->exchange(mine, all, e);
      },
      msg);
  if (!comm) return 3;
  std::atomic<int> next{0};
  std::atomic<int> bad{0};
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::mt19937 gen(static_cast<unsigned>(rank * 7919 + t * 104729 + 1));
      std::vector<int32_t> buf;
      for (;;) {
        const int id = next.fetch_add(1);
        if (id >= calls || bad.load() != 0) return;
        if (rank != 0 && max_pause_us > 0 && gen() % 3 == 0)
          std::this_thread::sleep_for(
              std::chrono::microseconds(gen() % static_cast<unsigned>(max_pause_us)));
        const size_t count = callCount(id);
        buf.resize(count);
        for (size_t i = 0; i < count; ++i) buf[i] = inputOf(rank, id, i);
        std::string err;
        if (!comm->allreduceTagged(static_cast<uint64_t>(id), buf.data(), count, DType::kI32,
                                   ReduceOp::kSum, callAlgorithm(id, algos), &err)) {
          errors[static_cast<size_t>(t)] = err;
          bad.store(1);
          return;
        }
        for (size_t i = 0; i < count; ++i)
          if (buf[i] != sumOf(n, id, i)) {
            errors[static_cast<size_t>(t)] = "call " + std::to_string(id) + " (" +
                                             std::to_string(count) + " elements): element " +
                                             std::to_string(i) + " is " + std::to_string(buf[i]) +
                                             ", expected " + std::to_string(sumOf(n, id, i));
            bad.store(1);
            return;
          }
      }
    });
  }
  for (auto& th : pool) th.join();
  for (const std::string& e : errors)
    if (!e.empty()) {
      *msg = e;
      return 4;
    }
  // Nobody tears down while a peer still reads.
  std::vector<std::string> all;
  std::string err;
  return rv->exchange("", &all, &err) ? 0 : 5;
}

// Multipath over 4 ranks on one host plans 6 rings (every directed link equal): each call is
// six rings at once, three calls at a time.
TEST(Concurrent, MultipathCallsFromThreeThreadsInAnyOrder) {
  const int calls = stressCalls(600);
  auto results = test::runJob(
      4,
      [&](int rank, int n, int port, std::string* msg) {
        return rankBody(rank, n, port, msg, calls, 3, {Algorithm::kMultipath}, 3000);
      },
      std::chrono::seconds(150));
  EXPECT_EQ(test::failures(results), "");
}

// Ring, tree and multipath calls mixed, 2 to 5 ranks, two threads a rank (PyTorch's default).
TEST(Concurrent, MixedAlgorithmsFromTwoThreads) {
  const int calls = stressCalls(600) / 2;
  for (int n = 2; n <= 5; ++n) {
    auto results = test::runJob(
        n,
        [&](int rank, int nn, int port, std::string* msg) {
          return rankBody(rank, nn, port, msg, calls, 2,
                          {Algorithm::kRing, Algorithm::kTree, Algorithm::kMultipath}, 2000);
        },
        std::chrono::seconds(150));
    EXPECT_EQ(test::failures(results), "") << n << " ranks";
  }
}

// The same id twice at once on one rank is the caller's error, said as such.
TEST(Concurrent, SameIdTwiceInFlightIsRefused) {
  auto results = test::runJob(2, [](int rank, int n, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, n, port, msg);
    if (!rv) return 2;
    auto comm = test::makeComm(*rv, msg);
    if (!comm) return 3;
    // Rank 1 starts id 7 late; rank 0 has it in flight on two threads at once.
    std::vector<int32_t> a(100000, 1), b(100000, 1);
    std::string ea, eb;
    bool oka = true, okb = true;
    if (rank == 0) {
      std::thread t([&] {
        oka = comm->allreduceTagged(7, a.data(), a.size(), DType::kI32, ReduceOp::kSum,
                                    Algorithm::kRing, &ea);
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      okb = comm->allreduceTagged(7, b.data(), b.size(), DType::kI32, ReduceOp::kSum,
                                  Algorithm::kRing, &eb);
      t.join();
      if (okb || eb.find("already in flight") == std::string::npos) {
        *msg = "second id 7: " + (okb ? std::string("accepted") : eb);
        return 4;
      }
      if (!oka) {
        *msg = "first id 7: " + ea;
        return 5;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      if (!comm->allreduceTagged(7, a.data(), a.size(), DType::kI32, ReduceOp::kSum,
                                 Algorithm::kRing, &ea)) {
        *msg = ea;
        return 6;
      }
    }
    std::vector<std::string> all;
    std::string err;
    return rv->exchange("", &all, &err) ? 0 : 7;
  });
  EXPECT_EQ(test::failures(results), "");
}

}  // namespace
}  // namespace ringside::reference
