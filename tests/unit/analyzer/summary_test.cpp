// summarize() on a two-rank trace written with RankWriter and merged with
// mergeRankFiles; every expected number is worked out by hand in the comments.
#include "ringside/analyzer/summary.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <random>
#include <tuple>

#include <filesystem>

#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"

namespace ringside::analyzer {
namespace {
namespace fs = std::filesystem;
using storage::CollectiveRow;
using storage::TransferRow;

CollectiveRow coll(int64_t id, int rank, int64_t seq, const char* op, int64_t bytes, int64_t start,
                   int64_t end, int tid = 1) {
  CollectiveRow row;
  row.id = id;
  row.rank = rank;
  row.comm = "world";
  row.seq = seq;
  row.op = op;
  row.library = "gloo";
  row.bytes = bytes;
  row.count = bytes / 4;
  row.dtype = "f32";
  row.start_ns = start;
  row.end_ns = end;
  row.tid = tid;
  return row;
}

TransferRow xfer(int64_t collective, int src, int dst, const char* side, int64_t bytes,
                 int64_t start, int64_t end) {
  TransferRow row;
  row.collective_id = collective;
  row.src_rank = src;
  row.dst_rank = dst;
  row.side = side;
  row.bytes = bytes;
  row.start_ns = start;
  row.end_ns = end;
  return row;
}

class SummaryTest : public testing::Test {
 public:
  void SetUp() override {
    dir_ = test_support::makeTempDir("summary-test");
    writeRank0();
    writeRank1();
  }
  void TearDown() override { test_support::removeTempDir(dir_); }

  std::unique_ptr<storage::RankWriter> create(int rank) {
    std::string error;
    auto writer = storage::RankWriter::create(rankFile(rank), &error);
    EXPECT_NE(writer, nullptr) << error;
    storage::RankInfo info;
    info.rank = rank;
    info.world_size = 3;  // rank 2 never shows up: missing
    info.local_rank = rank;
    info.host = "testhost";
    info.pid = 100 + rank;
    info.launcher = "ringside";
    info.identity_source = "env";
    EXPECT_TRUE(writer->setRank(info)) << writer->error();
    return writer;
  }

  // Rank 0: two overlapping allreduces on two threads, one broadcast.
  //   comm union = [1000,2500] + [3000,3500] = 1500 + 500 = 2000
  //   collective span = 1000..3500 = 2500; first event is the send at 800: 800..3500 = 2700
  // Sends 0->1: [800,900] 10 B, [1100,1300] 50 B, [1200,1600] 50 B
  //   -> 3 messages, 110 B; busy from the receiving side (rank 1's recv [1150,1350]): 200
  // Recv 1->0 (rank 1 recorded no sends): [1000,1400] 30 B -> from_recv, busy 400
  void writeRank0() {
    auto w = create(0);
    ASSERT_TRUE(w->begin());
    ASSERT_TRUE(w->addCollective(coll(1, 0, 0, "allreduce", 100, 1000, 2000, 1)));
    ASSERT_TRUE(w->addCollective(coll(2, 0, 0, "allreduce", 100, 1500, 2500, 2)));
    ASSERT_TRUE(w->addCollective(coll(3, 0, 1, "broadcast", 40, 3000, 3500)));
    ASSERT_TRUE(w->addTransfer(xfer(storage::kNone, 0, 1, "send", 10, 800, 900)));
    ASSERT_TRUE(w->addTransfer(xfer(1, 1, 0, "recv", 30, 1000, 1400)));
    ASSERT_TRUE(w->addTransfer(xfer(1, 0, 1, "send", 50, 1100, 1300)));
    ASSERT_TRUE(w->addTransfer(xfer(2, 0, 1, "send", 50, 1200, 1600)));
    ASSERT_TRUE(w->commit()) << w->error();
    ASSERT_TRUE(w->setMeta("events_emitted", "12"));
    ASSERT_TRUE(w->setMeta("events_recorded", "7"));
    ASSERT_TRUE(w->setMeta("events_dropped", "5"));
    ASSERT_TRUE(w->setMeta("interposition", "active"));
    ASSERT_TRUE(w->setMeta("end_state", "clean"));
    ASSERT_TRUE(w->close()) << w->error();
  }

