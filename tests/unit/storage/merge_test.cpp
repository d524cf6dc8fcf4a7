// mergeRankFiles: renumbering, string remapping, cut-off/missing ranks,
// duplicates, refusals, skipped inputs, live inputs.
#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

class MergeTest : public TempDirTest {
 protected:
  std::string rankFile(int rank, RankFileSpec spec = {}) {
    spec.rank = rank;
    const std::string file = path("rank-" + std::to_string(rank) + "-" + std::to_string(counter_++) + ".sqlite");
    writeRankFile(file, spec);
    return file;
  }
  int counter_ = 0;
};

TEST_F(MergeTest, RenumbersCollectivesAndRemapsTransfersAndStrings) {
  MergeOptions o;
  RankFileSpec spec;  // every file uses collective ids 1..10
  for (int r = 0; r < 4; ++r) o.inputs.push_back(rankFile(r, spec));
  o.output = path("merged.sqlite");
  o.extra_meta = {{"tool_version", "9.9"}};
  int64_t last_done = -1, last_total = -1;
  o.progress = [&](int64_t done, int64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  };
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_TRUE(m.warnings.empty());
  EXPECT_EQ(m.ranks, 4);
  EXPECT_EQ(m.world_size, 4);
  EXPECT_EQ(m.collectives, 40);
  EXPECT_EQ(m.transfers, 80);
  EXPECT_TRUE(m.cut_off_ranks.empty());
  EXPECT_TRUE(m.missing_ranks.empty());
  EXPECT_EQ(last_done, 120);
  EXPECT_EQ(last_total, 120);
  const std::string& f = o.output;
  EXPECT_EQ(sqlInt(f, "SELECT count(DISTINCT id) FROM collective_data"), 40);
  // Every transfer points at a collective of its own rank with the same seq'd call.
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM transfer t JOIN collective c ON c.id = t.collective_id"
                      " WHERE c.rank = t.rank AND t.start_ns - c.start_ns BETWEEN 0 AND 10"), 80);
  // Strings resolved correctly despite per-file sids: rank r, seq i -> ops[(i+r)%2].
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM collective WHERE op = CASE (seq + rank) % 2"
                      " WHEN 0 THEN 'allreduce' ELSE 'broadcast' END"), 40);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM string WHERE value = 'allreduce'"), 1);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM rank WHERE file LIKE 'rank-%.sqlite'"), 4);
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'rank.2.tool_version'"), "0.1.0");
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'tool_version'"), "9.9");
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'ranks'"), "4");
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'world_size'"), "4");
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'missing_ranks'"), "");
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'cut_off_ranks'"), "");
  EXPECT_EQ(sqlText(f, "SELECT value FROM meta WHERE key = 'schema_version'"), std::to_string(kSchemaVersion));
  EXPECT_GT(sqlInt(f, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'merged_at_unix_ns'"), 0);
  EXPECT_EQ(sqlInt(f, "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE 'sqlite_%'"), 7);  // transfer_by_rank_time (v3); none by collective or link (no reader used them)
  EXPECT_FALSE(fileExists(f + ".tmp-" + std::to_string(::getpid())));

  std::string err;
  auto r = TraceReader::open(f, &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(r->ranks().size(), 4u);
  std::pair<int, int64_t> prev{-1, INT64_MIN};
  int n = 0;
  ASSERT_TRUE(r->forEachCollective(
      [&](const CollectiveRow& c) {
        const std::pair<int, int64_t> key{c.rank, c.start_ns};
        EXPECT_LE(prev, key);
        prev = key;
        ++n;
        return true;
      },
      &err));
  EXPECT_EQ(n, 40);
  // The timing-only visit: the same rows in the same order, the fields it reads equal.
  std::vector<std::tuple<int64_t, int, std::string, int64_t, std::string, int64_t, int64_t, int>> full, timing;
  ASSERT_TRUE(r->forEachCollective(
      [&](const CollectiveRow& c) {
        full.emplace_back(c.id, c.rank, std::string(c.comm), c.seq, std::string(c.op), c.start_ns, c.end_ns, c.status);
        return true;
      },
      &err));
  ASSERT_TRUE(r->forEachCollectiveTiming(
      [&](const CollectiveRow& c) {
        timing.emplace_back(c.id, c.rank, std::string(c.comm), c.seq, std::string(c.op), c.start_ns, c.end_ns, c.status);
        EXPECT_TRUE(c.library.empty());
        EXPECT_EQ(c.bytes, 0);
        return true;
      },
      &err));
  EXPECT_EQ(timing, full);
  // Opened without quick_check (for a file another reader checks): reads the same.
  TraceOpenOptions unchecked;
  unchecked.quick_check = false;
  auto u = TraceReader::open(f, unchecked, &err);
  ASSERT_TRUE(u) << err;
  EXPECT_EQ(u->collectiveCount(), 40);
}

TEST_F(MergeTest, CutOffAndMissingRanks) {
  MergeOptions o;
  RankFileSpec spec;
  spec.world_size = 5;
  o.inputs.push_back(rankFile(0, spec));
  spec.clean = false;
  o.inputs.push_back(rankFile(1, spec));
  spec.clean = true;
  o.inputs.push_back(rankFile(3, spec));
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.ranks, 3);
  EXPECT_EQ(m.world_size, 5);
  EXPECT_EQ(m.cut_off_ranks, std::vector<int>({1}));
  EXPECT_EQ(m.missing_ranks, std::vector<int>({2, 4}));
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'cut_off_ranks'"), "1");
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'missing_ranks'"), "2,4");
}

TEST_F(MergeTest, LiveRankFileIsMergedWithItsCommittedRowsAndFlaggedCutOff) {
  RankFileSpec spec;
  spec.rank = 1;
  spec.clean = false;
  spec.close = false;
  const std::string live = path("live.sqlite");
  auto w = writeRankFile(live, spec);
  ASSERT_TRUE(w);
  ASSERT_TRUE(fileExists(live + "-wal"));
  MergeOptions o;
  o.inputs = {rankFile(0), live};
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.collectives, 20);
  EXPECT_EQ(m.cut_off_ranks, std::vector<int>({1}));
  EXPECT_TRUE(w->begin());  // the writer is undisturbed
  EXPECT_TRUE(w->commit());
}

