// Ring, tree and multipath all-reduce with ranks as processes, n = 1..8: every size
// class (0, 1, 2, n-1, n+1, a prime, 2^16+3), every dtype and reduce op,
// automatic and tiny chunks; closed-form expected values, zero wrong
// elements allowed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "job.h"
#include "values.h"

namespace ringside::reference {
namespace {

using test::Member;

struct Case {
  Algorithm algorithm;
  DType dtype;
  ReduceOp op;
  size_t count;
  bool tiny_chunks;
};

std::string describe(const Case& c) {
  return std::string(algorithmName(c.algorithm)) + " " + collector::dtypeName(c.dtype) + " " +
         collector::reduceOpName(c.op) + " count " + std::to_string(c.count) +
         (c.tiny_chunks ? " tiny chunks" : "");
}

std::vector<Case> casesFor(int n) {
  std::vector<Case> cases;
  const Algorithm algs[] = {Algorithm::kRing, Algorithm::kTree, Algorithm::kMultipath};
  const size_t un = static_cast<size_t>(n);
  for (Algorithm a : algs) {
    for (size_t count :
         {size_t{0}, size_t{1}, size_t{2}, un - 1, un + 1, size_t{7919}, size_t{(1 << 16) + 3}})
      cases.push_back({a, DType::kF32, ReduceOp::kSum, count, false});
    for (size_t count : {un + 1, size_t{7919}})
      cases.push_back({a, DType::kF32, ReduceOp::kSum, count, true});
  }
  if (n == 1 || n == 2 || n == 3 || n == 5 || n == 8) {
    for (Algorithm a : algs)
      for (DType t :
           {DType::kF32, DType::kF64, DType::kF16, DType::kBF16, DType::kI32, DType::kI64})
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
          cases.push_back({a, t, op, un + 1, false});
          cases.push_back({a, t, op, 7919, true});
        }
  }
  return cases;
}

int runCases(int rank, int n, int port, std::string* msg) {
  auto rv = test::joinRendezvous(rank, n, port, msg);
  if (!rv) return 2;
  auto comm = test::makeComm(*rv, msg);
  if (!comm) return 3;
  auto tiny = test::makeComm(*rv, msg, 512);  // many chunks per segment even for small counts
  if (!tiny) return 3;
  for (const Case& c : casesFor(n)) {
    auto buf = test::makeInput(c.dtype, c.op, rank, c.count);
    std::string err;
    Communicator& cm = c.tiny_chunks ? *tiny : *comm;
    if (!cm.allreduce(buf.data(), c.count, c.dtype, c.op, c.algorithm, &err)) {
      *msg = describe(c) + ": " + err;
      return 4;
    }
    std::string first;
    size_t wrong = test::countWrong(c.dtype, c.op, n, buf.data(), c.count, &first);
    if (wrong != 0) {
      *msg = describe(c) + ": " + std::to_string(wrong) + " wrong elements, first " + first;
      return 5;
    }
  }
  // Keep rank 0's store up until every rank is done.
  std::vector<std::string> all;
  std::string err;
  if (!rv->exchange("done", &all, &err)) {
    *msg = err;
    return 6;
  }
  return 0;
}

class AllreduceRanks : public ::testing::TestWithParam<int> {};

TEST_P(AllreduceRanks, EverySizeDtypeOpEveryAlgorithm) {
  int n = GetParam();
  auto results = test::runJob(n, runCases);
  EXPECT_EQ(test::failures(results), "");
}

INSTANTIATE_TEST_SUITE_P(Processes, AllreduceRanks, ::testing::Range(1, 9),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return "n" + std::to_string(i.param);
                         });

// Several collectives back to back on one communicator, alternating
// algorithms and sizes: sequence numbers and parked frames of the next
// collective must line up.
TEST(Allreduce, BackToBackMixedAlgorithms) {
  const int n = 4;
  auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 2;
    auto comm = test::makeComm(*rv, msg, 1024);
    if (!comm) return 3;
    for (int i = 0; i < 60; ++i) {
      Algorithm a = i % 3 == 0   ? Algorithm::kTree
                    : i % 3 == 1 ? Algorithm::kMultipath
                                 : Algorithm::kRing;
      size_t count = static_cast<size_t>((i * 977) % 5000 + 1);
      auto buf = test::makeInput(DType::kI32, ReduceOp::kSum, rank, count);
      std::string err, first;
      if (!comm->allreduce(buf.data(), count, DType::kI32, ReduceOp::kSum, a, &err)) {
        *msg = err;
        return 4;
      }
      if (test::countWrong(DType::kI32, ReduceOp::kSum, nn, buf.data(), count, &first) != 0) {
        *msg = "iteration " + std::to_string(i) + ": " + first;
        return 5;
      }
    }
    std::vector<std::string> all;
    std::string err;
    return rv->exchange("", &all, &err) ? 0 : 6;
  });
  EXPECT_EQ(test::failures(results), "");
}