  // Rank 1: cut off (no end_state), interposition inactive.
  //   comm = 800 + 100 = 900; span of events 1000..3100 = 2100
  //   its recv of 0->1 gives that link's busy time; bytes and messages come from the sends.
  void writeRank1() {
    auto w = create(1);
    ASSERT_TRUE(w->begin());
    ASSERT_TRUE(w->addCollective(coll(1, 1, 0, "allreduce", 100, 1000, 1800)));
    ASSERT_TRUE(w->addCollective(coll(2, 1, 1, "broadcast", 40, 3000, 3100)));
    ASSERT_TRUE(w->addTransfer(xfer(1, 0, 1, "recv", 50, 1150, 1350)));
    ASSERT_TRUE(w->commit()) << w->error();
    ASSERT_TRUE(w->setMeta("events_dropped", "0"));
    ASSERT_TRUE(w->setMeta("interposition", "inactive: gloo is linked statically"));
    ASSERT_TRUE(w->close()) << w->error();
  }

  std::string rankFile(int rank) const {
    return (dir_ / ("rank-" + std::to_string(rank) + ".sqlite")).string();
  }

  std::string merge() {
    storage::MergeOptions options;
    options.inputs = {rankFile(0), rankFile(1)};
    options.output = (dir_ / "merged.sqlite").string();
    storage::MergeResult result = storage::mergeRankFiles(options);
    EXPECT_TRUE(result.ok) << result.error;
    return options.output;
  }

  Summary summarizeFile(const std::string& path) {
    std::string error;
    auto reader = storage::TraceReader::open(path, &error);
    EXPECT_NE(reader, nullptr) << error;
    Summary summary;
    if (reader != nullptr) {
      EXPECT_TRUE(summarize(*reader, &summary, &error)) << error;
    }
    return summary;
  }

  fs::path dir_;
};

TEST_F(SummaryTest, MergedTrace) {
  Summary s = summarizeFile(merge());
  EXPECT_EQ(s.world_size, 3);
  EXPECT_EQ(s.ranks_present, 2);
  EXPECT_EQ(s.missing_ranks, std::vector<int>{2});
  EXPECT_EQ(s.cut_off_ranks, std::vector<int>{1});
  EXPECT_EQ(s.dropped_events, 5);
  EXPECT_EQ(s.dropped_by_rank, (std::map<int, int64_t>{{0, 5}}));
  EXPECT_EQ(s.collectives, 5);
  EXPECT_EQ(s.transfers, 5);

  ASSERT_EQ(s.warnings.size(), 2u);
  bool inactive = false;
  bool dropped = false;
  for (const std::string& w : s.warnings) {
    inactive = inactive || w == "rank 1: interposition inactive: gloo is linked statically";
    dropped = dropped || w.find("5 events dropped") != std::string::npos;
  }
  EXPECT_TRUE(inactive);
  EXPECT_TRUE(dropped);

  // Per instance (comm, seq), as the report counts (docs/metrics.md). allreduce seq 0: three
  // rows (rank 0 twice, rank 1), last entry 1500, last return 2500: one call of 1000 ns;
  // broadcast seq 1: last entry 3000, last return 3500: 500 ns.
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(s.ops[0].op, "allreduce");
  EXPECT_EQ(s.ops[0].library, "gloo");
  EXPECT_EQ(s.ops[0].calls, 1);
  EXPECT_EQ(s.ops[0].bytes, 100);
  EXPECT_EQ(s.ops[0].time_ns, 1000);
  EXPECT_EQ(s.ops[0].sum_ns, 1000);
  EXPECT_EQ(s.ops[1].op, "broadcast");
  EXPECT_EQ(s.ops[1].calls, 1);
  EXPECT_EQ(s.ops[1].bytes, 40);
  EXPECT_EQ(s.ops[1].time_ns, 500);

  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[0].rank, 0);
  EXPECT_EQ(s.ranks[0].host, "testhost");
  EXPECT_EQ(s.ranks[0].pid, 100);
  EXPECT_EQ(s.ranks[0].calls, 3);
  EXPECT_EQ(s.ranks[0].comm_ns, 2000);
  EXPECT_EQ(s.ranks[0].span_ns, 2500);
  EXPECT_EQ(s.ranks[0].trace_span_ns, 2700);
  EXPECT_FALSE(s.ranks[0].cut_off);
  EXPECT_EQ(s.ranks[1].rank, 1);
  EXPECT_EQ(s.ranks[1].calls, 2);
  EXPECT_EQ(s.ranks[1].comm_ns, 900);
  EXPECT_EQ(s.ranks[1].span_ns, 2100);
  EXPECT_EQ(s.ranks[1].trace_span_ns, 2100);
  EXPECT_TRUE(s.ranks[1].cut_off);

