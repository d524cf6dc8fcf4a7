// RankWriter: round trip, NULL mapping, interning, exclusive create, WAL
// durability of committed batches, and the failure paths.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <set>

#include "ringside/storage/rank_writer.h"
#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

class RankWriterTest : public TempDirTest {};

TEST_F(RankWriterTest, RoundTripMapsSentinelsToNullAndBack) {
  const std::string file = path("rank.sqlite");
  std::string err;
  auto w = RankWriter::create(file, &err);
  ASSERT_TRUE(w) << err;
  RankInfo info;
  info.rank = 2;
  info.world_size = 4;
  info.host = "h";
  info.pid = 77;
  ASSERT_TRUE(w->setRank(info)) << w->error();
  ASSERT_TRUE(w->setMeta("run_id", "r1"));
  ASSERT_TRUE(w->setMeta("run_id", "r2"));  // replaces
  ASSERT_TRUE(w->begin());
  CollectiveRow c;
  c.id = 7;
  c.rank = 2;
  c.comm = "c0";
  c.seq = 3;
  c.op = "allreduce";
  c.library = "gloo";
  c.bytes = 4096;
  c.count = 1024;
  c.dtype = "";  // unknown -> NULL
  c.start_ns = 100;
  c.end_ns = kNone;  // never returned
  c.root = -1;
  c.tid = 9;
  c.status = 1;
  ASSERT_TRUE(w->addCollective(c)) << w->error();
  TransferRow t;  // id 0: assigned by the writer
  t.collective_id = 7;
  t.src_rank = 2;
  t.dst_rank = 3;
  t.bytes = 10;
  t.start_ns = 110;
  t.end_ns = kNone;
  t.side = "send";
  ASSERT_TRUE(w->addTransfer(t)) << w->error();
  t.collective_id = kNone;
  t.start_ns = 120;
  t.end_ns = 130;
  t.phase = "all-gather";
  t.step = 1;
  t.chunk = 2;
  t.slot = 99;
  ASSERT_TRUE(w->addTransfer(t)) << w->error();
  ASSERT_TRUE(w->commit()) << w->error();
  ASSERT_TRUE(w->close());
  ASSERT_TRUE(w->close());  // idempotent
  EXPECT_FALSE(w->begin());

  // Physical storage: NULLs, interning, assigned ids.
  EXPECT_EQ(sqlInt(file, "SELECT count(*) FROM collective_data WHERE dtype_sid IS NULL AND end_ns IS NULL"
                         " AND root IS NULL AND reduce_op_sid IS NULL AND algorithm_sid IS NULL"), 1);
  EXPECT_EQ(sqlInt(file, "SELECT count(*) FROM transfer_data WHERE collective_id IS NULL AND slot = 99"), 1);
  EXPECT_EQ(sqlInt(file, "SELECT count(*) FROM transfer_data WHERE end_ns IS NULL AND step IS NULL"
                         " AND chunk IS NULL AND slot IS NULL AND phase_sid IS NULL"), 1);
  EXPECT_EQ(sqlInt(file, "SELECT count(*) FROM string WHERE value = 'send'"), 1);
  EXPECT_EQ(sqlInt(file, "SELECT count(*) FROM string"), 5);  // c0 allreduce gloo send all-gather
  EXPECT_EQ(sqlInt(file, "SELECT min(id) FROM transfer_data"), 1);
  EXPECT_EQ(sqlInt(file, "SELECT max(id) FROM transfer_data"), 2);
  EXPECT_EQ(sqlInt(file, "SELECT min(rank) FROM transfer_data"), 2);  // recording rank filled
  EXPECT_EQ(sqlText(file, "SELECT op FROM collective"), "allreduce");
  EXPECT_EQ(sqlText(file, "SELECT side FROM transfer WHERE id = 1"), "send");
  EXPECT_EQ(sqlInt(file, "PRAGMA user_version"), kSchemaVersion);
  // close() leaves one self-contained file (rollback-journal mode, no -wal).
  EXPECT_EQ(sqlText(file, "PRAGMA journal_mode"), "delete");
  EXPECT_FALSE(fileExists(file + "-wal"));

  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->schemaVersion(), kSchemaVersion);
  EXPECT_EQ(r->meta()["run_id"], "r2");
  EXPECT_EQ(r->meta()["schema_version"], std::to_string(kSchemaVersion));
  auto ranks = r->ranks();
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].rank, 2);
  EXPECT_EQ(ranks[0].local_rank, -1);
  EXPECT_EQ(ranks[0].host, "h");
  EXPECT_EQ(ranks[0].launcher, "");
  int n = 0;
  ASSERT_TRUE(r->forEachCollective(
      [&](const CollectiveRow& row) {
        ++n;
        EXPECT_EQ(row.id, 7);
        EXPECT_EQ(row.comm, "c0");
        EXPECT_EQ(row.op, "allreduce");
        EXPECT_EQ(row.library, "gloo");
        EXPECT_EQ(row.dtype, "");
        EXPECT_EQ(row.reduce_op, "");
        EXPECT_EQ(row.end_ns, kNone);
        EXPECT_EQ(row.root, -1);
        EXPECT_EQ(row.seq, 3);
        EXPECT_EQ(row.bytes, 4096);
        EXPECT_EQ(row.count, 1024);
        EXPECT_EQ(row.tid, 9);
        EXPECT_EQ(row.status, 1);
        return true;
      },
      &err))
      << err;
  EXPECT_EQ(n, 1);
  std::vector<TransferRow> ts;
  std::vector<std::string> phases;
  ASSERT_TRUE(r->forEachTransfer(
      [&](const TransferRow& row) {
        ts.push_back(row);
        phases.emplace_back(row.phase);
        return true;
      },
      &err));
  ASSERT_EQ(ts.size(), 2u);
  EXPECT_EQ(ts[0].collective_id, 7);
  EXPECT_EQ(ts[0].end_ns, kNone);
  EXPECT_EQ(ts[0].step, -1);
  EXPECT_EQ(ts[0].slot, kNone);
  EXPECT_EQ(phases[0], "");
  EXPECT_EQ(ts[1].collective_id, kNone);
  EXPECT_EQ(ts[1].slot, 99);
  EXPECT_EQ(ts[1].step, 1);
  EXPECT_EQ(ts[1].chunk, 2);
  EXPECT_EQ(phases[1], "all-gather");
  EXPECT_EQ(r->collectiveCount(), 1);
  EXPECT_EQ(r->transferCount(), 2);
}

