// AnalysisOptions::phase_rows: a report keeps the phase rows it prints and folds the others as
// they are made, so it never holds one row per instance, rank and phase (issue 27: 6.5 M rows,
// 1.6 GB at 16,384 ranks). The totals over every row stay the same, and the rows kept are the
// same rows, in the same order, as those of an analysis that keeps every row.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/analyzer/analysis.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"
#include "trace_gen.h"

namespace ringside::analyzer {
namespace {

constexpr int kRanks = 300;  // more than the HTML report draws (256)
constexpr int kCollectives = 4;

// A generated trace: kRanks ranks on 6 hosts, kCollectives tree all-reduces of 64 KiB.
class PhaseRowsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test_support::TempDir("phase-rows");
    gen::GenOptions o;
    o.ranks = kRanks;
    o.hosts = 6;
    o.tree = true;
    o.collectives = kCollectives;
    o.steps = 2;
    o.bytes = 1 << 16;
    o.fsync = false;
    std::string error;
    std::vector<std::string> files;
    std::filesystem::create_directories(dir_->path() + "/ranks");
    ASSERT_TRUE(gen::writeRankFiles(o, dir_->path() + "/ranks", &files, &error)) << error;
    storage::MergeOptions m;
    m.inputs = files;
    m.output = dir_->path() + "/t.sqlite";
    const storage::MergeResult r = storage::mergeRankFiles(m);
    ASSERT_TRUE(r.ok) << r.error;
    std::filesystem::remove_all(dir_->path() + "/ranks");
    full_ = new Analysis(analyzeWith({}));
  }
  static void TearDownTestSuite() {
    delete full_;
    delete dir_;
  }

  static Analysis analyzeWith(PhaseRowsKept keep) {
    std::string error;
    auto reader = storage::TraceReader::open(dir_->path() + "/t.sqlite", &error);
    EXPECT_TRUE(reader) << error;
    Analysis a;
    if (!reader) return a;
    AnalysisOptions options;
    options.phase_rows = keep;
    EXPECT_TRUE(analyze(*reader, options, &a, &error)) << error;
    return a;
  }

  // Totals by phase name over the kept rows and the folded ones.
  static std::map<std::string, PhaseTotal> totals(const Analysis& a) {
    std::map<std::string, PhaseTotal> by_name;
    for (const PhaseTotal& t : a.phases_left_out) by_name[t.phase].add(t);
    for (const PhaseStats& p : a.phases) by_name[p.phase].add(p);
    return by_name;
  }
  static int64_t leftOut(const Analysis& a) {
    int64_t n = 0;
    for (const PhaseTotal& t : a.phases_left_out) n += t.instances;
    return n;
  }

  static test_support::TempDir* dir_;
  static Analysis* full_;
};

test_support::TempDir* PhaseRowsTest::dir_ = nullptr;
Analysis* PhaseRowsTest::full_ = nullptr;

auto key(const PhaseStats& p) {
  return std::tie(p.comm, p.seq, p.rank, p.phase, p.start_ns, p.end_ns, p.steps, p.slowest_step,
                  p.slowest_step_ns, p.inferred, p.wait_ns);
}

void expectSameTotals(const std::map<std::string, PhaseTotal>& a,
                      const std::map<std::string, PhaseTotal>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    const PhaseTotal& u = b.at(name);
    EXPECT_EQ(std::tie(t.instances, t.total_ns, t.wait_ns, t.max_ns, t.inferred),
              std::tie(u.instances, u.total_ns, u.wait_ns, u.max_ns, u.inferred))
        << name;
  }
}

// The default keeps every row: one per instance, rank and phase (a tree all-reduce: reduce and
// broadcast on every rank), nothing left out.
TEST_F(PhaseRowsTest, EveryRowByDefault) {
  ASSERT_EQ(full_->collectives.size(), static_cast<size_t>(kCollectives));
  EXPECT_GE(full_->phases.size(), static_cast<size_t>(kCollectives * kRanks));
  EXPECT_TRUE(full_->phases_left_out.empty());
}