  ASSERT_EQ(s.links.size(), 2u);
  EXPECT_EQ(s.links[0].src, 0);
  EXPECT_EQ(s.links[0].dst, 1);
  EXPECT_EQ(s.links[0].messages, 3);
  EXPECT_EQ(s.links[0].bytes, 110);
  EXPECT_EQ(s.links[0].busy_ns, 200);
  EXPECT_FALSE(s.links[0].from_recv);
  EXPECT_EQ(s.links[1].src, 1);
  EXPECT_EQ(s.links[1].dst, 0);
  EXPECT_EQ(s.links[1].messages, 1);
  EXPECT_EQ(s.links[1].bytes, 30);
  EXPECT_EQ(s.links[1].busy_ns, 400);
  EXPECT_TRUE(s.links[1].from_recv);
}

TEST_F(SummaryTest, SingleRankFile) {
  Summary s = summarizeFile(rankFile(1));
  EXPECT_EQ(s.world_size, 3);
  EXPECT_EQ(s.ranks_present, 1);
  // A rank file read alone: the world's other ranks are not in it (said, not left silent).
  EXPECT_EQ(s.missing_ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(s.cut_off_ranks, std::vector<int>{1});  // no end_state
  EXPECT_EQ(s.dropped_events, 0);
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks[0].comm_ns, 900);
  ASSERT_EQ(s.links.size(), 1u);
  EXPECT_TRUE(s.links[0].from_recv);
}

// Two calls (seq 0, seq 1) on ranks 0 and 1; rank 0 enters seq 0 at 1200 and seq 1 at 2500;
// rank 1 receives `recvs` on link 0->1, stored in the order given (the fixture's ranks give way).
void writeReceivingPair(SummaryTest* t, const std::vector<TransferRow>& recvs) {
  fs::remove(t->rankFile(0));
  fs::remove(t->rankFile(1));
  auto w = t->create(0);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->begin());
  ASSERT_TRUE(w->addCollective(coll(1, 0, 0, "allreduce", 64, 1200, 2050, 1)));
  ASSERT_TRUE(w->addCollective(coll(2, 0, 1, "allreduce", 64, 2500, 3050, 2)));
  ASSERT_TRUE(w->commit()) << w->error();
  ASSERT_TRUE(w->setMeta("end_state", "clean"));
  ASSERT_TRUE(w->close()) << w->error();
  w = t->create(1);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->begin());
  ASSERT_TRUE(w->addCollective(coll(1, 1, 0, "allreduce", 64, 1000, 2100, 1)));
  ASSERT_TRUE(w->addCollective(coll(2, 1, 1, "allreduce", 64, 1100, 3100, 2)));
  for (const TransferRow& row : recvs) ASSERT_TRUE(w->addTransfer(row));
  ASSERT_TRUE(w->commit()) << w->error();
  ASSERT_TRUE(w->setMeta("end_state", "clean"));
  ASSERT_TRUE(w->close()) << w->error();
}

