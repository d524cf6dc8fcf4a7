// TraceReader: refuses what is not a readable ringside trace, in one line.
#include <sqlite3.h>
#include <unistd.h>

#include <tuple>
#include <utility>
#include <vector>

#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

class TraceReaderTest : public TempDirTest {
 protected:
  // Opens `file`, expects failure, returns the error.
  std::string refuse(const std::string& file) {
    std::string err;
    auto r = TraceReader::open(file, &err);
    EXPECT_FALSE(r) << file;
    EXPECT_TRUE(isOneLine(err)) << err;
    EXPECT_NE(err.find(file), std::string::npos) << err;
    return err;
  }
  // The transfers' ids as forEachTransfer visits them, comma-separated ("error: ..." on failure).
  static std::string transferIds(TraceReader& r) {
    std::string got, err;
    const bool ok = r.forEachTransfer(
        [&](const TransferRow& t) {
          got += (got.empty() ? "" : ",") + std::to_string(t.id);
          return true;
        },
        &err);
    return ok ? got : "error: " + err;
  }
};

TEST_F(TraceReaderTest, MissingFile) {
  EXPECT_NE(refuse(path("nope.sqlite")).find("No such file"), std::string::npos);
}

TEST_F(TraceReaderTest, EmptyFile) {
  writeBytes(path("empty.sqlite"), {});
  EXPECT_NE(refuse(path("empty.sqlite")).find("empty file"), std::string::npos);
}

TEST_F(TraceReaderTest, RandomBytesAndTextAreNotDatabases) {
  std::vector<char> noise(10000);
  uint32_t x = 12345;
  for (char& c : noise) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  writeBytes(path("noise.sqlite"), noise);
  const std::string text = "rank,op,bytes\n0,allreduce,4096\n";
  writeBytes(path("text.sqlite"), std::vector<char>(text.begin(), text.end()));
  EXPECT_EQ(refuse(path("noise.sqlite")), path("noise.sqlite") + ": not a ringside trace (file is not a database)");
  EXPECT_EQ(refuse(path("text.sqlite")), path("text.sqlite") + ": not a ringside trace (file is not a database)");
}