TEST_F(RankWriterTest, ExplicitTransferIdsAdvanceTheAssignedOnes) {
  const std::string file = path("ids.sqlite");
  std::string err;
  auto w = RankWriter::create(file, &err);
  ASSERT_TRUE(w) << err;
  ASSERT_TRUE(w->begin());
  TransferRow t;
  t.side = "recv";
  t.id = 10;
  ASSERT_TRUE(w->addTransfer(t));
  t.id = 0;
  ASSERT_TRUE(w->addTransfer(t));
  ASSERT_TRUE(w->commit());
  ASSERT_TRUE(w->close());
  EXPECT_EQ(sqlInt(file, "SELECT max(id) FROM transfer_data"), 11);
}

TEST_F(RankWriterTest, CreateIsExclusive) {
  const std::string file = path("x.sqlite");
  std::string err;
  auto w = RankWriter::create(file, &err);
  ASSERT_TRUE(w) << err;
  auto w2 = RankWriter::create(file, &err);
  EXPECT_FALSE(w2);
  EXPECT_TRUE(isOneLine(err)) << err;
  EXPECT_NE(err.find(file), std::string::npos) << err;
  EXPECT_NE(err.find("exists"), std::string::npos) << err;
  // The first writer is unaffected.
  EXPECT_TRUE(w->begin());
  EXPECT_TRUE(w->commit());
}

