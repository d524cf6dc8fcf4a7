// What a traced all-reduce leaves in the rank files: one collective per call
// (library ringside-ring / ringside-tree / ringside-multipath) and one transfer per message sent
// and received, with phase, step and chunk, all attributed to the collective.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <set>

#include "job.h"
#include "ringside/collector/collector.h"
#include "ringside/storage/trace_reader.h"
#include "topology.h"
#include "traced_child.h"
#include "values.h"

namespace ringside::reference {
namespace {

using test_support::rankFiles;

constexpr size_t kCount = 1000;
constexpr size_t kChunkBytes = 256;  // 64 f32 per chunk

TEST(Trace, CollectivesAndTransfers) {
  const int n = 3;
  const std::string dir = test_support::makeTempDir("reference-trace");
  ASSERT_FALSE(dir.empty());
  auto results = test::runJob(n, [&](int rank, int nn, int port, std::string* msg) {
    ::setenv("RINGSIDE_DIR", dir.c_str(), 1);
    if (!collector::activate()) {
      *msg = "collector did not activate";
      return 2;
    }
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 3;
    auto comm = test::makeComm(*rv, msg, kChunkBytes);
    if (!comm) return 4;
    std::string err;
    for (Algorithm a : {Algorithm::kRing, Algorithm::kTree}) {
      auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, kCount);
      if (!comm->allreduce(buf.data(), kCount, DType::kF32, ReduceOp::kSum, a, &err)) {
        *msg = err;
        return 5;
      }
    }
    std::vector<std::string> all;
    if (!rv->exchange("", &all, &err)) return 6;
    collector::shutdown();
    return 0;
  });
  ASSERT_EQ(test::failures(results), "");
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), static_cast<size_t>(n));

  // Expected message counts per rank. Ring: 2(n-1) steps x C chunks, C =
  // ceil(ceil(1000/3) / 64) = 6. Tree: per tree 500 elements = 8 chunks, one
  // message per chunk per tree edge and direction.
  const uint32_t ring_chunks = 6, tree_chunks = 8;
  int64_t total_sent = 0, total_recv = 0;
  for (const auto& f : files) {
    std::string err;
    auto reader = storage::TraceReader::open(f, &err);
    ASSERT_TRUE(reader) << err;
    auto ranks = reader->ranks();
    ASSERT_EQ(ranks.size(), 1u);
    int me = ranks[0].rank;
    ASSERT_GE(me, 0);
    std::map<int64_t, std::string> library_of;
    std::vector<int64_t> seqs;
    ASSERT_TRUE(reader->forEachCollective(
        [&](const storage::CollectiveRow& c) {
          library_of[c.id] = std::string(c.library);
          seqs.push_back(c.seq);
          EXPECT_EQ(c.op, "allreduce");
          EXPECT_EQ(c.dtype, "f32");
          EXPECT_EQ(c.reduce_op, "sum");
          EXPECT_EQ(c.bytes, static_cast<int64_t>(kCount * 4));
          EXPECT_EQ(c.count, static_cast<int64_t>(kCount));
          EXPECT_EQ(c.status, 0);
          EXPECT_EQ(c.algorithm, c.library == "ringside-ring" ? "ring" : "tree");
          EXPECT_EQ(std::string(c.comm).rfind("ringside/3/", 0), 0u) << c.comm;
          return true;
        },
        &err));
    ASSERT_EQ(library_of.size(), 2u);
    EXPECT_EQ(seqs, (std::vector<int64_t>{0, 1}));
    std::map<std::string, int> sends, recvs;  // per library
    ASSERT_TRUE(reader->forEachTransfer(
        [&](const storage::TransferRow& t) {
          auto it = library_of.find(t.collective_id);
          EXPECT_NE(it, library_of.end());
          if (it == library_of.end()) return true;
          bool send = t.side == "send";
          EXPECT_EQ(send ? t.src_rank : t.dst_rank, me);
          EXPECT_NE(send ? t.dst_rank : t.src_rank, me);
          EXPECT_LE(t.start_ns, t.end_ns);
          (send ? sends : recvs)[it->second]++;
          (send ? total_sent : total_recv) += t.bytes;
          if (it->second == "ringside-ring") {
            EXPECT_TRUE(t.phase == "reduce-scatter" || t.phase == "all-gather") << t.phase;
            EXPECT_GE(t.step, 0);
            EXPECT_LE(t.step, n - 2);
            EXPECT_LT(t.chunk, static_cast<int32_t>(ring_chunks));
          } else {
            EXPECT_TRUE(t.phase == "reduce" || t.phase == "broadcast") << t.phase;
            EXPECT_GE(t.step, 1);
            EXPECT_LT(t.chunk, static_cast<int32_t>(2 * tree_chunks));
          }
          return true;
        },
        &err));
    EXPECT_EQ(sends["ringside-ring"], static_cast<int>(2 * (n - 1) * ring_chunks));
    EXPECT_EQ(recvs["ringside-ring"], static_cast<int>(2 * (n - 1) * ring_chunks));
    int tree_msgs = 0;
    for (int t = 0; t < 2; ++t) {
      detail::TreeNode node = detail::treeNode(t, me, n);
      tree_msgs += static_cast<int>(tree_chunks) * (node.nchildren + (node.parent >= 0 ? 1 : 0));
    }
    EXPECT_EQ(sends["ringside-tree"], tree_msgs) << "rank " << me;
    EXPECT_EQ(recvs["ringside-tree"], tree_msgs) << "rank " << me;
  }
  EXPECT_EQ(total_sent, total_recv);
  // Ring: 2(n-1) segments of ~1/n each way per rank; tree adds its share.
  EXPECT_GT(total_sent, static_cast<int64_t>(n * 2 * (n - 1) * (kCount / n) * 4));
}