TEST_F(MergeTest, DuplicateRankIsKeptWithAWarning) {
  MergeOptions o;
  RankFileSpec spec;
  spec.world_size = 2;
  o.inputs.push_back(rankFile(0, spec));
  o.inputs.push_back(rankFile(1, spec));
  spec.start_unix_ns += 1000;
  o.inputs.push_back(rankFile(0, spec));
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("rank 0 appears in 2 files"), std::string::npos) << m.warnings[0];
  EXPECT_EQ(m.ranks, 2);
  EXPECT_EQ(m.collectives, 30);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM rank WHERE rank = 0"), 2);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM meta WHERE key IN ('rank.0.tool_version', 'rank.0#2.tool_version')"), 2);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(DISTINCT id) FROM collective_data"), 30);
}

TEST_F(MergeTest, TransferOfACallWithoutARowStaysInItsFilesIdBlock) {
  // Rank 0's last call was cut off before its row: transfers name id 11.
  MergeOptions o;
  o.inputs.push_back(rankFile(0));
  o.inputs.push_back(rankFile(1));
  sqlExec(o.inputs[0], "UPDATE transfer_data SET collective_id = 11 WHERE collective_id = 10");
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  // Every transfer that has a matching collective matches one of its own rank.
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM transfer t JOIN collective c ON c.id = t.collective_id"
                             " WHERE c.rank != t.rank"), 0);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM transfer t LEFT JOIN collective c ON c.id = t.collective_id"
                             " WHERE c.id IS NULL"), 2);
}