TEST_F(RankWriterTest, CreateInMissingFolderFailsWithOneLine) {
  const std::string file = path("no/such/dir/r.sqlite");
  std::string err;
  auto w = RankWriter::create(file, &err);
  EXPECT_FALSE(w);
  EXPECT_TRUE(isOneLine(err)) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
}

TEST_F(RankWriterTest, CreateInReadOnlyFolderFails) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores folder permissions";
  const std::string ro = path("ro");
  ASSERT_EQ(::mkdir(ro.c_str(), 0500), 0);
  std::string err;
  EXPECT_FALSE(RankWriter::create(ro + "/r.sqlite", &err));
  EXPECT_TRUE(isOneLine(err)) << err;
}

TEST_F(RankWriterTest, MisuseFailsWithoutPoisoning) {
  std::string err;
  auto w = RankWriter::create(path("m.sqlite"), &err);
  ASSERT_TRUE(w) << err;
  CollectiveRow c;
  EXPECT_FALSE(w->addCollective(c));
  EXPECT_NE(w->error().find("outside"), std::string::npos);
  EXPECT_FALSE(w->commit());
  EXPECT_TRUE(w->begin());
  EXPECT_FALSE(w->begin());
  EXPECT_TRUE(w->addCollective(c));
  EXPECT_TRUE(w->commit());
}

TEST_F(RankWriterTest, DuplicateCollectiveIdPoisonsTheWriter) {
  std::string err;
  auto w = RankWriter::create(path("d.sqlite"), &err);
  ASSERT_TRUE(w) << err;
  CollectiveRow c;
  c.id = 1;
  ASSERT_TRUE(w->begin());
  ASSERT_TRUE(w->addCollective(c));
  EXPECT_FALSE(w->addCollective(c));
  EXPECT_TRUE(isOneLine(w->error())) << w->error();
  EXPECT_NE(w->error().find("UNIQUE"), std::string::npos) << w->error();
  // Failed for good: every later call fails, none crashes.
  EXPECT_FALSE(w->commit());
  EXPECT_FALSE(w->begin());
  EXPECT_FALSE(w->setMeta("k", "v"));
  EXPECT_FALSE(w->setRank(RankInfo{}));
  EXPECT_FALSE(w->close());
}

TEST_F(RankWriterTest, CommittedBatchesAreVisibleWhileTheWriterIsOpen) {
  const std::string file = path("live.sqlite");
  std::string err;
  auto w = RankWriter::create(file, &err);
  ASSERT_TRUE(w) << err;
  RankInfo info;
  info.rank = 0;
  ASSERT_TRUE(w->setRank(info));
  ASSERT_TRUE(w->begin());
  CollectiveRow c;
  for (int i = 0; i < 100; ++i) {
    c.id = i;
    ASSERT_TRUE(w->addCollective(c));
  }
  ASSERT_TRUE(w->commit());
  ASSERT_TRUE(w->begin());
  for (int i = 100; i < 150; ++i) {
    c.id = i;
    ASSERT_TRUE(w->addCollective(c));
  }
  // Another connection sees the committed batch only.
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->collectiveCount(), 100);
  ASSERT_TRUE(w->commit());
  EXPECT_EQ(r->collectiveCount(), 150);
  EXPECT_TRUE(w->close());  // a reader still open: close still succeeds
}

// A process killed mid-batch keeps every committed batch (WAL recovery).
TEST_F(RankWriterTest, KilledWriterKeepsCommittedBatches) {
  const std::string file = path("killed.sqlite");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string err;
    auto w = RankWriter::create(file, &err);
    if (!w) ::_exit(2);
    CollectiveRow c;
    bool ok = w->begin();
    for (int i = 0; i < 1000 && ok; ++i) {
      c.id = i;
      ok = w->addCollective(c);
    }
    ok = ok && w->commit() && w->begin();
    for (int i = 1000; i < 2000 && ok; ++i) {
      c.id = i;
      ok = w->addCollective(c);
    }
    if (!ok) ::_exit(3);
    ::raise(SIGKILL);
    ::_exit(4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exit " << WEXITSTATUS(status);
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->collectiveCount(), 1000);
  EXPECT_EQ(r->meta().count("end_state"), 0u);
}

