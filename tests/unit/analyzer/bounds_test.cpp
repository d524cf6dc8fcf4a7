// analyze() and loadTopology() on numbers that would size allocations: a rank id beyond the world,
// topology files that are not regular or too large (docs/schema.md, "Reading safely").
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "ringside/analyzer/analysis.h"
#include "ringside/analyzer/collective_math.h"
#include "ringside/analyzer/topology.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace ringside::analyzer {
namespace {
using testing_util::Coll;
using testing_util::TraceBuilder;
using testing_util::Xfer;

bool hasWarning(const Analysis& a, const std::string& text) {
  for (const std::string& w : a.warnings) {
    if (w.find(text) != std::string::npos) return true;
  }
  return false;
}

// One transfer to rank 4096 of a 2-rank world once made a 4097 x 4097 traffic matrix; the row is
// skipped with one warning that names it.
TEST(BoundsTest, RankBeyondTheWorldIsSkippedWithOneWarning) {
  TraceBuilder t(2);
  t.colls = {{1, 0, 0, "allreduce", "gloo", 1000, 100, 900},
             {1, 1, 0, "allreduce", "gloo", 1000, 120, 900}};
  t.xfers = {{1, 0, 1, "send", 1000, 200, 300, ""},
             {1, 0, 4096, "send", 1000, 300, 400, ""},
             {1, 0, 4097, "send", 1000, 400, 500, ""}};
  std::string error;
  auto reader = storage::TraceReader::open(t.build(), &error);
  ASSERT_NE(reader, nullptr) << error;
  Analysis a;
  ASSERT_TRUE(analyze(*reader, AnalysisOptions{}, &a, &error)) << error;
  EXPECT_EQ(a.traffic.size(), 2u);
  ASSERT_EQ(a.links.size(), 1u);
  EXPECT_EQ(a.transfers, 1);
  EXPECT_TRUE(
      hasWarning(a, ": dst_rank 4096 is outside the world of 2 ranks; skipped (2 such rows)"))
      << testing::PrintToString(a.warnings);
}

// Times spanning more than int64_t holds (a damaged trace: start_ns = INT64_MIN) once overflowed
// the bins' arithmetic into a negative bin index and crashed `report` (found by the fuzzer,
// tests/fuzz_corpus/crash-transfer-start-int64-min.sqlite); durations overflowed too. Rows with
// times outside 0..2^62 ns are skipped with one warning.
TEST(BoundsTest, TimesSpanningMoreThanInt64AreBinnedInRange) {
  TraceBuilder t(2);
  const int64_t lo = INT64_MIN, hi = 5834148542775;
  t.colls = {{1, 0, 0, "allreduce", "gloo", 1000, lo, hi},
             {1, 1, 0, "allreduce", "gloo", 1000, 120, hi}};
  t.xfers = {{1, 0, 1, "send", 1000, lo, hi - 10, ""},
             {1, 0, 1, "send", 1000, 200, hi, ""},
             {1, 0, 1, "send", 1000, lo, lo + 5, ""}};
  std::string error;
  auto reader = storage::TraceReader::open(t.build(), &error);
  ASSERT_NE(reader, nullptr) << error;
  Analysis a;
  ASSERT_TRUE(analyze(*reader, AnalysisOptions{}, &a, &error)) << error;
  EXPECT_GE(a.bin_ns, 1);
  EXPECT_EQ(a.transfers, 1);  // the rows starting at INT64_MIN are skipped, with one warning
  EXPECT_TRUE(hasWarning(a, "is outside the times a trace can hold (0 to 2^62 ns); skipped (3 "
                            "such rows)"))
      << testing::PrintToString(a.warnings);
}

// Sizes no call can have (found by fuzzing with a build that traps on signed overflow: the
// size buckets, byte sums and the dropped-events total overflowed).
TEST(BoundsTest, BytesNoCallCanHaveAreSkippedWithOneWarning) {
  TraceBuilder t(2);
  t.colls = {{1, 0, 0, "allreduce", "gloo", INT64_MAX, 100, 200},
             {1, 1, 0, "allreduce", "gloo", INT64_MAX, 120, 210},
             {2, 0, 1, "allreduce", "gloo", 1000, 300, 400},
             {2, 1, 1, "allreduce", "gloo", -5, 300, 400}};
  t.xfers = {{2, 0, 1, "send", int64_t{1} << 62, 310, 390, ""},
             {2, 0, 1, "send", 1000, 310, 390, ""}};
  std::string error;
  auto reader = storage::TraceReader::open(t.build(), &error);
  ASSERT_NE(reader, nullptr) << error;
  Analysis a;
  ASSERT_TRUE(analyze(*reader, AnalysisOptions{}, &a, &error)) << error;
  EXPECT_EQ(a.transfers, 1);
  ASSERT_EQ(a.collectives.size(), 1u);
  EXPECT_EQ(a.collectives[0].bytes, 1000);
  EXPECT_TRUE(hasWarning(a, "is outside the sizes a call can have (0 to 256 TiB); skipped (4 "
                            "such rows)"))
      << testing::PrintToString(a.warnings);
}

// A damaged clock model's uncertainties (found by fuzzing: their sum overflowed).
TEST(BoundsTest, ClockUncertaintyOfADamagedModelSaturates) {
  storage::ClockModel clock;
  clock.domains.resize(2);
  clock.domains[0].id = 0;
  clock.domains[0].uncertainty_ns = INT64_MAX;
  clock.domains[1].id = 1;
  clock.domains[1].uncertainty_ns = INT64_MAX;
  clock.rank_domain = {{0, 0}, {1, 1}};
  EXPECT_EQ(clockUncertaintyNs(clock, 0, 1), INT64_MAX);
  EXPECT_EQ(clockUncertaintyNs(clock, 0, 0), 0);
}

TEST(BoundsTest, SaturatingArithmeticOnSizes) {
  EXPECT_EQ(addSaturated(INT64_MAX - 1, 5), INT64_MAX);
  EXPECT_EQ(addSaturated(INT64_MIN + 1, -5), INT64_MIN);
  EXPECT_EQ(addSaturated(40, 2), 42);
  EXPECT_EQ(sizeBucketLo(int64_t{1} << 62), int64_t{1} << 62);
  EXPECT_EQ(sizeBucketHi(int64_t{1} << 62), INT64_MAX);
  EXPECT_EQ(sizeBucketHi(INT64_MAX), INT64_MAX);
  EXPECT_EQ(sizeBucketHi(27168), 32768);
}

TEST(BoundsTest, TopologyMustBeARegularFileOfAtMost16MiB) {
  Topology topo;
  std::string error;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(loadTopology("/dev/zero", &topo, &error));
  EXPECT_EQ(error,
            "/dev/zero: not a regular file (a character device); a topology file must be one");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));

  const std::string dir = test_support::makeTempDir("bounds-test");
  const std::string fifo = dir + "/fifo.topo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(loadTopology(fifo, &topo, &error));  // must not wait for a writer
  EXPECT_EQ(error, fifo + ": not a regular file (a FIFO); a topology file must be one");

  const std::string huge = dir + "/huge.topo";
  { std::ofstream(huge) << "ringside-topology 1\n"; }
  ASSERT_EQ(truncate(huge.c_str(), 17 << 20), 0);
  EXPECT_FALSE(loadTopology(huge, &topo, &error));
  EXPECT_EQ(error, huge + ": 17825792 bytes; a topology file may have at most 16 MiB");
  test_support::removeTempDir(dir);
}

// Rank lists expand ranges: a few short lines must not list billions of ranks.
// (A real topology names a few hundred.)
TEST(BoundsTest, TopologyRankListsAreBounded) {
  Topology topo;
  std::string error;
  std::string text = "ringside-topology 1\n";
  for (int n = 0; n < 4; ++n) {
    text += "node n" + std::to_string(n) + " ranks " + std::to_string(n * 1000000) + "-" +
            std::to_string(n * 1000000 + 999999) + "\n";
  }
  EXPECT_FALSE(parseTopology(text, "f", &topo, &error));
  EXPECT_EQ(error, "f:3: more than 1048576 ranks");
  // The last rank id that fits: the range ends (it once counted on past INT32_MAX).
  ASSERT_TRUE(parseTopology("ringside-topology 1\nnode a ranks 2147483000-2147483647\n", "f",
                            &topo, &error))
      << error;
  EXPECT_EQ(topo.nodes.at(0).ranks.size(), 648u);
  EXPECT_EQ(topo.nodeOf(2147483647), 0);
}

}  // namespace
}  // namespace ringside::analyzer