TEST_F(MergeTest, RefusesToOverwriteUnlessAsked) {
  MergeOptions o;
  o.inputs = {rankFile(0)};
  o.output = path("m.sqlite");
  writeBytes(o.output, {'x'});
  MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_TRUE(isOneLine(m.error)) << m.error;
  EXPECT_NE(m.error.find("exists"), std::string::npos) << m.error;
  EXPECT_EQ(readBytes(o.output).size(), 1u);
  o.overwrite = true;
  m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  std::string err;
  EXPECT_TRUE(TraceReader::open(o.output, &err)) << err;
}

// Even with overwrite, a link or a FIFO at the output is refused, and a link planted at the
// temporary name the merge used before (<output>.tmp-<pid>) is not followed.
TEST_F(MergeTest, NeverWritesThroughALinkNorReplacesANonRegularFile) {
  const std::string victim = path("victim");
  writeBytes(victim, {'v'});
  MergeOptions o;
  o.inputs = {rankFile(0)};
  o.overwrite = true;
  o.output = path("link.sqlite");
  ASSERT_EQ(::symlink(victim.c_str(), o.output.c_str()), 0);
  MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_TRUE(isOneLine(m.error)) << m.error;
  EXPECT_NE(m.error.find("a symbolic link, not a regular file; not replaced"), std::string::npos)
      << m.error;
  o.output = path("fifo.sqlite");
  ASSERT_EQ(::mkfifo(o.output.c_str(), 0600), 0);
  m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.error.find("a FIFO, not a regular file"), std::string::npos) << m.error;
  o.output = path("m.sqlite");
  const std::string old_temp = o.output + ".tmp-" + std::to_string(::getpid());
  ASSERT_EQ(::symlink(victim.c_str(), old_temp.c_str()), 0);
  m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(readBytes(victim), std::vector<char>{'v'});
  std::string err;
  EXPECT_TRUE(TraceReader::open(o.output, &err)) << err;
}

TEST_F(MergeTest, SkipsUnusableInputsWithAWarning) {
  MergeOptions o;
  o.inputs = {rankFile(0), path("garbage.sqlite"), path("missing.sqlite")};
  writeBytes(o.inputs[1], {'h', 'e', 'l', 'l', 'o'});
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_NE(m.warnings[0].find("garbage.sqlite"), std::string::npos);
  EXPECT_NE(m.warnings[1].find("missing.sqlite"), std::string::npos);
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'skipped_inputs'"),
            "garbage.sqlite,missing.sqlite");
  EXPECT_EQ(m.missing_ranks, std::vector<int>({1, 2, 3}));
  // Runs of three or more as a range: a world of a million with one file writes "1-999999".
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'missing_ranks'"), "1-3");
}

TEST_F(MergeTest, ListsTheCallersSkippedInputsWithTheirReasons) {
  // `ringside merge -k` checks its inputs itself and leaves bad ones out: the trace must still
  // say the file existed but could not be read.
  MergeOptions o;
  o.inputs = {rankFile(0), path("garbage.sqlite")};
  writeBytes(o.inputs[1], {'h', 'e', 'l', 'l', 'o'});
  o.skipped_inputs = {
      {path("cut.sqlite"), path("cut.sqlite") + ": database disk image is malformed"}};
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'skipped_inputs'"),
            "cut.sqlite,garbage.sqlite");
  const std::string reasons =
      sqlText(o.output, "SELECT value FROM meta WHERE key = 'skipped_input_reasons'");
  EXPECT_EQ(reasons.substr(0, reasons.find('\n')), "cut.sqlite: database disk image is malformed");
  EXPECT_EQ(reasons.find("garbage.sqlite: ", reasons.find('\n')), reasons.find('\n') + 1)
      << reasons;
}

TEST_F(MergeTest, NoUsableInputIsAnErrorAndWritesNothing) {
  MergeOptions o;
  o.inputs = {path("empty.sqlite")};
  writeBytes(o.inputs[0], {});
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_TRUE(isOneLine(m.error)) << m.error;
  EXPECT_NE(m.error.find("empty file"), std::string::npos) << m.error;
  EXPECT_FALSE(fileExists(o.output));
  EXPECT_FALSE(fileExists(o.output + ".tmp-" + std::to_string(::getpid())));
}