// The bench's ringFloor (not an all-reduce) between all-reduces on one
// communicator, n = 1..5, sizes that do not divide and tiny chunks: it uses
// the same links and sequence numbers, so the all-reduces around it must
// stay correct; bad arguments fail as allreduce's do.
TEST(RingFloor, BetweenAllreducesKeepsTheLinksInStep) {
  for (int n = 1; n <= 5; ++n) {
    auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
      auto rv = test::joinRendezvous(rank, nn, port, msg);
      if (!rv) return 2;
      auto comm = test::makeComm(*rv, msg, 1024);
      if (!comm) return 3;
      std::string err, first;
      for (size_t count : {size_t{0}, size_t{1}, size_t{7919}, size_t{(1 << 16) + 3}}) {
        auto scratch = test::makeInput(DType::kF32, ReduceOp::kSum, rank, count);
        if (!comm->ringFloor(scratch.data(), count, DType::kF32, ReduceOp::kSum, &err)) {
          *msg = "ringFloor count " + std::to_string(count) + ": " + err;
          return 4;
        }
        for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
          auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, count);
          if (!comm->allreduce(buf.data(), count, DType::kF32, ReduceOp::kSum, a, &err)) {
            *msg = "allreduce after ringFloor, count " + std::to_string(count) + ": " + err;
            return 5;
          }
          if (test::countWrong(DType::kF32, ReduceOp::kSum, nn, buf.data(), count, &first) != 0) {
            *msg = "wrong after ringFloor, count " + std::to_string(count) + ": " + first;
            return 6;
          }
        }
      }
      float x = 1;
      if (comm->ringFloor(&x, 1, DType::kU8, ReduceOp::kSum, &err) || err.find("dtype") == std::string::npos) {
        *msg = "bad dtype accepted: " + err;
        return 7;
      }
      std::vector<std::string> all;
      return rv->exchange("", &all, &err) ? 0 : 8;
    });
    EXPECT_EQ(test::failures(results), "") << "n = " << n;
  }
}

TEST(Allreduce, RejectsBadArguments) {
  auto results = test::runJob(1, [](int rank, int n, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, n, port, msg);
    if (!rv) return 2;
    auto comm = test::makeComm(*rv, msg);
    if (!comm) return 3;
    float x = 1;
    std::string err;
    if (comm->allreduce(&x, 1, DType::kU8, ReduceOp::kSum, Algorithm::kRing, &err)) return 4;
    if (err.find("dtype") == std::string::npos) {
      *msg = err;
      return 5;
    }
    if (comm->allreduce(nullptr, 4, DType::kF32, ReduceOp::kSum, Algorithm::kRing, &err)) return 6;
    if (!comm->allreduce(&x, 1, DType::kF32, ReduceOp::kSum, Algorithm::kTree, &err) || x != 1)
      return 7;
    return 0;
  });
  EXPECT_EQ(test::failures(results), "");
}

// pingPong between ranks that are and are not neighbours; the others return 0 at once.
TEST(PingPong, NeighboursAndFarRanks) {
  const int n = 6;
  auto results = test::runJob(n, [](int rank, int nn, int port, std::string* msg) {
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 2;
    auto comm = test::makeComm(*rv, msg);
    if (!comm) return 3;
    const int pairs[][2] = {{0, 1}, {0, 3}, {5, 2}, {4, 1}, {0, 3}};
    for (auto& p : pairs) {
      double s = -1;
      std::string err;
      if (!comm->pingPong(p[0], p[1], 4096, 20, &s, &err)) {
        *msg = err;
        return 4;
      }
      bool involved = rank == p[0] || rank == p[1];
      if (involved ? !(s > 0) : s != 0) {
        *msg = "pingPong " + std::to_string(p[0]) + "-" + std::to_string(p[1]) + " gave " +
               std::to_string(s);
        return 5;
      }
    }
    // An all-reduce still works after ping-pongs (sequence numbers apart).
    auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, 1000);
    std::string err, first;
    if (!comm->allreduce(buf.data(), 1000, DType::kF32, ReduceOp::kSum, Algorithm::kRing, &err)) {
      *msg = err;
      return 6;
    }
    if (test::countWrong(DType::kF32, ReduceOp::kSum, nn, buf.data(), 1000, &first) != 0) {
      *msg = first;
      return 7;
    }
    std::vector<std::string> all;
    return rv->exchange("", &all, &err) ? 0 : 8;
  });
  EXPECT_EQ(test::failures(results), "");
}

}  // namespace
}  // namespace ringside::reference
