// The viewer's selection, range statistics, search, findings, A/B alignment and the level of
// detail's chunk skipping, without a display.
#include <gtest/gtest.h>

#include <random>

#include "ringside/gui/compare.h"
#include "ringside/gui/inspect.h"
#include "ringside/gui/lod.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {
namespace {

analyzer::CollectiveInstance instance(const std::string& op, int64_t seq, int64_t bytes, int64_t start,
                                      int64_t duration, int straggler = 1) {
  analyzer::CollectiveInstance c;
  c.comm = "w";
  c.seq = seq;
  c.op = op;
  c.library = "gloo";
  c.bytes = bytes;
  c.ranks = 2;
  c.first_start_ns = start;
  c.last_start_ns = start + 10;
  c.last_end_ns = start + 10 + duration;
  c.arrival_skew_ns = 10;
  c.straggler_rank = straggler;
  c.duration_ns = duration;
  return c;
}

// Two ranks; collectives 0..n-1 start at 1000*i and last `durations[i]`; rank 1 arrives 10 ns late.
TimelineModel model(const std::vector<std::pair<std::string, int64_t>>& ops_bytes,
                    const std::vector<int64_t>& durations) {
  analyzer::Analysis a;
  a.world_size = 2;
  a.ranks_present = {0, 1};
  a.start_ns = 0;
  a.end_ns = 1000 * static_cast<int64_t>(durations.size());
  a.bin_ns = 1000;
  std::vector<RankCall> calls;
  for (size_t i = 0; i < durations.size(); ++i) {
    const int64_t t = 1000 * static_cast<int64_t>(i);
    a.collectives.push_back(instance(ops_bytes[i].first, static_cast<int64_t>(i), ops_bytes[i].second, t,
                                     durations[i], i % 3 == 0 ? 0 : 1));
    for (int r : {0, 1}) {
      calls.push_back({r, "w", static_cast<int64_t>(i), ops_bytes[i].first, t + r * 10, t + 10 + durations[i], false});
    }
  }
  a.phases.push_back({"w", 1, 0, "reduce-scatter", 1000, 1050, 1, -1, 0, true});
  a.phases.push_back({"w", 1, 1, "all-gather", 1060, 1100, 1, -1, 0, true});
  analyzer::LinkStats l;
  l.src = 0;
  l.dst = 1;
  l.gbps_per_bin.assign(durations.size(), 1.0);  // 1 byte/ns in every bin
  a.links.push_back(l);
  TimelineModel m;
  buildTimeline(a, calls, &m);
  return m;
}

TEST(Inspect, DetailsListEveryRankItsPhasesAndLinks) {
  TimelineModel m = model({{"allreduce", 4096}, {"allreduce", 4096}, {"broadcast", 64}}, {100, 200, 300});
  m.links_begin = {0, 0, 1, 1};
  m.collective_links = {{0, 1, 8192, 4}};
  m.analysis.collectives[1].expected_ns = 105;
  m.analysis.collectives[1].busbw_gbps = 2.0;
  CollectiveDetails d = collectiveDetails(m, 1);
  ASSERT_NE(d.instance, nullptr);
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_EQ(d.ranks[0].rank, 0);
  EXPECT_EQ(d.ranks[1].start_ns, 1010);
  EXPECT_EQ(d.ranks[1].end_ns, 1210);
  ASSERT_EQ(d.phases.size(), 2u);
  EXPECT_EQ(d.phases[1].phase, "all-gather");
  ASSERT_EQ(d.links.size(), 1u);
  EXPECT_EQ(d.links[0].bytes, 8192);
  EXPECT_NEAR(d.expected_busbw_gbps, 2.0 * 200 / 105, 1e-9);
  EXPECT_EQ(collectiveDetails(m, 7).instance, nullptr);
}

TEST(Inspect, RangeStatisticsWithNearestRankPercentiles) {
  std::vector<std::pair<std::string, int64_t>> ops;
  std::vector<int64_t> durations;
  for (int i = 0; i < 100; ++i) {
    ops.push_back({i % 2 ? "allreduce" : "broadcast", 1024});
    durations.push_back(100 + i);  // 100..199
  }
  TimelineModel m = model(ops, durations);
  RangeStats s = rangeStats(m, 0, 100000);
  EXPECT_EQ(s.all.count, 100);
  EXPECT_EQ(s.all.min_ns, 100);
  EXPECT_EQ(s.all.max_ns, 199);
  EXPECT_EQ(s.all.p50_ns, 149);  // the 50th of 100
  EXPECT_EQ(s.all.p99_ns, 198);  // the 99th
  EXPECT_EQ(s.all.sum_ns, 14950);
  EXPECT_DOUBLE_EQ(s.all.mean_ns, 149.5);
  ASSERT_EQ(s.ops.size(), 2u);
  EXPECT_EQ(s.ops[0].op, "allreduce");
  EXPECT_EQ(s.ops[0].duration.count, 50);
  // [10000, 12000): instances 10 and 11 start in it; the link moved 1 byte/ns for 2000 ns.
  RangeStats part = rangeStats(m, 10000, 12000);
  EXPECT_EQ(part.all.count, 2);
  EXPECT_NEAR(part.link_bytes, 2000, 1e-6);
  ASSERT_EQ(part.ranks.size(), 2u);
  EXPECT_EQ(part.ranks[0].calls, 2);
  EXPECT_EQ(part.ranks[0].busy_ns, 120 + 121);  // durations 110, 111 plus the 10 ns before rank 0's end
  DurationStats one = durationStats({5});
  EXPECT_EQ(one.p50_ns, 5);
  EXPECT_EQ(one.p99_ns, 5);
  EXPECT_EQ(durationStats({}).count, 0);
}

TEST(Inspect, SearchByOpSizeRankTextAndSteppingWraps) {
  TimelineModel m = model({{"allreduce", 4096}, {"broadcast", 64}, {"allreduce", 2 << 20}, {"allreduce", 5000}},
                          {10, 10, 10, 10});
  std::string error;
  EXPECT_EQ(searchCollectives(m, "op:allreduce", &error), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(searchCollectives(m, "allreduce size>1M", &error), (std::vector<int>{2}));
  EXPECT_EQ(searchCollectives(m, "size:4K", &error), (std::vector<int>{0, 3}));  // the 4-8 KiB bucket
  EXPECT_EQ(searchCollectives(m, "size<=4KiB", &error), (std::vector<int>{0, 1}));
  EXPECT_EQ(searchCollectives(m, "BROAD", &error), (std::vector<int>{1}));
  EXPECT_EQ(searchCollectives(m, "rank:1", &error).size(), 4u);
  EXPECT_TRUE(searchCollectives(m, "rank:9", &error).empty());
  EXPECT_EQ(searchCollectives(m, "straggler:0", &error), (std::vector<int>{0, 3}));
  EXPECT_TRUE(error.empty());
  EXPECT_TRUE(searchCollectives(m, "size>lots", &error).empty());
  EXPECT_FALSE(error.empty());

  SearchCursor cur;
  cur.set(searchCollectives(m, "op:allreduce", &error));
  EXPECT_EQ(cur.current(), -1);
  EXPECT_EQ(cur.startAt(m, 1500), 2);  // the first match at or after the view's left edge
  EXPECT_EQ(cur.next(), 3);
  EXPECT_EQ(cur.next(), 0);  // wraps
  EXPECT_EQ(cur.prev(), 3);  // and back
  EXPECT_EQ(cur.prev(), 2);
  EXPECT_EQ(cur.position(), 1);
  cur.set({});
  EXPECT_EQ(cur.next(), -1);
}

TEST(Inspect, FindingsPointAtWhatTheyName) {
  TimelineModel m = model({{"allreduce", 4096}, {"allreduce", 4096}, {"allreduce", 4096}}, {10, 10, 10});
  m.analysis.collectives[2].arrival_skew_ns = 500;  // rank 1's worst
  FindingTarget t = findingTarget(m.analysis, {"problem", "straggler", "rank 1 is a straggler: last to arrive in 66% of collectives", "", "", -1});
  EXPECT_EQ(t.rank, 1);
  EXPECT_EQ(t.collective, 2);
  t = findingTarget(m.analysis, {"problem", "slow-link", "link 3->0 is the bottleneck: 4x slower than its peers", "", "", -1});
  EXPECT_EQ(t.src, 3);
  EXPECT_EQ(t.dst, 0);
  m.analysis.collectives[0].expected_ns = 2;  // 5x slower than the model: the worst
  m.analysis.collectives[1].expected_ns = 5;
  t = findingTarget(m.analysis, {"warning", "low-busbw", "allreduce gloo: bus bandwidth at 30% of the fitted model", "", "", -1});
  EXPECT_EQ(t.collective, 0);
  TimeRange r = rangeAround(m.analysis.collectives[1], 0.5);
  EXPECT_LT(r.t0, 1000);
  EXPECT_GT(r.t1, 1020);
}

TEST(Compare, AlignsByOrderWithinOpAndSize) {
  analyzer::Analysis a, b;
  a.collectives = {instance("allreduce", 0, 4096, 0, 100), instance("broadcast", 1, 64, 100, 10),
                   instance("allreduce", 2, 4096, 200, 100), instance("allreduce", 3, 1 << 20, 300, 1000)};
  b.collectives = {instance("broadcast", 0, 64, 5000, 10), instance("allreduce", 1, 4096, 5100, 50),
                   instance("allreduce", 2, 4100, 5200, 200), instance("allreduce", 3, 1 << 20, 5300, 500)};
  a.start_ns = 0;
  b.start_ns = 5000;
  CompareModel c;
  buildCompare(a, b, "ring", "tree", &c);
  EXPECT_EQ(c.partner_of_a, (std::vector<int>{1, 0, 2, 3}));
  EXPECT_EQ(c.partner_of_b, (std::vector<int>{1, 0, 2, 3}));
  ASSERT_EQ(c.pairs.size(), 4u);
  EXPECT_DOUBLE_EQ(c.pairs[0].speedup, 2.0);   // 100 vs 50: B faster
  EXPECT_DOUBLE_EQ(c.pairs[2].speedup, 0.5);
  EXPECT_EQ(c.offsetFor(a, b, 0), 5100);
  EXPECT_EQ(c.offsetFor(a, b, -1), 5000);
  EXPECT_EQ(c.diff.aligned, 4);
  ASSERT_EQ(c.first_pair_of_row.size(), c.diff.rows.size());
  for (size_t i = 0; i < c.diff.rows.size(); ++i) {
    const auto& pa = a.collectives[static_cast<size_t>(c.pairs[static_cast<size_t>(c.first_pair_of_row[i])].a)];
    EXPECT_EQ(pa.op, c.diff.rows[i].op);
  }
  // One extra in A stays unpaired.
  a.collectives.push_back(instance("allreduce", 4, 1 << 20, 400, 1000));
  buildCompare(a, b, "ring", "tree", &c);
  EXPECT_EQ(c.partner_of_a[4], -1);
  EXPECT_EQ(c.diff.unmatched_a, 1);
}

TEST(Colors, StablePerNameAndSpeedupColours) {
  EXPECT_EQ(nameColor("allreduce", true), nameColor("allreduce", true));
  EXPECT_FALSE(nameColor("allreduce", true) == nameColor("broadcast", true));
  EXPECT_EQ(nameColor("my-op", false), nameColor("my-op", false));
  RgbF c;
  EXPECT_TRUE(speedupColor(2.0, &c));
  EXPECT_GT(c.g, c.r);
  EXPECT_TRUE(speedupColor(0.5, &c));
  EXPECT_GT(c.r, c.g);
  EXPECT_FALSE(speedupColor(1.0, &c));
  EXPECT_FALSE(speedupColor(0, &c));
}

// Only judged diff rows are coloured; a row of one instance a side is grey and says why.
TEST(Colors, DiffRowsColouredOnlyWhenJudged) {
  analyzer::DiffRow row;
  row.speedup = 24.8;
  row.count_a = row.count_b = 20;
  RgbF c;
  EXPECT_TRUE(diffRowColor(row, &c));
  EXPECT_EQ(diffRowTag(row), "");
  row.count_a = 1;
  row.note = "too few calls";
  EXPECT_FALSE(diffRowColor(row, &c));
  EXPECT_EQ(diffRowTag(row), "n<" + std::to_string(analyzer::kMinDiffSamples));
  row.count_a = 20;
  row.note = "inside the run-to-run noise";
  EXPECT_FALSE(diffRowColor(row, &c));
  EXPECT_EQ(diffRowTag(row), "noise");
}

TEST(Compare, DescribesEachTrace) {
  analyzer::Analysis a;
  a.ranks_present = {0, 1, 2, 3};
  a.start_ns = 0;
  a.end_ns = 12'300'000;
  a.collectives.resize(60);
  analyzer::OpStats o;
  o.op = "allreduce";
  o.library = "gloo";
  a.ops = {o, o};
  EXPECT_EQ(describeTrace("ring.sqlite", a), "ring.sqlite: 4 ranks, 60 collectives over 12.3 ms, gloo");
}

TEST(ViewState, UndoRedoAcrossGesturesAndNewStepsDropRedo) {
  ViewState v;
  v.setLimits(0, 1000000);
  v.setRange({100, 200100});
  v.commit();
  v.zoomAt(0.5, 0.5);
  v.commit();
  const TimeRange zoomed = v.range();
  EXPECT_TRUE(v.undo());
  EXPECT_EQ(v.range(), (TimeRange{100, 200100}));
  EXPECT_TRUE(v.undo());
  EXPECT_EQ(v.range(), (TimeRange{0, 1000000}));
  EXPECT_FALSE(v.undo());
  EXPECT_TRUE(v.redo());
  EXPECT_TRUE(v.redo());
  EXPECT_EQ(v.range(), zoomed);
  EXPECT_FALSE(v.redo());
  v.undo();
  v.panPixels(10, 100);  // a new step after an undo drops the redo
  v.commit();
  EXPECT_FALSE(v.redo());
  v.panPixels(10, 100);  // an uncommitted drag: undo goes back to where it began
  const TimeRange before = v.range();
  EXPECT_TRUE(v.undo());
  EXPECT_FALSE(v.range() == before);
}

TEST(Lod, ChunkSkippingGivesTheSameItemsAsOneByOne) {
  std::mt19937_64 rng(7);
  EventRow row;
  int64_t t = 0;
  for (int i = 0; i < 60000; ++i) {
    t += static_cast<int64_t>(rng() % 50);
    int64_t d = (i % 15000 == 17) ? 200000 : static_cast<int64_t>(rng() % 30);  // a few long ones
    row.events.push_back({t, t + d, 0, i, false});
  }
  row.finish();
  EventRow plain = row;  // the same events without chunk summaries: the one-by-one path
  plain.chunks.clear();
  plain.big_chunks.clear();
  for (auto [t0, t1, w] : {std::tuple<int64_t, int64_t, float>{0, t + 100, 1000}, {0, t / 3, 800},
                           {t / 4, t / 4 + 5000, 1200}, {-500, t * 2, 300}}) {
    TimeAxis axis{t0, t1, 10, w};
    auto fast = lodEvents(row, axis, 3.0f), slow = lodEvents(plain, axis, 3.0f);
    ASSERT_EQ(fast.size(), slow.size());
    for (size_t i = 0; i < fast.size(); ++i) {
      EXPECT_EQ(fast[i].first, slow[i].first);
      EXPECT_EQ(fast[i].count, slow[i].count);
      EXPECT_EQ(fast[i].end_ns, slow[i].end_ns);
      EXPECT_FLOAT_EQ(fast[i].x1, slow[i].x1);
    }
  }
}

TEST(Lod, HiddenLanesTakeNoSpaceAndPinnedComeFirst) {
  TimelineModel m = model({{"allreduce", 1}}, {10});
  ASSERT_EQ(m.lanes.size(), 3u);
  std::vector<LaneFlags> flags(3);
  flags[0].hidden = true;
  flags[2].pinned = true;
  auto layout = layoutLanes(m, flags, 0, {10, 40, 2});
  EXPECT_EQ(layout[0].height, 0);
  EXPECT_EQ(layout[2].y, 0);               // the pinned link lane first
  EXPECT_EQ(layout[1].y, 50 + 2);          // then rank 1
  TimeAxis axis{0, 2000, 0, 1000};
  FrameGeometry g = buildFrameGeometry(m, layout, axis, 0, 1000);
  for (const RowGeometry& r : g.rows) EXPECT_NE(r.lane, 0);
  EXPECT_EQ(g.counters.size(), 1u);
  EXPECT_GT(g.itemCount(), 0u);
}

}  // namespace
}  // namespace ringside::gui