TEST_F(MergeTest, MergedTraceIsNotAcceptedAsARankFile) {
  MergeOptions o;
  o.inputs = {rankFile(0), rankFile(1)};
  o.output = path("m.sqlite");
  ASSERT_TRUE(mergeRankFiles(o).ok);
  MergeOptions again;
  again.inputs = {o.output};
  again.output = path("m2.sqlite");
  const MergeResult m = mergeRankFiles(again);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.error.find("rank file"), std::string::npos) << m.error;
}

// Node traces merged again (MergeOptions::merged_inputs) equal one merge of the rank files: the
// same rows with the same ids, cut-off, missing and skipped inputs carried over.
TEST_F(MergeTest, MergedTracesMergedAgainEqualAOneStepMerge) {
  RankFileSpec spec;
  spec.world_size = 5;
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) {
    spec.clean = r != 2;
    files.push_back(rankFile(r, spec));
  }
  const std::string garbage = path("garbage.sqlite");
  writeBytes(garbage, {'h', 'e', 'l', 'l', 'o'});
  auto merge = [&](std::vector<std::string> inputs, const std::string& out, bool merged) {
    MergeOptions o;
    o.inputs = std::move(inputs);
    o.output = path(out);
    o.merged_inputs = merged;
    return mergeRankFiles(o);
  };
  const MergeResult one = merge({files[0], files[1], garbage, files[2], files[3]}, "one.sqlite", false);
  ASSERT_TRUE(one.ok) << one.error;
  ASSERT_TRUE(merge({files[0], files[1], garbage}, "a.sqlite", false).ok);
  ASSERT_TRUE(merge({files[2], files[3]}, "b.sqlite", false).ok);
  const MergeResult two = merge({path("b.sqlite"), path("a.sqlite")}, "two.sqlite", true);
  ASSERT_TRUE(two.ok) << two.error;
  EXPECT_EQ(two.ranks, 4);
  EXPECT_EQ(two.world_size, 5);
  EXPECT_EQ(two.collectives, one.collectives);
  EXPECT_EQ(two.transfers, one.transfers);
  EXPECT_EQ(two.cut_off_ranks, std::vector<int>({2}));
  EXPECT_EQ(two.missing_ranks, std::vector<int>({4}));
  const char* const same[] = {
      "SELECT group_concat(id || ':' || rank || ':' || seq || ':' || comm_sid || ':' || op_sid, ',')"
      " FROM (SELECT * FROM collective_data ORDER BY id)",
      "SELECT group_concat(id || ':' || rank || ':' || collective_id || ':' || start_ns || ':' ||"
      " side_sid, ',') FROM (SELECT * FROM transfer_data ORDER BY id)",
      "SELECT group_concat(id || '=' || value, ',') FROM (SELECT * FROM string ORDER BY id)",
      "SELECT group_concat(rank || ':' || file, ',') FROM (SELECT * FROM rank ORDER BY rowid)",
      "SELECT group_concat(key || '=' || value, ',') FROM (SELECT * FROM meta WHERE key NOT IN"
      " ('merged_at_unix_ns', 'skipped_input_reasons') ORDER BY key)",
      "SELECT count(*) FROM clock_anchor_data", "SELECT count(*) FROM communicator_data"};
  for (const char* sql : same) {
    EXPECT_EQ(sqlText(path("two.sqlite"), sql), sqlText(path("one.sqlite"), sql)) << sql;
  }
  EXPECT_EQ(sqlText(path("two.sqlite"), "SELECT value FROM meta WHERE key = 'skipped_inputs'"),
            "garbage.sqlite");
  // A rank file next to the node trace that holds its rank: an error naming the rank.
  const MergeResult overlap = merge({path("a.sqlite"), files[1]}, "bad.sqlite", true);
  EXPECT_FALSE(overlap.ok);
  EXPECT_TRUE(isOneLine(overlap.error)) << overlap.error;
  EXPECT_NE(overlap.error.find("rank 1 "), std::string::npos) << overlap.error;
  EXPECT_FALSE(fileExists(path("bad.sqlite")));
}