// Link 0->1 counted from its receiving side only.
void expectRecvLink(const LinkTotals& link, int64_t messages, int64_t bytes, int64_t busy_ns) {
  EXPECT_EQ(link.src, 0);
  EXPECT_EQ(link.dst, 1);
  EXPECT_TRUE(link.from_recv);
  EXPECT_EQ(link.messages, messages);
  EXPECT_EQ(link.bytes, bytes);
  EXPECT_EQ(link.busy_ns, busy_ns);
}

// A link's rows stored out of time order: the busy time is still the time-ordered one. Rank 1
// receives twice on 0->1, storing the later-posted message first (ids in recording order):
//   id 1: call seq 0, posted 1200, done 2000; rank 0 entered seq 0 at 1200 -> moves [1200,2000]
//   id 2: call seq 1, posted 1100, done 3000; rank 0 entered seq 1 at 2500 -> moves [2500,3000]
// In time order (id 2 first, as the analyzer takes them: link_time.h) the union starts with
// [2500,3000] and [1200,2000] adds nothing: busy 500. Taken in storage order it would be
// 800 + 500 = 1300. (One row back: put in order by the summary's window.)
TEST_F(SummaryTest, LinkRowsOutOfTimeOrder) {
  writeReceivingPair(
      this, {xfer(1, 0, 1, "recv", 64, 1200, 2000), xfer(2, 0, 1, "recv", 64, 1100, 3000)});
  Summary s = summarizeFile(merge());
  EXPECT_EQ(s.transfers, 2);
  ASSERT_EQ(s.links.size(), 1u);
  expectRecvLink(s.links[0], 2, 128, 500);
  // Rank 1's extent: its calls and the messages it recorded, 1000..3100.
  ASSERT_EQ(s.ranks.size(), 2u);
  EXPECT_EQ(s.ranks[1].trace_span_ns, 2100);
}

// Seventeen rows back, beyond the summary's window of sixteen: that link side is counted again
// in a time-ordered read. Seventeen 5 ns receives of seq 0 posted at 1200, 1210, ..., 1360 (moving
// from their post: rank 0 entered at 1200), then the seq 1 receive posted at 1100 ([2500,3000]).
// Time order: [2500,3000] first, the 17 inside it add nothing: 500 (storage order: 85 + 500).
TEST_F(SummaryTest, LinkRowsFarOutOfTimeOrder) {
  std::vector<TransferRow> recvs;
  for (int k = 0; k < 17; ++k)
    recvs.push_back(xfer(1, 0, 1, "recv", 8, 1200 + 10 * k, 1205 + 10 * k));
  recvs.push_back(xfer(2, 0, 1, "recv", 8, 1100, 3000));
  writeReceivingPair(this, recvs);
  Summary s = summarizeFile(merge());
  ASSERT_EQ(s.links.size(), 1u);
  expectRecvLink(s.links[0], 18, 144, 500);
}

