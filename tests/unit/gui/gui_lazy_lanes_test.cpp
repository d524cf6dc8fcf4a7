// Levels of detail loaded on demand (docs/viewer.md, "Memory at scale"): a rank lane's rows are
// built when the layout first shows it or a reader needs it, not at load. A folded lane builds
// nothing; a lane built on demand is, item by item, the lane built at once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ringside/gui/inspect.h"
#include "ringside/gui/lod.h"
#include "ringside/gui/timeline_model.h"

namespace ringside::gui {
namespace {

constexpr int kRanks = 8, kCalls = 5000;  // past EventRow::kBigChunk on every rank

// Two hosts of 4 ranks (ranks 0, 2, 4, 6 on h0): kCalls all-reduces a rank, rank 3's every 7th
// call overlapping the next (sub-rows), rank 5's failing every 11th, rank 6's last never returning
// (a hang: drawn to the trace's end), calls of a comm the analysis does not know (unmatched), and
// two phases per call of rank 1 given out of instance order (the model sorts its records).
void makeTrace(analyzer::Analysis* a, std::vector<RankCall>* calls) {
  a->world_size = kRanks;
  a->start_ns = 0;
  a->end_ns = 1000 * kCalls + 5000;
  a->bin_ns = 1000;
  a->hosts.resize(2);
  a->hosts[0].name = "h0";
  a->hosts[1].name = "h1";
  for (int r = 0; r < kRanks; ++r) {
    a->ranks_present.push_back(r);
    analyzer::RankStats rs;
    rs.rank = r;
    rs.host = r % 2;
    a->ranks.push_back(rs);
    a->hosts[static_cast<size_t>(r % 2)].ranks.push_back(r);
  }
  for (int s = 0; s < kCalls; ++s) {
    analyzer::CollectiveInstance c;
    c.comm = "w";
    c.seq = s;
    c.op = "allreduce";
    c.last_start_ns = 1000 * s + 90;
    a->collectives.push_back(c);
  }
  for (int r = kRanks - 1; r >= 0; --r) {  // any order: the model groups them by rank
    for (int s = 0; s < kCalls; ++s) {
      const int64_t start = 1000 * s + 10 * r;
      int64_t end = start + (r == 3 && s % 7 == 0 ? 1500 : 400);
      if (r == 6 && s == kCalls - 1) end = -1;  // never returned
      calls->push_back({r, s % 97 == 0 ? "other" : "w", s, s % 2 ? "allreduce" : "broadcast", start, end,
                        r == 5 && s % 11 == 0});
    }
  }
  for (int s = kCalls - 1; s >= 0; --s) {
    a->phases.push_back({"w", s, 1, "reduce-scatter", 1000 * s + 100, 1000 * s + 250, 3, 1, 50, true, 20});
    a->phases.push_back({"w", s, 1, "all-gather", 1000 * s + 250, 1000 * s + 400, 3, -1, 0, true, 0});
  }
}

TimelineModel model(bool lazy) {
  analyzer::Analysis a;
  std::vector<RankCall> calls;
  makeTrace(&a, &calls);
  TimelineModel m;
  buildTimeline(std::move(a), calls, &m, lazy);
  return m;
}

void expectSameRow(const EventRow& got, const EventRow& want, const std::string& where) {
  EXPECT_EQ(got.name, want.name) << where;
  ASSERT_EQ(got.events.size(), want.events.size()) << where;
  for (size_t i = 0; i < got.events.size(); ++i) {
    const TimelineEvent &g = got.events[i], &w = want.events[i];
    EXPECT_EQ(g.start_ns, w.start_ns) << where << " event " << i;
    EXPECT_EQ(g.end_ns, w.end_ns) << where << " event " << i;
    EXPECT_EQ(g.label, w.label) << where << " event " << i;
    EXPECT_EQ(g.collective, w.collective) << where << " event " << i;
    EXPECT_EQ(g.failed, w.failed) << where << " event " << i;
  }
  EXPECT_EQ(got.max_end_prefix, want.max_end_prefix) << where;
  auto same_chunks = [&](const std::vector<EventRow::ChunkSummary>& x,
                         const std::vector<EventRow::ChunkSummary>& y, const char* level) {
    ASSERT_EQ(x.size(), y.size()) << where << " " << level;
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_EQ(x[i].max_duration, y[i].max_duration) << where << " " << level << " " << i;
      EXPECT_EQ(x[i].max_end, y[i].max_end) << where << " " << level << " " << i;
      EXPECT_EQ(x[i].last_start, y[i].last_start) << where << " " << level << " " << i;
      EXPECT_EQ(x[i].max_gap, y[i].max_gap) << where << " " << level << " " << i;
    }
  };
  same_chunks(got.chunks, want.chunks, "chunks");
  same_chunks(got.big_chunks, want.big_chunks, "big chunks");
}

// The level of detail a frame draws of a row, at full zoom-out, 1 % and 0.01 % of the trace.
void expectSameLod(const TimelineModel& m, const EventRow& got, const EventRow& want, const std::string& where) {
  const int64_t span = m.end_ns - m.start_ns, mid = m.start_ns + span / 2;
  for (int64_t width : {span, span / 100, span / 10000}) {
    const TimeAxis axis{mid - width / 2, mid + width / 2, 0, 1600};
    const std::vector<DrawItem> g = lodEvents(got, axis), w = lodEvents(want, axis);
    ASSERT_EQ(g.size(), w.size()) << where << " width " << width;
    for (size_t i = 0; i < g.size(); ++i) {
      EXPECT_EQ(g[i].x0, w[i].x0) << where;
      EXPECT_EQ(g[i].x1, w[i].x1) << where;
      EXPECT_EQ(g[i].start_ns, w[i].start_ns) << where;
      EXPECT_EQ(g[i].end_ns, w[i].end_ns) << where;
      EXPECT_EQ(g[i].first, w[i].first) << where;
      EXPECT_EQ(g[i].count, w[i].count) << where;
    }
  }
}

TEST(LazyLanes, AFoldedLaneBuildsNothing) {
  const TimelineModel m = model(/*lazy=*/true);
  ASSERT_EQ(m.lanes.size(), 10u);  // 2 host lanes, 8 rank lanes, no link lanes
  EXPECT_EQ(m.unbuiltLanes(), 8u);
  for (const Lane& l : m.lanes) {
    if (l.kind != LaneKind::kRank) continue;
    EXPECT_FALSE(l.built) << l.name;
    EXPECT_TRUE(l.rows.empty()) << l.name;
  }
  // As the viewer opens many ranks: every host folded. A frame builds nothing.
  std::vector<LaneFlags> flags(m.lanes.size());
  for (size_t i = 0; i < m.lanes.size(); ++i) flags[i].collapsed = m.lanes[i].kind == LaneKind::kHost;
  const TimeAxis axis{m.start_ns, m.end_ns, 0, 1600};
  (void)buildFrameGeometry(m, layoutLanes(m, flags, 0), axis, 0, 1e9f);
  EXPECT_EQ(m.unbuiltLanes(), 8u);
  // Unfolding h1 lays its lanes out at their height (rows counted, not built); the frame that
  // draws them builds them, and only those; a lane folded on its own, or out of view, stays unbuilt.
  ASSERT_EQ(m.lanes[5].kind, LaneKind::kHost);
  flags[5].collapsed = false;
  flags[6].collapsed = true;
  const std::vector<LaneLayout> layout = layoutLanes(m, flags, 0);
  EXPECT_EQ(m.unbuiltLanes(), 8u);
  EXPECT_FLOAT_EQ(layout[7].height, layout[7].header + layout[7].row_height * static_cast<float>(m.rowCount(7)));
  (void)buildFrameGeometry(m, layout, axis, 0, layout[9].y - 1);  // rank 7's lane just out of view
  for (size_t i = 0; i < m.lanes.size(); ++i) {
    if (m.lanes[i].kind != LaneKind::kRank) continue;
    EXPECT_EQ(m.lanes[i].built, i == 7 || i == 8) << m.lanes[i].name;
  }
  // Folded again, a lane gives its rows back; shown again, it is built the same.
  const EventRow before = m.lanes[7].rows[0];
  const size_t rows_before = m.lanes[7].rows.size();
  m.releaseLane(7);
  EXPECT_FALSE(m.lanes[7].built);
  EXPECT_TRUE(m.lanes[7].rows.empty());
  EXPECT_EQ(m.rowCount(7), rows_before);  // laid out as before
  m.buildLane(7);
  EXPECT_EQ(m.lanes[7].rows[0].events.size(), before.events.size());
  EXPECT_EQ(m.lanes[7].rows[0].max_end_prefix, before.max_end_prefix);
  // The overview reads the calls without building a lane, and draws what the eager model does.
  const TimelineModel eager = model(/*lazy=*/false);
  EXPECT_EQ(eager.unbuiltLanes(), 0u);
  EXPECT_EQ(m.overview.wait, eager.overview.wait);
  EXPECT_EQ(m.overview.move, eager.overview.move);
  EXPECT_EQ(m.overview.first_lane, eager.overview.first_lane);
  EXPECT_EQ(m.start_ns, eager.start_ns);
  EXPECT_EQ(m.end_ns, eager.end_ns);
}

TEST(LazyLanes, UnfoldingBuildsTheSameEventsAndLevelsOfDetailAsBuildingAtOnce) {
  const TimelineModel lazy = model(/*lazy=*/true), eager = model(/*lazy=*/false);
  ASSERT_EQ(lazy.lanes.size(), eager.lanes.size());
  EXPECT_EQ(lazy.labels, eager.labels);
  std::vector<size_t> counted(lazy.lanes.size());
  for (size_t i = 0; i < lazy.lanes.size(); ++i) counted[i] = lazy.rowCount(i);
  // Everything unfolded, and in view.
  const std::vector<LaneLayout> layout = layoutLanes(lazy, std::vector<LaneFlags>(lazy.lanes.size()), 0);
  (void)buildFrameGeometry(lazy, layout, TimeAxis{lazy.start_ns, lazy.end_ns, 0, 1600}, 0, 1e9f);
  EXPECT_EQ(lazy.unbuiltLanes(), 0u);
  for (size_t i = 0; i < lazy.lanes.size(); ++i) EXPECT_EQ(counted[i], lazy.lanes[i].rows.size()) << lazy.lanes[i].name;
  for (size_t i = 0; i < lazy.lanes.size(); ++i) {
    const Lane &g = lazy.lanes[i], &w = eager.lanes[i];
    EXPECT_EQ(g.name, w.name);
    ASSERT_EQ(g.rows.size(), w.rows.size()) << g.name;
    EXPECT_EQ(g.call_rows, w.call_rows) << g.name;
    for (size_t r = 0; r < g.rows.size(); ++r) {
      expectSameRow(g.rows[r], w.rows[r], g.name + " row " + std::to_string(r));
      expectSameLod(lazy, g.rows[r], w.rows[r], g.name + " row " + std::to_string(r));
    }
  }
  // And what the build at load always made (before lanes were built on demand): each rank's calls,
  // matched to their instance, partitioned into rows.
  analyzer::Analysis a;
  std::vector<RankCall> calls;
  makeTrace(&a, &calls);
  for (size_t i = 0; i < lazy.lanes.size(); ++i) {
    const Lane& l = lazy.lanes[i];
    if (l.kind != LaneKind::kRank) continue;
    std::vector<TimelineEvent> mine;
    for (const RankCall& c : calls) {
      if (c.rank != l.rank) continue;
      const int64_t end = c.end_ns < c.start_ns ? a.end_ns : c.end_ns;
      const int label = static_cast<int>(std::find(lazy.labels.begin(), lazy.labels.end(), c.op) - lazy.labels.begin());
      mine.push_back({c.start_ns, end, label, c.comm == "w" ? static_cast<int32_t>(c.seq) : -1, c.failed});
    }
    std::reverse(mine.begin(), mine.end());  // any order: partitionRows sorts by start
    const std::vector<EventRow> want = partitionRows(std::move(mine), "collectives");
    ASSERT_EQ(static_cast<size_t>(l.call_rows), want.size()) << l.name;
    for (size_t r = 0; r < want.size(); ++r) expectSameRow(l.rows[r], want[r], l.name + " (by definition)");
  }
  // The cases the trace was made for, all there.
  EXPECT_GT(eager.lanes[7].call_rows, 1);                          // rank 3 (h1): sub-rows
  EXPECT_GE(eager.lanes[1].rows[0].events.size(), EventRow::kBigChunk);
  EXPECT_EQ(eager.lanes[6].rows[1].events.size(), 2u * kCalls);     // rank 1 (h1): its phases
  EXPECT_EQ(eager.lanes[4].rows[0].events.back().end_ns, eager.analysis.end_ns);  // rank 6's hang
}

TEST(LazyLanes, ReadersBuildTheLanesTheyRead) {
  const TimelineModel lazy = model(/*lazy=*/true), eager = model(/*lazy=*/false);
  // Selecting a collective reads it on every rank, folded or not, from the sources: no lane built.
  const CollectiveDetails got = collectiveDetails(lazy, 1234), want = collectiveDetails(eager, 1234);
  ASSERT_EQ(got.ranks.size(), static_cast<size_t>(kRanks));
  ASSERT_EQ(got.ranks.size(), want.ranks.size());
  for (size_t i = 0; i < got.ranks.size(); ++i) {
    EXPECT_EQ(std::tie(got.ranks[i].rank, got.ranks[i].start_ns, got.ranks[i].end_ns, got.ranks[i].failed),
              std::tie(want.ranks[i].rank, want.ranks[i].start_ns, want.ranks[i].end_ns, want.ranks[i].failed));
  }
  EXPECT_EQ(lazy.unbuiltLanes(), 8u);
  // So do a time range's statistics, the same on every rank.
  const RangeStats range = rangeStats(lazy, 1000000, 3000000), range_want = rangeStats(eager, 1000000, 3000000);
  ASSERT_EQ(range.ranks.size(), range_want.ranks.size());
  for (size_t i = 0; i < range.ranks.size(); ++i) {
    EXPECT_EQ(std::tie(range.ranks[i].rank, range.ranks[i].calls, range.ranks[i].busy_ns),
              std::tie(range_want.ranks[i].rank, range_want.ranks[i].calls, range_want.ranks[i].busy_ns));
  }
  EXPECT_EQ(lazy.unbuiltLanes(), 8u);
  // Every (lane, row, event) of an instance points into built rows: those lanes are built.
  const auto refs = lazy.eventsOfCollective(1234), refs_want = eager.eventsOfCollective(1234);
  ASSERT_EQ(refs.size(), refs_want.size());
  for (size_t i = 0; i < refs.size(); ++i) {
    EXPECT_EQ(std::tie(refs[i].lane, refs[i].row, refs[i].event),
              std::tie(refs_want[i].lane, refs_want[i].row, refs_want[i].event));
  }
  EXPECT_EQ(lazy.unbuiltLanes(), 0u);
  // callsOf gives a lane's calls from the sources, built or not, as the built lane holds them.
  const TimelineModel fresh = model(/*lazy=*/true);
  const std::vector<TimelineEvent> calls = fresh.callsOf(2);
  EXPECT_FALSE(fresh.lanes[2].built);
  ASSERT_EQ(calls.size(), eager.lanes[2].rows[0].events.size());
  EXPECT_EQ(calls[17].collective, eager.lanes[2].rows[0].events[17].collective);
}

}  // namespace
}  // namespace ringside::gui