TEST_F(MergeTest, OutputInMissingFolderFailsCleanly) {
  MergeOptions o;
  o.inputs = {rankFile(0)};
  o.output = path("no/dir/m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_TRUE(isOneLine(m.error)) << m.error;
}

}  // namespace
// Issue 28, item 7: an exact copy of a rank file (one process's file twice) is merged once.
TEST_F(MergeTest, ExactCopyOfARankFileIsMergedOnce) {
  MergeOptions o;
  RankFileSpec spec;
  spec.world_size = 2;
  o.inputs.push_back(rankFile(0, spec));
  o.inputs.push_back(rankFile(1, spec));
  const std::string copy = path("copy-of-rank-1.sqlite");
  writeBytes(copy, readBytes(o.inputs.back()));
  o.inputs.push_back(copy);
  o.output = path("m.sqlite");
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.collectives, 20);
  EXPECT_EQ(m.transfers, 40);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM rank WHERE rank = 1"), 1);
  ASSERT_EQ(m.duplicates.size(), 1u);
  EXPECT_EQ(m.duplicates[0].first, copy);
  EXPECT_EQ(m.merged_files.size(), 2u);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("a copy of"), std::string::npos) << m.warnings[0];
  // The same rank restarted (another start) is still a second file of that rank.
  spec.start_unix_ns += 1000;
  o.inputs.push_back(rankFile(1, spec));
  o.output = path("m2.sqlite");
  const MergeResult m2 = mergeRankFiles(o);
  ASSERT_TRUE(m2.ok) << m2.error;
  EXPECT_EQ(m2.collectives, 30);
}

// Issue 28, item 7: without keep_going (merge without -k) an unusable input fails the merge.
TEST_F(MergeTest, UnusableInputFailsTheMergeWithoutKeepGoing) {
  MergeOptions o;
  o.inputs = {rankFile(0), path("junk.sqlite")};
  writeBytes(o.inputs[1], std::vector<char>(4096, 'x'));
  o.output = path("m.sqlite");
  o.keep_going = false;
  const MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.error.find("junk.sqlite"), std::string::npos) << m.error;
  EXPECT_NE(m.error.find("-k"), std::string::npos) << m.error;
  EXPECT_FALSE(fileExists(o.output));
}

// Issue 28, item 7: an input that fails while being copied (here: replaced by junk after pass 1
// checked it) fails the merge without keep_going; with it, it is skipped and listed.
TEST_F(MergeTest, InputFailingWhileCopiedFailsWithoutKeepGoing) {
  for (const bool keep_going : {false, true}) {
    MergeOptions o;
    o.inputs = {rankFile(0), rankFile(1)};
    o.output = path(keep_going ? "k.sqlite" : "m.sqlite");
    o.keep_going = keep_going;
    bool spoiled = false;
    const std::string victim = o.inputs[1];
    o.progress_detail = [&](const MergeProgress&) {
      if (spoiled) return;
      spoiled = true;  // during the first input's copy: the second is damaged
      writeBytes(victim, std::vector<char>(4096, 'x'));
    };
    const MergeResult m = mergeRankFiles(o);
    ASSERT_TRUE(spoiled);
    if (keep_going) {
      ASSERT_TRUE(m.ok) << m.error;
      EXPECT_EQ(m.merged_files, std::vector<std::string>({o.inputs[0]}));
      EXPECT_NE(sqlText(o.output, "SELECT value FROM meta WHERE key = 'skipped_inputs'"), "");
    } else {
      EXPECT_FALSE(m.ok);
      EXPECT_NE(m.error.find(victim), std::string::npos) << m.error;
      EXPECT_FALSE(fileExists(o.output));
    }
  }
}