// text, md, csv, diff, simulate: no row kept, the same totals.
TEST_F(PhaseRowsTest, NoneKeptSameTotals) {
  const Analysis a = analyzeWith({.first = 0, .ranks_below = 0});
  EXPECT_TRUE(a.phases.empty());
  EXPECT_EQ(leftOut(a), static_cast<int64_t>(full_->phases.size()));
  expectSameTotals(totals(a), totals(*full_));
}

// JSON: the first rows made, exactly as the full analysis has them first.
TEST_F(PhaseRowsTest, FirstRowsKeptInOrder) {
  const Analysis a = analyzeWith({.first = 50, .ranks_below = 0});
  ASSERT_EQ(a.phases.size(), 50u);
  for (size_t i = 0; i < a.phases.size(); ++i) EXPECT_EQ(key(a.phases[i]), key(full_->phases[i]));
  EXPECT_EQ(leftOut(a), static_cast<int64_t>(full_->phases.size()) - 50);
  expectSameTotals(totals(a), totals(*full_));
}

// HTML: the rows of the ranks drawn, and each instance's extent over all ranks; the rows kept
// do not grow with the ranks (at most 2 phases x 16 ranks + 2 extent rows per instance).
TEST_F(PhaseRowsTest, RanksBelowAndExtentsKept) {
  constexpr int kDrawn = 16;
  const Analysis a = analyzeWith({.first = 0, .ranks_below = kDrawn});
  EXPECT_LE(a.phases.size(), static_cast<size_t>(kCollectives * (2 * kDrawn + 2)));
  std::vector<const PhaseStats*> drawn_full, drawn_kept;
  for (const PhaseStats& p : full_->phases) {
    if (p.rank < kDrawn) drawn_full.push_back(&p);
  }
  for (const PhaseStats& p : a.phases) {
    if (p.rank < kDrawn) drawn_kept.push_back(&p);
  }
  ASSERT_EQ(drawn_kept.size(), drawn_full.size());
  for (size_t i = 0; i < drawn_kept.size(); ++i)
    EXPECT_EQ(key(*drawn_kept[i]), key(*drawn_full[i]));
  using Extent = std::pair<int64_t, int64_t>;
  auto extents = [](const Analysis& x) {
    std::map<std::pair<std::string, int64_t>, Extent> out;
    for (const PhaseStats& p : x.phases) {
      auto [it, fresh] = out.try_emplace({p.comm, p.seq}, Extent{p.start_ns, p.end_ns});
      it->second = {std::min(it->second.first, p.start_ns), std::max(it->second.second, p.end_ns)};
    }
    return out;
  };
  EXPECT_EQ(extents(a), extents(*full_));
  EXPECT_EQ(leftOut(a) + static_cast<int64_t>(a.phases.size()),
            static_cast<int64_t>(full_->phases.size()));
  expectSameTotals(totals(a), totals(*full_));
}

// With on_phase every row goes to the caller (the viewer), none is kept or folded.
TEST_F(PhaseRowsTest, OnPhaseGetsEveryRow) {
  std::string error;
  auto reader = storage::TraceReader::open(dir_->path() + "/t.sqlite", &error);
  ASSERT_TRUE(reader) << error;
  AnalysisOptions options;
  options.phase_rows = {.first = 0, .ranks_below = 0};
  size_t seen = 0;
  options.on_phase = [&seen](const PhaseStats&, int32_t) { ++seen; };
  Analysis a;
  ASSERT_TRUE(analyze(*reader, options, &a, &error)) << error;
  EXPECT_EQ(seen, full_->phases.size());
  EXPECT_TRUE(a.phases.empty());
  EXPECT_TRUE(a.phases_left_out.empty());
}

}  // namespace
}  // namespace ringside::analyzer
