// Schema v2: the GPU tables (collective_gpu_data, gpu_activity_data,
// communicator_data) and transfer_data.channel, through the writer, the
// merger and the reader; version-1 files stay readable.
#include <vector>

#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

class GpuTablesTest : public TempDirTest {
 protected:
  // A rank file with 2 NCCL collectives, GPU details arriving in two parts,
  // kernels linked to them, a copy, and a communicator created then destroyed.
  std::string write(int rank, int64_t first_id) {
    const std::string file = path("rank-" + std::to_string(rank) + ".sqlite");
    std::string err;
    auto w = RankWriter::create(file, &err);
    EXPECT_TRUE(w) << err;
    RankInfo info;
    info.rank = rank;
    info.world_size = 2;
    EXPECT_TRUE(w->setRank(info));
    EXPECT_TRUE(w->begin());
    for (int i = 0; i < 2; ++i) {
      CollectiveRow c;
      c.id = first_id + i;
      c.rank = rank;
      c.comm = "nccl/00ff";
      c.seq = i;
      c.op = "allreduce";
      c.library = "nccl";
      c.bytes = 1024;
      c.count = 256;
      c.start_ns = 1000 * (i + 1);
      c.end_ns = 1000 * (i + 1) + 10;
      EXPECT_TRUE(w->addCollective(c));
      CollectiveGpuRow g;  // first what the API call knew
      g.collective_id = c.id;
      g.group_id = 7;
      g.stream = 0;  // the default stream is a real value
      g.device = rank;
      EXPECT_TRUE(w->addCollectiveGpu(g));
      CollectiveGpuRow later;  // then the profiler's part; its unknowns erase nothing
      later.collective_id = c.id;
      later.gpu_start_ns = c.start_ns + 50;
      later.gpu_end_ns = c.start_ns + 500;
      later.algorithm = "ring";
      later.protocol = "LL128";
      later.channels = 4;
      EXPECT_TRUE(w->addCollectiveGpu(later));
      GpuActivityRow k;
      k.kind = "kernel";
      k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL128";
      k.start_ns = later.gpu_start_ns;
      k.end_ns = later.gpu_end_ns;
      k.device = rank;
      k.stream = 13;
      k.correlation_id = 100 + i;
      k.collective_id = c.id;
      EXPECT_TRUE(w->addGpuActivity(k));
      TransferRow t;
      t.collective_id = c.id;
      t.src_rank = rank;
      t.dst_rank = 1 - rank;
      t.bytes = 512;
      t.start_ns = later.gpu_start_ns;
      t.end_ns = later.gpu_end_ns;
      t.side = "send";
      t.channel = i;
      EXPECT_TRUE(w->addTransfer(t));
    }
    GpuActivityRow copy;
    copy.kind = "memcpy";
    copy.start_ns = 5000;
    copy.end_ns = 5100;
    copy.bytes = 4096;
    copy.copy_kind = "HtoD";
    EXPECT_TRUE(w->addGpuActivity(copy));
    CommunicatorRow m;
    m.comm = "nccl/00ff";
    m.library = "nccl";
    m.comm_rank = rank;
    m.comm_size = 2;
    m.created_ns = 500;
    m.topology = "ring 0: 0 1";
    EXPECT_TRUE(w->addCommunicator(m));
    CommunicatorRow end;  // destroy: only what is new
    end.comm = "nccl/00ff";
    end.ended_ns = 9000;
    end.end_state = "destroyed";
    EXPECT_TRUE(w->addCommunicator(end));
    EXPECT_TRUE(w->commit()) << w->error();
    EXPECT_TRUE(w->close());
    return file;
  }
};