// Issue 28, item 5: what the caller stores before publishing (clock model, steps) is in the
// trace when it appears; a failure there publishes nothing and leaves no temporary file.
TEST_F(MergeTest, BeforePublishRunsOnTheTemporaryFileAndItsFailurePublishesNothing) {
  MergeOptions o;
  o.inputs = {rankFile(0), rankFile(1)};
  o.output = path("m.sqlite");
  std::string seen_temp;
  o.before_publish = [&](const std::string& temp, std::string* error) {
    seen_temp = temp;
    EXPECT_FALSE(fileExists(o.output));  // not published yet
    EXPECT_EQ(sqlInt(temp, "SELECT count(*) FROM collective_data"), 20);
    *error = temp + ": cannot store the clock model: database or disk is full";
    return false;
  };
  const MergeResult m = mergeRankFiles(o);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.error.find("disk is full"), std::string::npos) << m.error;
  EXPECT_FALSE(fileExists(o.output));
  ASSERT_FALSE(seen_temp.empty());
  EXPECT_FALSE(fileExists(seen_temp));
  EXPECT_FALSE(fileExists(seen_temp + "-journal"));

  o.before_publish = [&](const std::string& temp, std::string*) {
    sqlExec(temp, "INSERT INTO meta(key, value) VALUES('stored_before_publish', 'yes')");
    return true;
  };
  const MergeResult ok = mergeRankFiles(o);
  ASSERT_TRUE(ok.ok) << ok.error;
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'stored_before_publish'"), "yes");
}

// Issue 28, item 2: a rank file not closed whose writer still runs on this host is live, not
// cut off (nothing was killed); one whose writer is gone is cut off.
TEST_F(MergeTest, LiveWriterOnThisHostIsNotCutOff) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  RankFileSpec spec;
  spec.world_size = 3;
  spec.clean = false;
  spec.close = false;
  spec.host = host;
  spec.pid = getpid();
  spec.start_unix_ns = static_cast<int64_t>(time(nullptr)) * 1'000'000'000LL;
  spec.rank = 1;
  const std::string live = path("rank-live.sqlite");
  auto w = writeRankFile(live, spec);
  ASSERT_TRUE(w);
  RankFileSpec gone = spec;
  gone.close = true;
  gone.pid = 0x7ffffff0;  // no such process
  MergeOptions o;
  o.inputs = {rankFile(0, spec), live, rankFile(2, gone)};
  o.output = path("m.sqlite");
  RankFileStatus status;
  std::string error;
  ASSERT_TRUE(readRankFileStatus(live, &status, &error)) << error;
  EXPECT_FALSE(status.clean);
  EXPECT_EQ(status.pid, getpid());
  EXPECT_TRUE(writerMayBeAlive(status));
  const MergeResult m = mergeRankFiles(o);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_EQ(m.live_ranks, std::vector<int>({0, 1}));
  EXPECT_EQ(m.live_files.size(), 2u);
  EXPECT_EQ(m.cut_off_ranks, std::vector<int>({2}));
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'live_ranks'"), "0,1");
  EXPECT_EQ(sqlText(o.output, "SELECT value FROM meta WHERE key = 'cut_off_ranks'"), "2");
}

// Issue 28, item 9: a writer killed in the middle of a commit (merge --realign) leaves a hot
// journal; the next read-only open by ringside rolls it back instead of failing every verb with
// "attempt to write a readonly database".
TEST_F(MergeTest, HotJournalLeftByAKilledWriterIsRolledBackOnOpen) {
  MergeOptions o;
  o.inputs = {rankFile(0), rankFile(1)};
  o.output = path("m.sqlite");
  ASSERT_TRUE(mergeRankFiles(o).ok);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(o.output.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK)
      _exit(2);
    // A small cache: the transaction's pages spill into the file before the commit, with the
    // journal written first; then the process dies without committing or rolling back.
    const char* sql =
        "PRAGMA journal_mode=DELETE; PRAGMA cache_size=10; BEGIN;"
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 4000)"
        " INSERT INTO meta(key, value) SELECT 'junk' || x, hex(randomblob(600)) FROM c;"
        "DELETE FROM collective_data;";
    _exit(sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_TRUE(fileExists(o.output + "-journal"));
  std::string error;
  std::unique_ptr<TraceReader> reader = TraceReader::open(o.output, &error);
  ASSERT_TRUE(reader) << error;
  reader.reset();
  EXPECT_FALSE(fileExists(o.output + "-journal"));
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM collective_data"), 20);
  EXPECT_EQ(sqlInt(o.output, "SELECT count(*) FROM meta WHERE key LIKE 'junk%'"), 0);
}

