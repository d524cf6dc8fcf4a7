// analyze() on a REAL trace: `ringside bench --ranks 4 --algo ring,tree` with the
// reference algorithms. Counts and bytes must be what the algorithms dictate;
// times only have to be consistent (inside their collective).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>

#include "ringside/analyzer/analysis.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"

#ifndef RINGSIDE_BIN
#error "RINGSIDE_BIN (path of the ringside executable) must be defined"
#endif

namespace ringside::analyzer {
namespace {

constexpr int64_t kSmall = 64 * 1024, kLarge = 1024 * 1024;

class BenchTraceTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(test_support::makeTempDir("bench-trace"));
    std::string trace = *dir_ + "/T.sqlite";
    std::string cmd = std::string(RINGSIDE_BIN) +
                      " bench --ranks 4 --algo ring,tree --sizes 64K,1M --iters 2 -o " + trace +
                      " > " + *dir_ + "/bench.log 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::string error;
    auto reader = storage::TraceReader::open(trace, &error);
    ASSERT_NE(reader, nullptr) << error;
    analysis_ = new Analysis;
    AnalysisOptions options;
    ASSERT_TRUE(analyze(*reader, options, analysis_, &error)) << error;
  }
  static void TearDownTestSuite() {
    if (dir_) test_support::removeTempDir(*dir_);
    delete dir_;
    delete analysis_;
    dir_ = nullptr;
    analysis_ = nullptr;
  }
  static std::string* dir_;
  static Analysis* analysis_;
};
std::string* BenchTraceTest::dir_ = nullptr;
Analysis* BenchTraceTest::analysis_ = nullptr;

TEST_F(BenchTraceTest, CollectivesAndBusbw) {
  ASSERT_NE(analysis_, nullptr);
  const Analysis& a = *analysis_;
  EXPECT_EQ(a.world_size, 4);
  std::map<std::pair<std::string, int64_t>, int> calls;
  for (const CollectiveInstance& c : a.collectives) {
    EXPECT_EQ(c.op, "allreduce");
    EXPECT_EQ(c.ranks, 4);
    EXPECT_FALSE(c.failed);
    ++calls[{c.library, c.bytes}];
    // Ring and both trees of the reference tree move 2 (n-1)/n x S per rank: 6 S in all.
    EXPECT_EQ(c.sent_bytes, 6 * c.bytes) << c.library << " " << c.bytes;
    ASSERT_GT(c.duration_ns, 0);
    EXPECT_DOUBLE_EQ(c.busbw_gbps, static_cast<double>(c.bytes) / c.duration_ns * 1.5);
    EXPECT_EQ(c.arrival_skew_ns, c.last_start_ns - c.first_start_ns);
  }
  ASSERT_EQ(calls.size(), 4u);
  int k = calls.begin()->second;
  EXPECT_GE(k, 2);  // warm-up + timed iterations
  for (const auto& [key, n] : calls) EXPECT_EQ(n, k) << key.first << " " << key.second;
}

TEST_F(BenchTraceTest, PhasesAndSteps) {
  ASSERT_NE(analysis_, nullptr);
  const Analysis& a = *analysis_;
  std::map<std::pair<std::string, int64_t>, const CollectiveInstance*> by_seq;
  for (const CollectiveInstance& c : a.collectives) by_seq[{c.comm, c.seq}] = &c;
  std::map<std::pair<int64_t, int>, std::map<std::string, int>> ring_steps;
  for (const PhaseStats& p : a.phases) {
    EXPECT_FALSE(p.inferred);
    const CollectiveInstance* c = by_seq.at({p.comm, p.seq});
    EXPECT_GE(p.start_ns, c->first_start_ns);
    EXPECT_LE(p.end_ns, c->last_end_ns);
    EXPECT_GE(p.slowest_step, 0);
    if (c->library == "ringside-ring") {
      ring_steps[{p.seq, p.rank}][p.phase] = p.steps;
    } else {
      EXPECT_TRUE(p.phase == "reduce" || p.phase == "broadcast") << p.phase;
      // A rank sends at one depth in each of the two trees.
      EXPECT_GE(p.steps, 1);
      EXPECT_LE(p.steps, 2);
    }
  }
  int ring_calls = 0;
  for (const CollectiveInstance& c : a.collectives) ring_calls += c.library == "ringside-ring";
  ASSERT_EQ(static_cast<int>(ring_steps.size()), ring_calls * 4);
  for (const auto& [key, phases] : ring_steps) {
    EXPECT_EQ(phases, (std::map<std::string, int>{{"all-gather", 3}, {"reduce-scatter", 3}}));
  }
}

TEST_F(BenchTraceTest, LinksAndIdleLinks) {
  ASSERT_NE(analysis_, nullptr);
  const Analysis& a = *analysis_;
  int k = 0;
  for (const CollectiveInstance& c : a.collectives) {
    k += c.library == "ringside-ring" && c.bytes == kSmall;
  }
  // 3 -> 0 is a ring edge and no tree edge: 2 (n-1)/n x S per call.
  bool found = false;
  for (const LinkStats& l : a.links) {
    EXPECT_NE(l.src, l.dst);
    EXPECT_FALSE(l.from_recv);
    EXPECT_EQ(a.traffic[static_cast<size_t>(l.src)][static_cast<size_t>(l.dst)], l.bytes);
    if (l.src == 3 && l.dst == 0) {
      found = true;
      EXPECT_EQ(l.bytes, k * (kSmall + kLarge) * 3 / 2);
    }
    EXPECT_GT(l.busy_ns, 0);
  }
  EXPECT_TRUE(found);
  // Only 0 -> 3 carries nothing at all (neither the ring nor a tree edge).
  std::set<std::pair<int, int>> whole, ring_idle;
  for (const IdleLink& l : a.idle_links) {
    if (l.where == "whole trace") whole.insert({l.src, l.dst});
    if (l.where == "allreduce ringside-ring") ring_idle.insert({l.src, l.dst});
  }
  EXPECT_EQ(whole, (std::set<std::pair<int, int>>{{0, 3}}));
  // The ring leaves 12 - 4 links unused; 0 -> 3 is already listed for the whole trace.
  EXPECT_EQ(ring_idle.size(), 7u);
  for (const auto& [src, dst] : ring_idle) EXPECT_NE((src + 1) % 4, dst);
  // Two message sizes do not support an alpha-beta fit (docs/analyzer.md): no model, and why.
  EXPECT_EQ(a.model_source, "");
  EXPECT_LT(a.beta_s_per_byte, 0);
  EXPECT_NE(a.model_note.find("too few sizes"), std::string::npos) << a.model_note;
}

}  // namespace
}  // namespace ringside::analyzer