TEST_F(TraceReaderTest, ForeignSqliteDatabase) {
  const std::string file = path("foreign.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(file.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string err = refuse(file);
  EXPECT_NE(err.find("not a ringside trace"), std::string::npos) << err;
  EXPECT_NE(err.find("foreign"), std::string::npos) << err;
}

TEST_F(TraceReaderTest, NewerSchemaVersion) {
  const std::string file = path("newer.sqlite");
  writeRankFile(file, RankFileSpec{});
  const std::string newer = std::to_string(kSchemaVersion + 1);
  sqlExec(file, "PRAGMA user_version=" + newer);
  EXPECT_EQ(refuse(file), file + ": trace schema version " + newer + " is newer than this ringside (" + std::to_string(kSchemaVersion) + "); upgrade ringside");
}

TEST_F(TraceReaderTest, MissingTable) {
  const std::string file = path("notable.sqlite");
  writeRankFile(file, RankFileSpec{});
  sqlExec(file, "DROP VIEW transfer; DROP TABLE transfer_data");
  EXPECT_NE(refuse(file).find("transfer_data"), std::string::npos);
}

TEST_F(TraceReaderTest, StreamsInOrderAndStopsEarly) {
  const std::string file = path("r.sqlite");
  RankFileSpec spec;
  spec.collectives = 50;
  writeRankFile(file, spec);
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  int64_t last = INT64_MIN;
  int n = 0;
  ASSERT_TRUE(r->forEachTransfer(
      [&](const TransferRow& t) {
        EXPECT_GE(t.start_ns, last);
        last = t.start_ns;
        return ++n < 7;
      },
      &err));
  EXPECT_EQ(n, 7);
}

// forEachMessageSide (align/'s narrow read) gives every row of forEachTransferUnordered, in the
// same order, with the fields that pair a message's sides equal and the rest left unset.
TEST_F(TraceReaderTest, MessageSidesAreTheUnorderedRowsPairingFields) {
  const std::string file = path("sides.sqlite");
  RankFileSpec spec;
  spec.collectives = 40;
  writeRankFile(file, spec);
  sqlExec(file, "UPDATE transfer_data SET slot = id % 5, end_ns = CASE WHEN id % 7 = 0 THEN NULL"
                " ELSE end_ns END");
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  using Rows = std::vector<std::pair<int32_t, TransferRow>>;
  Rows all, sides;
  auto into = [](Rows* rows) {
    return [rows](int32_t rank, const TransferRow& t) {
      rows->emplace_back(rank, t);
      return true;
    };
  };
  ASSERT_TRUE(r->forEachTransferUnordered(into(&all), &err)) << err;
  ASSERT_TRUE(r->forEachMessageSide(into(&sides), &err)) << err;
  ASSERT_EQ(sides.size(), all.size());
  ASSERT_GT(all.size(), 0u);
  for (size_t i = 0; i < all.size(); ++i) {
    const TransferRow& a = all[i].second;
    const TransferRow& b = sides[i].second;
    EXPECT_EQ(sides[i].first, all[i].first);
    EXPECT_EQ(std::tie(b.src_rank, b.dst_rank, b.bytes, b.start_ns, b.end_ns, b.slot),
              std::tie(a.src_rank, a.dst_rank, a.bytes, a.start_ns, a.end_ns, a.slot));
    EXPECT_EQ(b.side, a.side);
    EXPECT_EQ(b.id, TransferRow{}.id);
    EXPECT_EQ(b.phase, TransferRow{}.phase);
  }
}

// forEachTransfer reads stretches of the table in storage order and merges them: whatever order
// the rows are stored in, it visits them as ORDER BY start_ns, id does (and through the index when
// the stretches are too many to merge: more than 131,072 lanes).
TEST_F(TraceReaderTest, TransfersInTimeOrderWhateverTheStorageOrder) {
  const std::string file = path("shuffled.sqlite");
  RankFileSpec spec;
  spec.collectives = 70000;  // 140,000 transfer rows
  writeRankFile(file, spec);
  const char* const orders[] = {
      "(id * 7919) % 50 * 1000",           // overlapping stretches, ties broken by id
      "id / 100 * 1000 + (id % 100) * 7",  // in order: one stretch
      "(id % 300) * 1000 + id / 300",      // stretches that follow each other: a few lanes
      // 35,000 overlapping stretches of 4 rows, each starting a little earlier: a lane each,
      // more than the 16,384 lanes of 8,192 ranks (a 16,384-rank trace has twice that)
      "10000000 - id / 4 * 10 + id % 4 * 1000000",
      "1000000000 - id",                   // every row a stretch of its own: the index
      // The lanes pass reads ids up to 70,000 and after it on two threads: a stretch that ends
      // where the second read starts, one that ends a row later, and one across (above).
      "CASE WHEN id <= 70000 THEN id ELSE id - 70000 END * 10",
      "CASE WHEN id <= 70001 THEN id ELSE id - 70000 END * 10",
  };
  TraceOpenOptions by_reading;
  by_reading.transfers_checked_by_reading = true;
  for (const char* order : orders) {
    sqlExec(file, std::string("UPDATE transfer_data SET start_ns = ") + order);
    const std::string expected = sqlText(
        file, "SELECT group_concat(id) FROM (SELECT id FROM transfer_data ORDER BY start_ns, id)");
    std::string err;
    auto checked = TraceReader::open(file, by_reading, &err);
    ASSERT_TRUE(checked) << err;
    EXPECT_EQ(transferIds(*checked), expected) << order << " (transfers checked by reading)";
    auto r = TraceReader::open(file, &err);
    ASSERT_TRUE(r) << err;
    EXPECT_EQ(transferIds(*r), expected) << order;
    // Stopped early, the read-ahead thread ends with the read.
    int n = 0;
    ASSERT_TRUE(r->forEachTransfer([&](const TransferRow&) { return ++n < 5000; }, &err)) << err;
    EXPECT_EQ(n, 5000) << order;
  }
}

// The lanes' batches are read ahead through a second connection to the file; where none can be
// opened (the file was removed after the reader opened it), the reader's own connection reads
// them, in the same order.
TEST_F(TraceReaderTest, TransfersInTimeOrderWhenTheFileIsGoneAfterOpening) {
  const std::string file = path("removed.sqlite");
  RankFileSpec spec;
  spec.collectives = 5000;
  writeRankFile(file, spec);
  sqlExec(file, "UPDATE transfer_data SET start_ns = (id % 300) * 1000 + id / 300");
  const std::string expected = sqlText(
      file, "SELECT group_concat(id) FROM (SELECT id FROM transfer_data ORDER BY start_ns, id)");
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  ASSERT_EQ(::unlink(file.c_str()), 0);
  EXPECT_EQ(transferIds(*r), expected);
}

TEST_F(TraceReaderTest, ReadsAFileWhoseFolderIsReadOnly) {
  // A cleanly closed trace is a single file: no -wal/-shm needed to read it.
  const std::string file = path("ro.sqlite");
  writeRankFile(file, RankFileSpec{});
  EXPECT_FALSE(fileExists(file + "-wal"));
  EXPECT_FALSE(fileExists(file + "-shm"));
  std::string err;
  auto r = TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_FALSE(fileExists(file + "-shm"));
}

}  // namespace
}  // namespace ringside::storage::testing