// Issue 28 (minor): a merge killed before it removed its temporary file (tens of MB) leaves it;
// the next merge into that output removes it, but never one a live merge holds, a fresh one, or
// a file that is not a ringside trace.
TEST_F(MergeTest, TemporaryFilesOfAKilledMergeAreRemovedByTheNext) {
  MergeOptions o;
  o.inputs = {rankFile(0), rankFile(1)};
  o.output = path("m.sqlite");
  ASSERT_TRUE(mergeRankFiles(o).ok);
  const std::vector<char> trace = readBytes(o.output);
  ASSERT_EQ(::unlink(o.output.c_str()), 0);
  const std::string stale = path("m.sqlite.tmp-abcd1234"), held = path("m.sqlite.tmp-held0000"),
                    fresh = path("m.sqlite.tmp-fresh000"), foreign = path("m.sqlite.tmp-other000");
  for (const std::string& f : {stale, held, fresh}) writeBytes(f, trace);
  writeBytes(stale + "-journal", {'j'});
  writeBytes(foreign, std::vector<char>(4096, 'x'));
  const std::string orphan_journal = path("m.sqlite.tmp-gone0000-journal");  // its file removed
  writeBytes(orphan_journal, {'j'});
  const timespec old[2] = {{time(nullptr) - 3600, 0}, {time(nullptr) - 3600, 0}};
  for (const std::string& f : {stale, held, foreign, orphan_journal})
    ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), old, 0), 0);
  const int lock = ::open(held.c_str(), O_RDONLY);  // a live merge's flock
  ASSERT_GE(lock, 0);
  ASSERT_EQ(::flock(lock, LOCK_EX), 0);
  const MergeResult m = mergeRankFiles(o);
  ::close(lock);
  ASSERT_TRUE(m.ok) << m.error;
  EXPECT_FALSE(fileExists(stale));
  EXPECT_FALSE(fileExists(stale + "-journal"));
  EXPECT_TRUE(fileExists(held));
  EXPECT_TRUE(fileExists(fresh));
  EXPECT_TRUE(fileExists(foreign));
  EXPECT_FALSE(fileExists(orphan_journal));
  ASSERT_EQ(m.warnings.size(), 2u);
  EXPECT_NE((m.warnings[0] + m.warnings[1]).find("m.sqlite.tmp-abcd1234"), std::string::npos)
      << m.warnings[0];
}

// Issue 28, item 2: who may still write a rank file: a running process of that pid on this host
// that started no later than the file; not a zombie, not another host's pid, not a closed file.
TEST(WriterAlive, RunningZombieReusedAndOtherHost) {
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  RankFileStatus st;
  st.host = host;
  st.pid = getpid();
  st.start_unix_ns = static_cast<int64_t>(time(nullptr)) * 1'000'000'000LL;
  EXPECT_TRUE(writerMayBeAlive(st));
  RankFileStatus other = st;
  other.host = std::string(host) + "-elsewhere";
  EXPECT_FALSE(writerMayBeAlive(other));
  RankFileStatus closed = st;
  closed.clean = true;
  EXPECT_FALSE(writerMayBeAlive(closed));
  RankFileStatus reused = st;
  reused.start_unix_ns = 1'000'000'000LL;  // the file is from 1970: this pid is a newer process
  EXPECT_FALSE(writerMayBeAlive(reused));
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  RankFileStatus zombie = st;
  zombie.pid = child;
  for (int i = 0; i < 200; ++i) {  // until it has exited (not reaped: a zombie)
    if (!writerMayBeAlive(zombie)) break;
    usleep(10'000);
  }
  EXPECT_FALSE(writerMayBeAlive(zombie));
  int status = 0;
  waitpid(child, &status, 0);
}

}  // namespace ringside::storage::testing