TEST_F(GpuTablesTest, RankFileRoundTripAndUpsertsFillWithoutErasing) {
  const std::string f = write(1, 1);
  EXPECT_EQ(sqlInt(f, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM collective WHERE protocol = 'LL128' AND channels = 4"
                      " AND algorithm = 'ring' AND group_id = 7 AND stream = 0 AND device = 1"
                      " AND gpu_end_ns - gpu_start_ns = 450"), 2);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM communicator WHERE end_state = 'destroyed' AND created_ns = 500"
                      " AND ended_ns = 9000 AND topology = 'ring 0: 0 1' AND comm_size = 2 AND rank = 1"), 1);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel' AND collective_id IS NOT NULL"), 2);
  EXPECT_EQ(sqlInt(f, "SELECT sum(channel) FROM transfer"), 1);

  std::string err;
  auto r = TraceReader::open(f, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->gpuActivityCount(), 3);
  std::vector<CollectiveGpuRow> gpu;
  std::vector<std::string> algorithms;
  ASSERT_TRUE(r->forEachCollectiveGpu([&](const CollectiveGpuRow& g) {
    gpu.push_back(g);
    algorithms.emplace_back(g.algorithm);
    return true;
  }, &err)) << err;
  ASSERT_EQ(gpu.size(), 2u);
  EXPECT_EQ(gpu[0].collective_id, 1);
  EXPECT_EQ(gpu[0].channels, 4);
  EXPECT_EQ(gpu[0].stream, 0);
  EXPECT_EQ(gpu[0].group_id, 7);
  EXPECT_EQ(algorithms[1], "ring");
  int kernels = 0, copies = 0;
  ASSERT_TRUE(r->forEachGpuActivity([&](int32_t rank, const GpuActivityRow& a) {
    EXPECT_EQ(rank, 1);
    if (a.kind == "kernel") ++kernels;
    if (a.kind == "memcpy") {
      ++copies;
      EXPECT_EQ(a.bytes, 4096);
      EXPECT_EQ(a.copy_kind, "HtoD");
      EXPECT_EQ(a.collective_id, kNone);
    }
    return true;
  }, &err)) << err;
  EXPECT_EQ(kernels, 2);
  EXPECT_EQ(copies, 1);
  int comms = 0;
  ASSERT_TRUE(r->forEachCommunicator([&](int32_t rank, const CommunicatorRow& m) {
    ++comms;
    EXPECT_EQ(rank, 1);
    EXPECT_EQ(m.topology, "ring 0: 0 1");
    EXPECT_EQ(m.end_state, "destroyed");
    return true;
  }, &err)) << err;
  EXPECT_EQ(comms, 1);
  std::vector<int32_t> channels;
  ASSERT_TRUE(r->forEachTransfer([&](const TransferRow& t) {
    channels.push_back(t.channel);
    return true;
  }, &err));
  EXPECT_EQ(channels, (std::vector<int32_t>{0, 1}));
}

TEST_F(GpuTablesTest, MergeMovesCollectiveIdsOfTheGpuTablesWithTheirCalls) {
  MergeOptions o;
  o.inputs = {write(0, 1), write(1, 1)};  // both files use ids 1, 2
  o.output = path("merged.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  const std::string& f = o.output;
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM collective_gpu_data"), 4);
  // Every GPU row and every kernel points at a collective of its own rank.
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM collective WHERE channels = 4 AND device = rank"), 4);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM gpu_activity a JOIN collective c ON c.id = a.collective_id"
                      " WHERE c.rank = a.rank AND a.start_ns = c.gpu_start_ns"), 4);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM gpu_activity WHERE kind = 'memcpy' AND collective_id IS NULL"), 2);
  EXPECT_EQ(sqlInt(f, "SELECT count(DISTINCT rank) FROM communicator WHERE end_state = 'destroyed'"), 2);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM transfer WHERE channel IS NOT NULL"), 4);
}

TEST_F(GpuTablesTest, VersionOneFilesStayReadable) {
  const std::string f = write(0, 1);
  // Turn it into what ringside 0.1 wrote: no v2 tables, no channel column.
  sqlExec(f, "DROP VIEW collective; DROP VIEW transfer; DROP VIEW gpu_activity; DROP VIEW communicator;"
             "DROP TABLE collective_gpu_data; DROP TABLE gpu_activity_data; DROP TABLE communicator_data;"
             "ALTER TABLE transfer_data DROP COLUMN channel; PRAGMA user_version=1;");
  std::string err;
  auto r = TraceReader::open(f, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->schemaVersion(), 1);
  EXPECT_EQ(r->gpuActivityCount(), 0);
  int transfers = 0, visited = 0;
  ASSERT_TRUE(r->forEachTransfer([&](const TransferRow& t) {
    EXPECT_EQ(t.channel, -1);
    ++transfers;
    return true;
  }, &err)) << err;
  EXPECT_EQ(transfers, 2);
  ASSERT_TRUE(r->forEachCollectiveGpu([&](const CollectiveGpuRow&) { return ++visited, true; }, &err));
  ASSERT_TRUE(r->forEachGpuActivity([&](int32_t, const GpuActivityRow&) { return ++visited, true; }, &err));
  ASSERT_TRUE(r->forEachCommunicator([&](int32_t, const CommunicatorRow&) { return ++visited, true; }, &err));
  EXPECT_EQ(visited, 0);
  // And merging a version-1 rank file gives a version-2 trace with its rows.
  MergeOptions o;
  o.inputs = {f};
  o.output = path("merged-v1.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(sqlInt(o.output, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM transfer WHERE channel IS NULL"), 2);
}

TEST_F(GpuTablesTest, VersionTwoFileWithoutItsTablesIsRefused) {
  const std::string f = write(0, 1);
  sqlExec(f, "DROP VIEW gpu_activity; DROP TABLE gpu_activity_data;");
  std::string err;
  EXPECT_FALSE(TraceReader::open(f, &err));
  EXPECT_NE(err.find("gpu_activity_data"), std::string::npos) << err;
  EXPECT_TRUE(isOneLine(err));
}

}  // namespace
}  // namespace ringside::storage::testing