// Multipath over 3 ranks with no topology: the ring and its reverse, each on half the buffer. One
// collective per call (ringside-multipath / multipath), ring phases, every rank sending to and
// receiving from both peers the same number of messages, and rank 0's plan in the meta.
TEST(Trace, MultipathUsesBothDirections) {
  const int n = 3;
  const std::string dir = test_support::makeTempDir("reference-trace-mp");
  ASSERT_FALSE(dir.empty());
  auto results = test::runJob(n, [&](int rank, int nn, int port, std::string* msg) {
    ::setenv("RINGSIDE_DIR", dir.c_str(), 1);
    ::unsetenv("RINGSIDE_TOPOLOGY");
    if (!collector::activate()) {
      *msg = "collector did not activate";
      return 2;
    }
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 3;
    auto comm = test::makeComm(*rv, msg, kChunkBytes);
    if (!comm) return 4;
    std::string err;
    auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, kCount);
    if (!comm->allreduce(buf.data(), kCount, DType::kF32, ReduceOp::kSum, Algorithm::kMultipath,
                         &err)) {
      *msg = err;
      return 5;
    }
    std::vector<std::string> all;
    if (!rv->exchange("", &all, &err)) return 6;
    collector::shutdown();
    return 0;
  });
  ASSERT_EQ(test::failures(results), "");
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), static_cast<size_t>(n));
  bool plan_seen = false;
  for (const auto& f : files) {
    std::string err;
    auto reader = storage::TraceReader::open(f, &err);
    ASSERT_TRUE(reader) << err;
    int me = reader->ranks()[0].rank;
    auto meta = reader->meta();
    if (meta.count("multipath_plan") != 0) {
      plan_seen = true;
      EXPECT_NE(meta["multipath_plan"].find("2 rings over 6 of 6 links"), std::string::npos)
          << meta["multipath_plan"];
    }
    int calls = 0;
    ASSERT_TRUE(reader->forEachCollective(
        [&](const storage::CollectiveRow& c) {
          ++calls;
          EXPECT_EQ(c.library, "ringside-multipath");
          EXPECT_EQ(c.algorithm, "multipath");
          EXPECT_EQ(c.status, 0);
          return true;
        },
        &err));
    EXPECT_EQ(calls, 1);
    std::map<int, int> sends_to, recvs_from;
    ASSERT_TRUE(reader->forEachTransfer(
        [&](const storage::TransferRow& t) {
          EXPECT_TRUE(t.phase == "reduce-scatter" || t.phase == "all-gather") << t.phase;
          bool send = t.side == "send";
          (send ? sends_to[t.dst_rank] : recvs_from[t.src_rank])++;
          return true;
        },
        &err));
    // Each ring: 500 elements, segments of <= 167 = 3 chunks of 64, 2(n-1) steps.
    for (int peer = 0; peer < n; ++peer) {
      if (peer == me) continue;
      EXPECT_EQ(sends_to[peer], 2 * (n - 1) * 3) << "rank " << me << " to " << peer;
      EXPECT_EQ(recvs_from[peer], 2 * (n - 1) * 3) << "rank " << me << " from " << peer;
    }
  }
  EXPECT_TRUE(plan_seen) << "no rank file has the meta key multipath_plan";
}