// Rank r's calls (seq 0..kCalls-1, entered at 1000 seq + a jitter of up to 800 ns) and the
// messages it sends to and receives from the other rank, 6 each per call, posted at distinct
// times (1000 seq + 10 m + 5 r), lasting 1-3,000 ns (they overlap), in time order, then disordered
// in storage: rank 0's rows with random neighbours swapped (within the window's reach), rank 1's
// in blocks of 40 reversed (beyond it).
void writeRandomRank(SummaryTest* t, int rank, std::mt19937_64& rng) {
  constexpr int kCalls = 40;
  auto w = t->create(rank);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->begin());
  std::vector<TransferRow> rows;
  for (int k = 0; k < kCalls; ++k) {
    const int64_t entry = 1000 * int64_t{k} + static_cast<int64_t>(rng() % 800);
    ASSERT_TRUE(w->addCollective(coll(k + 1, rank, k, "allreduce", 64, entry, entry + 4000)));
    for (int m = 0; m < 12; ++m) {
      const bool send = m % 2 == 0;
      const int64_t start = 1000 * int64_t{k} + 10 * m + 5 * rank;
      const int peer = 1 - rank;
      rows.push_back(xfer(k + 1, send ? rank : peer, send ? peer : rank, send ? "send" : "recv", 8,
                          start, start + 1 + static_cast<int64_t>(rng() % 3000)));
    }
  }
  if (rank == 0) {
    for (size_t i = 0; i + 1 < rows.size(); i += 1 + rng() % 3) std::swap(rows[i], rows[i + 1]);
  } else {
    for (size_t i = 0; i + 40 <= rows.size(); i += 40)
      std::reverse(rows.begin() + static_cast<long>(i), rows.begin() + static_cast<long>(i + 40));
  }
  for (const TransferRow& row : rows) ASSERT_TRUE(w->addTransfer(row));
  ASSERT_TRUE(w->commit()) << w->error();
  ASSERT_TRUE(w->setMeta("end_state", "clean"));
  ASSERT_TRUE(w->close()) << w->error();
}

// The same trace with its transfers stored in time order (ids renumbered so): every link side
// is then read as it comes.
void storeTransfersInTimeOrder(const std::string& trace) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(trace.c_str(), &db), SQLITE_OK);
  const char* sql =
      "CREATE TEMP TABLE t AS SELECT * FROM transfer_data;"
      "CREATE TEMP TABLE ord AS SELECT id AS old, row_number() OVER (ORDER BY start_ns, id) AS new"
      "  FROM transfer_data;"
      "UPDATE t SET id = (SELECT new FROM ord WHERE old = t.id);"
      "DELETE FROM transfer_data; INSERT INTO transfer_data SELECT * FROM t;";
  char* message = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, &message), SQLITE_OK) << message;
  sqlite3_free(message);
  sqlite3_close(db);
}

// Links and ranks as comparable tuples.
auto linkRows(const Summary& s) {
  std::vector<std::tuple<int, int, int64_t, int64_t, int64_t, bool>> out;
  for (const LinkTotals& l : s.links)
    out.emplace_back(l.src, l.dst, l.messages, l.bytes, l.busy_ns, l.from_recv);
  return out;
}
auto rankRows(const Summary& s) {
  std::vector<std::tuple<int, int64_t, int64_t, int64_t, int64_t>> out;
  for (const RankTotals& r : s.ranks)
    out.emplace_back(r.rank, r.calls, r.comm_ns, r.span_ns, r.trace_span_ns);
  return out;
}

// Whatever the storage order, the summary is the time-ordered one: random rows near and far out
// of order (the window and the time-ordered read again) against the same rows stored in order.
TEST_F(SummaryTest, StorageOrderDoesNotChangeTheSummary) {
  fs::remove(rankFile(0));
  fs::remove(rankFile(1));
  std::mt19937_64 rng(27);
  writeRandomRank(this, 0, rng);
  writeRandomRank(this, 1, rng);
  const std::string trace = merge();
  Summary disordered = summarizeFile(trace);
  storeTransfersInTimeOrder(trace);
  Summary ordered = summarizeFile(trace);
  EXPECT_EQ(disordered.transfers, 960);
  EXPECT_EQ(disordered.transfers, ordered.transfers);
  ASSERT_EQ(linkRows(disordered).size(), 2u);
  EXPECT_EQ(linkRows(disordered), linkRows(ordered));
  EXPECT_EQ(rankRows(disordered), rankRows(ordered));
}

TEST(RankList, Compact) {
  EXPECT_EQ(formatRankList({}), "");
  EXPECT_EQ(formatRankList({4}), "4");
  EXPECT_EQ(formatRankList({3, 0, 1, 2, 5, 7, 8, 8}), "0-3,5,7,8");
  EXPECT_EQ(formatRankList({10, 11, 12, 20}), "10-12,20");
}

}  // namespace
}  // namespace ringside::analyzer