// fork() without exec: the child must leave the parent's database alone, even
// when it destroys its copy of the writer.
TEST_F(RankWriterTest, ForkedChildLeavesTheParentsFileAlone) {
  const std::string file = path("fork.sqlite");
  std::string err;
  auto w = RankWriter::create(file, &err);
  ASSERT_TRUE(w) << err;
  CollectiveRow c;
  ASSERT_TRUE(w->begin());
  for (int i = 0; i < 500; ++i) {
    c.id = i;
    ASSERT_TRUE(w->addCollective(c));
  }
  ASSERT_TRUE(w->commit());
  ASSERT_TRUE(w->begin());
  c.id = 500;
  ASSERT_TRUE(w->addCollective(c));  // the parent has a batch open across the fork
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const bool refused = !w->commit() && !w->begin() && !w->setMeta("k", "v");
    w->close();
    w.reset();
    ::_exit(refused ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  c.id = 501;
  ASSERT_TRUE(w->addCollective(c)) << w->error();
  ASSERT_TRUE(w->commit()) << w->error();
  ASSERT_TRUE(w->close()) << w->error();
  EXPECT_EQ(sqlText(file, "PRAGMA quick_check"), "ok");
  EXPECT_EQ(sqlInt(file, "SELECT count(*) FROM collective_data"), 502);
}

// Disk full / file size limit: the writer fails with one line and stays failed.
TEST_F(RankWriterTest, FileSizeLimitTurnsIntoAOneLineFailure) {
  const std::string file = path("full.sqlite");
  int pipefd[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(pipefd[0]);
    ::signal(SIGXFSZ, SIG_IGN);  // as the collector's writer thread does
    rlimit lim{};
    lim.rlim_cur = lim.rlim_max = 512 * 1024;  // room for the schema's pages in the WAL
    if (::setrlimit(RLIMIT_FSIZE, &lim) != 0) ::_exit(2);
    std::string err;
    auto w = RankWriter::create(file, &err);
    if (!w) ::_exit(3);
    CollectiveRow c;
    c.comm = "world";
    c.op = "allreduce";
    bool failed = false;
    for (int batch = 0; batch < 200 && !failed; ++batch) {
      failed = !w->begin();
      for (int i = 0; i < 1000 && !failed; ++i) {
        c.id = batch * 1000 + i;
        failed = !w->addCollective(c);
      }
      failed = failed || !w->commit();
    }
    const std::string msg = w->error();
    const bool stays_failed = !w->begin() && !w->setMeta("a", "b") && !w->commit() && !w->close();
    const std::string report = std::string(failed ? "F" : "f") + (stays_failed ? "S" : "s") + msg;
    if (::write(pipefd[1], report.data(), report.size()) < 0) ::_exit(5);
    ::_exit(0);
  }
  ::close(pipefd[1]);
  std::string report;
  char buf[512];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0) report.append(buf, static_cast<size_t>(n));
  ::close(pipefd[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GE(report.size(), 3u);
  EXPECT_EQ(report[0], 'F') << report;
  EXPECT_EQ(report[1], 'S') << report;
  const std::string msg = report.substr(2);
  if (std::getenv("RINGSIDE_TEST_VERBOSE")) std::printf("writer error: %s\n", msg.c_str());
  EXPECT_TRUE(isOneLine(msg)) << msg;
  EXPECT_NE(msg.find(file), std::string::npos) << msg;
  // Committed batches before the failure are still readable.
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_GT(r->collectiveCount(), 0);
}

TEST_F(RankWriterTest, OddPathIsNotReadAsAUri) {
  const std::string file = path("file:odd ?mode=memory#x%41.sqlite");
  RankFileSpec spec;
  writeRankFile(file, spec);
  EXPECT_TRUE(fileExists(file));
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->collectiveCount(), spec.collectives);
}

}  // namespace
}  // namespace ringside::storage::testing