// With no topology and ranks on several hosts, the communicator probes every host pair when it
// is created (prepare_multipath): here 4 "hosts" are 4 loopback addresses, 127.0.0.1-4, each
// with one rank, so the plan is made from 12 measured rates. The result is exact, the rates are
// in the trace meta, and the plan says where its capacities came from.
TEST(Trace, MultipathProbesHostPairsAtCreation) {
  const int n = 4;
  const std::string dir = test_support::makeTempDir("reference-trace-probe");
  ASSERT_FALSE(dir.empty());
  auto results = test::runJob(n, [&](int rank, int nn, int port, std::string* msg) {
    ::setenv("RINGSIDE_DIR", dir.c_str(), 1);
    ::unsetenv("RINGSIDE_TOPOLOGY");
    if (!collector::activate()) {
      *msg = "collector did not activate";
      return 2;
    }
    auto rv = test::joinRendezvous(rank, nn, port, msg);
    if (!rv) return 3;
    CommunicatorOptions o;
    o.rank = rank;
    o.world_size = nn;
    o.job_token = rv->jobToken();
    o.timeout = std::chrono::seconds(20);
    o.advertise_address = "127.0.0." + std::to_string(rank + 1);
    o.listen_address = o.advertise_address;
    o.prepare_multipath = true;
    auto comm = Communicator::create(
        o,
        [&rv](const std::string& mine, std::vector<std::string>* all, std::string* e) {
          return rv->exchange(mine, all, e);
        },
        msg);
    if (!comm) return 4;
    std::string err;
    auto buf = test::makeInput(DType::kF32, ReduceOp::kSum, rank, kCount);
    if (!comm->allreduce(buf.data(), kCount, DType::kF32, ReduceOp::kSum, Algorithm::kMultipath,
                         &err)) {
      *msg = err;
      return 5;
    }
    if (size_t wrong = test::countWrong(DType::kF32, ReduceOp::kSum, nn, buf.data(), kCount, &err);
        wrong != 0) {
      *msg = std::to_string(wrong) + " wrong, " + err;
      return 6;
    }
    std::vector<std::string> all;
    if (!rv->exchange("", &all, &err)) return 7;
    collector::shutdown();
    return 0;
  });
  ASSERT_EQ(test::failures(results), "");
  bool probe_seen = false, plan_seen = false;
  for (const auto& f : rankFiles(dir)) {
    std::string err;
    auto reader = storage::TraceReader::open(f, &err);
    ASSERT_TRUE(reader) << err;
    auto meta = reader->meta();
    if (meta.count("multipath_probe") != 0) {
      probe_seen = true;
      const std::string& p = meta["multipath_probe"];
      size_t pairs = 0;
      for (size_t at = p.find("->"); at != std::string::npos; at = p.find("->", at + 2)) ++pairs;
      EXPECT_EQ(pairs, 12u) << p;
      EXPECT_NE(p.find("; all at once, received in all: 127.0.0.1 "), std::string::npos) << p;
      EXPECT_NE(p.find("127.0.0.1->127.0.0.2 "), std::string::npos) << p;
      EXPECT_EQ(p.find(" 0.0 MB/s"), std::string::npos) << "a pair without a rate: " << p;
    }
    if (meta.count("multipath_plan") != 0) {
      plan_seen = true;
      EXPECT_NE(meta["multipath_plan"].find("probe of every host pair"), std::string::npos)
          << meta["multipath_plan"];
    }
  }
  EXPECT_TRUE(probe_seen) << "no rank file has the meta key multipath_probe";
  EXPECT_TRUE(plan_seen) << "no rank file has the meta key multipath_plan";
}

}  // namespace
}  // namespace ringside::reference
