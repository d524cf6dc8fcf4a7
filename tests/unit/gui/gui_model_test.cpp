#include <gtest/gtest.h>
#include <zlib.h>

#include "ringside/gui/inspect.h"
#include "ringside/gui/lod.h"
#include "ringside/gui/png_writer.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {
namespace {

// Two ranks, three allreduces; rank 1 enters each one 10 ns late. One link 0 -> 1.
TimelineModel threeCollectives() {
  analyzer::Analysis a;
  a.world_size = 2;
  a.ranks_present = {0, 1};
  a.start_ns = 0;
  a.end_ns = 1000;
  a.bin_ns = 100;
  for (int s = 0; s < 3; ++s) {
    analyzer::CollectiveInstance c;
    c.comm = "w";
    c.seq = s;
    c.op = "allreduce";
    a.collectives.push_back(c);
  }
  analyzer::LinkStats l;
  l.src = 0;
  l.dst = 1;
  l.gbps_per_bin = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  a.links.push_back(l);
  a.phases.push_back({"w", 0, 0, "reduce-scatter", 100, 150, 1, -1, 0, true});
  std::vector<RankCall> calls;
  for (int r : {1, 0}) {
    for (int s = 2; s >= 0; --s) {
      calls.push_back({r, "w", s, "allreduce", s * 300 + r * 10, s * 300 + 200, false});
    }
  }
  TimelineModel m;
  buildTimeline(a, calls, &m);
  return m;
}

TEST(TimelineModel, LanesPerRankThenPerLinkSorted) {
  TimelineModel m = threeCollectives();
  ASSERT_EQ(m.lanes.size(), 3u);
  EXPECT_EQ(m.lanes[0].name, "rank 0");
  EXPECT_EQ(m.lanes[1].name, "rank 1");
  EXPECT_EQ(m.lanes[2].kind, LaneKind::kLink);
  EXPECT_EQ(m.lanes[2].name, "0 -> 1");
  const auto& ev = m.lanes[1].rows[0].events;
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[0].start_ns, 10);
  EXPECT_EQ(ev[2].start_ns, 610);
  EXPECT_EQ(ev[2].collective, 2);
  EXPECT_EQ(m.lanes[0].rows[1].events.size(), 1u);
  EXPECT_EQ(m.labels[static_cast<size_t>(m.lanes[0].rows[1].events[0].label)], "reduce-scatter");
  EXPECT_DOUBLE_EQ(m.lanes[2].counter.values[9], 9e9);  // GB/s = bytes/ns
  EXPECT_EQ(m.start_ns, 0);
  EXPECT_EQ(m.end_ns, 1000);
}

// Ranks of a trace of 2+ hosts come in host groups, each after a host lane that folds them.
TEST(TimelineModel, RanksGroupedByHostFoldTogether) {
  analyzer::Analysis a;
  a.world_size = 4;
  a.ranks_present = {0, 1, 2, 3};
  a.start_ns = 0;
  a.end_ns = 1000;
  a.bin_ns = 100;
  a.hosts.resize(2);
  a.hosts[0].name = "h0";
  a.hosts[0].ranks = {0, 2};
  a.hosts[1].name = "h1";
  a.hosts[1].ranks = {1, 3};
  for (int r = 0; r < 4; ++r) {
    analyzer::RankStats rs;
    rs.rank = r;
    rs.host = r % 2;
    a.ranks.push_back(rs);
  }
  TimelineModel m;
  buildTimeline(a, {{0, "w", 0, "allreduce", 0, 100, false}, {3, "w", 0, "allreduce", 5, 100, false}}, &m);
  ASSERT_EQ(m.lanes.size(), 6u);
  EXPECT_EQ(m.lanes[0].kind, LaneKind::kHost);
  EXPECT_EQ(m.lanes[0].name, "host h0 (2 ranks)");
  EXPECT_EQ(m.lanes[1].name, "rank 0");
  EXPECT_EQ(m.lanes[2].name, "rank 2");
  EXPECT_EQ(m.lanes[3].name, "host h1 (2 ranks)");
  EXPECT_EQ(m.lanes[4].name, "rank 1");
  EXPECT_EQ(m.lanes[5].name, "rank 3");
  EXPECT_EQ(m.lanes[5].rows[0].events.size(), 1u);
  // Folding h0 hides ranks 0 and 2; h1's stay.
  std::vector<bool> folded(m.lanes.size(), false);
  folded[0] = true;
  const std::vector<LaneLayout> l = layoutLanes(m, folded, 0);
  EXPECT_GT(l[0].height, 0);
  EXPECT_EQ(l[1].height, 0);
  EXPECT_EQ(l[2].height, 0);
  EXPECT_GT(l[4].height, 0);
  EXPECT_FLOAT_EQ(l[3].height, l[3].header);  // a host lane is its header only
}

TEST(TimelineModel, SelectionFindsTheCollectiveOnEveryRank) {
  TimelineModel m = threeCollectives();
  auto refs = m.eventsOfCollective(1);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].lane, 0);
  EXPECT_EQ(refs[1].lane, 1);
  EXPECT_EQ(m.lanes[1].rows[0].events[static_cast<size_t>(refs[1].event)].start_ns, 310);
  EXPECT_TRUE(m.eventsOfCollective(-1).empty());
}

// DDP's bucket all-reduces overlap on one rank: each gets a sub-row, nothing is drawn on top of
// another, the layout makes room, and selection, search and range statistics see every row.
TEST(TimelineModel, OverlappingCallsGetSubRows) {
  analyzer::Analysis a;
  a.world_size = 1;
  a.ranks_present = {0};
  a.start_ns = 0;
  a.end_ns = 1000;
  for (int s = 0; s < 4; ++s) {
    analyzer::CollectiveInstance c;
    c.comm = "w";
    c.seq = s;
    c.op = "allreduce";
    a.collectives.push_back(c);
  }
  // 0: [0, 500); 1: [100, 300) overlaps 0; 2: [200, 400) overlaps both; 3: [500, 600) fits row 0.
  std::vector<RankCall> calls = {{0, "w", 0, "allreduce", 0, 500, false},
                                 {0, "w", 1, "allreduce", 100, 300, false},
                                 {0, "w", 2, "allreduce", 200, 400, false},
                                 {0, "w", 3, "allreduce", 500, 600, false}};
  a.phases.push_back({"w", 0, 0, "reduce-scatter", 0, 400, 1, -1, 0, true});
  a.phases.push_back({"w", 1, 0, "reduce-scatter", 100, 250, 1, -1, 0, true});
  TimelineModel m;
  buildTimeline(a, calls, &m);
  ASSERT_EQ(m.lanes.size(), 1u);
  const Lane& lane = m.lanes[0];
  ASSERT_EQ(lane.call_rows, 3);
  ASSERT_EQ(lane.rows.size(), 5u);  // 3 call rows, 2 phase rows
  EXPECT_EQ(lane.rows[0].name, "collectives");
  EXPECT_EQ(lane.rows[1].name, "collectives 2");
  EXPECT_EQ(lane.rows[3].name, "phases");
  EXPECT_EQ(lane.rows[4].name, "phases 2");
  ASSERT_EQ(lane.rows[0].events.size(), 2u);
  EXPECT_EQ(lane.rows[0].events[1].collective, 3);
  EXPECT_EQ(lane.rows[1].events[0].collective, 1);
  EXPECT_EQ(lane.rows[2].events[0].collective, 2);
  for (const EventRow& row : lane.rows) {
    for (size_t i = 1; i < row.events.size(); ++i) {
      EXPECT_LE(row.events[i - 1].end_ns, row.events[i].start_ns) << row.name;
    }
  }
  const auto refs = m.eventsOfCollective(2);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].row, 2);
  const RangeStats st = rangeStats(m, 0, 1000);
  ASSERT_EQ(st.ranks.size(), 1u);
  EXPECT_EQ(st.ranks[0].calls, 4);
  EXPECT_EQ(st.ranks[0].busy_ns, 600);  // the union, not the sum (900)
  // One line per row under the header.
  const LayoutOptions lo{10, 40, 4};
  const auto layout = layoutLanes(m, std::vector<bool>{}, 0, lo);
  EXPECT_FLOAT_EQ(layout[0].height, 10 + 5 * 10);
  TimeAxis axis{0, 1000, 0, 1000};
  EXPECT_EQ(hitTest(m, layout, axis, 250, 10 + 2 * 10 + 5, 3.0f, 0).event, 0);  // row 2's only call
  EXPECT_EQ(hitTest(m, layout, axis, 250, 10 + 2 * 10 + 5, 3.0f, 0).row, 2);
  // Without overlap one row, as before.
  calls = {{0, "w", 0, "allreduce", 0, 100, false}, {0, "w", 1, "allreduce", 100, 200, false}};
  a.phases.clear();
  buildTimeline(a, calls, &m);
  EXPECT_EQ(m.lanes[0].call_rows, 1);
  EXPECT_EQ(m.lanes[0].rows.size(), 2u);
}

// Every link lane is drawn to one scale, the busiest link's peak: a link that carried little
// stays low beside the busy ones.
TEST(TimelineModel, LinkLanesShareOneScale) {
  analyzer::Analysis a;
  a.world_size = 3;
  a.ranks_present = {0, 1, 2};
  a.start_ns = 0;
  a.end_ns = 1000;
  a.bin_ns = 500;
  analyzer::LinkStats busy, quiet;
  busy.src = 0;
  busy.dst = 1;
  busy.gbps_per_bin = {4, 8};
  quiet.src = 2;
  quiet.dst = 0;
  quiet.gbps_per_bin = {0, 0.001};
  a.links = {quiet, busy};
  TimelineModel m;
  buildTimeline(a, {}, &m);
  ASSERT_EQ(m.lanes.size(), 5u);
  EXPECT_DOUBLE_EQ(m.lanes[3].counter.max_value, 8e9);
  EXPECT_DOUBLE_EQ(m.lanes[4].counter.max_value, 1e6);
  EXPECT_DOUBLE_EQ(m.link_scale, 8e9);  // not each lane's own peak
  a.links.clear();
  buildTimeline(a, {}, &m);
  EXPECT_DOUBLE_EQ(m.link_scale, 0);  // a rebuilt model starts over
}

// More overlap than max_rows: the extra calls share the row that frees first.
TEST(TimelineModel, SubRowsAreCapped) {
  std::vector<TimelineEvent> events;
  for (int i = 0; i < 10; ++i) events.push_back({i, 100 + i, 0, i, false});
  const auto rows = partitionRows(events, "collectives", 4);
  ASSERT_EQ(rows.size(), 4u);
  size_t total = 0;
  for (const EventRow& r : rows) total += r.events.size();
  EXPECT_EQ(total, 10u);
  EXPECT_EQ(partitionRows({}, "phases").size(), 1u);
}

TEST(Lod, WideEventsStayNarrowOnesMergeIntoCountedBlocks) {
  EventRow row;
  row.events.push_back({0, 1000, 0, -1, false});  // 100 px
  for (int i = 0; i < 10; ++i) row.events.push_back({2000 + i * 10, 2005 + i * 10, 0, -1, false});
  row.events.push_back({5000, 6000, 0, -1, false});
  row.finish();
  TimeAxis axis{0, 10000, 0, 1000};  // 10 ns per px
  auto items = lodEvents(row, axis, 3.0f);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].count, 1);
  EXPECT_FLOAT_EQ(items[0].x1, 100);
  EXPECT_EQ(items[1].count, 10);
  EXPECT_EQ(items[1].first, 1);
  EXPECT_EQ(items[1].end_ns, 2095);
  EXPECT_EQ(items[2].first, 11);
  // Zoomed in on the narrow ones: each is its own item.
  auto close = lodEvents(row, TimeAxis{2000, 2100, 0, 1000}, 3.0f);
  EXPECT_EQ(close.size(), 10u);
  for (const DrawItem& it : close) EXPECT_EQ(it.count, 1);
}

TEST(Lod, LongEventStartingBeforeTheViewIsFound) {
  EventRow row;
  row.events.push_back({0, 10000, 0, -1, false});
  row.events.push_back({100, 200, 0, -1, false});
  row.finish();
  auto items = lodEvents(row, TimeAxis{5000, 6000, 0, 100}, 3.0f);
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(items[0].first, 0);
  EXPECT_FLOAT_EQ(items[0].x0, 0);
  EXPECT_FLOAT_EQ(items[0].x1, 100);
}

TEST(Lod, CounterKeepsMinAndMaxPerPixel) {
  Counter c;
  c.start_ns = 0;
  c.bin_ns = 10;
  c.values = {1, 5, 2, 8, 3, 3, 0, 9};
  auto cols = downsampleCounter(c, TimeAxis{0, 80, 0, 2});  // 4 bins per pixel
  ASSERT_EQ(cols.size(), 2u);
  EXPECT_EQ(cols[0].min, 1);
  EXPECT_EQ(cols[0].max, 8);
  EXPECT_EQ(cols[1].min, 0);
  EXPECT_EQ(cols[1].max, 9);
  // Outside the counter's time: no columns.
  EXPECT_TRUE(downsampleCounter(c, TimeAxis{100, 200, 0, 10}).empty());
}

TEST(Lod, HitTestFindsEventUnderPixel) {
  TimelineModel m = threeCollectives();
  std::vector<bool> collapsed(m.lanes.size(), false);
  LayoutOptions o{20, 40, 4};
  auto layout = layoutLanes(m, collapsed, 100, o);
  ASSERT_EQ(layout.size(), 3u);
  EXPECT_FLOAT_EQ(layout[1].y, 100 + 60 + 4);
  TimeAxis axis{0, 1000, 0, 1000};
  // Rank 1, collectives row (header 20 px), x = 350 ns: its second allreduce.
  Hit h = hitTest(m, layout, axis, 350, layout[1].y + 25);
  EXPECT_EQ(h.lane, 1);
  EXPECT_EQ(h.row, 0);
  EXPECT_EQ(h.event, 1);
  EXPECT_EQ(h.count, 1);
  // Between collectives: nothing.
  EXPECT_EQ(hitTest(m, layout, axis, 250, layout[1].y + 25).event, -1);
  // Folded lane: only the header.
  collapsed[1] = true;
  layout = layoutLanes(m, collapsed, 100, o);
  EXPECT_FLOAT_EQ(layout[1].height, 20);
  h = hitTest(m, layout, axis, 350, layout[1].y + 5);
  EXPECT_EQ(h.lane, 1);
  EXPECT_EQ(h.event, -1);
}

// The two halves the timeline's lane classes use: the lane under y, then a rank lane's own
// hit-test; together they answer as hitTest does, and a hidden lane is never under the mouse.
TEST(Lod, LaneAtThenTheRankLanesOwnHitTestAgreeWithHitTest) {
  TimelineModel m = threeCollectives();
  std::vector<LaneFlags> flags(m.lanes.size());
  LayoutOptions o{20, 40, 4};
  auto layout = layoutLanes(m, flags, 100, o);
  TimeAxis axis{0, 1000, 0, 1000};
  const float y = layout[1].y + 25;
  ASSERT_EQ(laneAt(layout, y), 1);
  EXPECT_EQ(laneAt(layout, 99), -1);               // above the first lane
  EXPECT_EQ(laneAt(layout, layout[1].y - 2), -1);  // in the gap between lanes
  const Hit own = hitRankLane(m.lanes[1], 1, layout[1], axis, 350, y);
  const Hit all = hitTest(m, layout, axis, 350, y);
  EXPECT_EQ(own.lane, all.lane);
  EXPECT_EQ(own.row, all.row);
  EXPECT_EQ(own.event, all.event);
  EXPECT_EQ(own.count, all.count);
  EXPECT_EQ(own.event, 1);
  // Rank 1 hidden: its y now belongs to the lane laid out there, or to none.
  flags[1].hidden = true;
  layout = layoutLanes(m, flags, 100, o);
  EXPECT_FLOAT_EQ(layout[1].height, 0);
  EXPECT_NE(laneAt(layout, layout[1].y), 1);
}

TEST(ViewState, ZoomKeepsTheCursorTimeAndUndoRedo) {
  ViewState v;
  v.setLimits(0, 1000000);
  v.zoomAt(0.25, 0.5);
  EXPECT_EQ(v.range().t0, 125000);
  EXPECT_EQ(v.range().t1, 625000);
  v.commit();
  v.panPixels(100, 1000);  // one tenth of the span to the left
  EXPECT_EQ(v.range().t0, 75000);
  v.commit();
  EXPECT_TRUE(v.undo());
  EXPECT_EQ(v.range().t0, 125000);
  EXPECT_TRUE(v.undo());
  EXPECT_EQ(v.range(), (TimeRange{0, 1000000}));
  EXPECT_FALSE(v.undo());
  EXPECT_TRUE(v.redo());
  EXPECT_EQ(v.range().t0, 125000);
  v.fit();
  EXPECT_EQ(v.range(), v.limits());
  v.zoomAt(0.5, 1e-9);
  EXPECT_EQ(v.range().t1 - v.range().t0, ViewState::kMinSpanNs);
}

// A range is kept inside the trace: zooming to a call near the start once showed time before
// the trace began ("-64.22 ms .. 257.4 ms"); a range wider than the trace shows the trace.
TEST(ViewState, RangesStayInsideTheTrace) {
  ViewState v;
  v.setLimits(1000, 2000);
  v.setRange({900, 1100});
  EXPECT_EQ(v.range(), (TimeRange{1000, 1200}));
  v.setRange({1900, 2100});
  EXPECT_EQ(v.range(), (TimeRange{1800, 2000}));
  v.setRange({0, 5000});
  EXPECT_EQ(v.range(), v.limits());
  v.setRange({1200, 1300});
  v.panPixels(10000, 100);  // far to the left: stops at the start
  EXPECT_EQ(v.range(), (TimeRange{1000, 1100}));
}

TEST(Png, EncodesAValidImage) {
  std::vector<uint8_t> px = {255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9};
  std::vector<uint8_t> png;
  std::string err;
  ASSERT_TRUE(encodePng(px, 2, 2, 3, &png, &err)) << err;
  ASSERT_GT(png.size(), 8u + 25u);
  EXPECT_EQ(png[1], 'P');
  EXPECT_EQ(png[12], 'I');  // IHDR first
  EXPECT_EQ(png[19], 2);    // width 2
  // IHDR's CRC matches.
  uint32_t crc = crc32Png(png.data() + 12, 17);
  uint32_t stored = (uint32_t{png[29]} << 24) | (uint32_t{png[30]} << 16) | (uint32_t{png[31]} << 8) | png[32];
  EXPECT_EQ(crc, stored);
  EXPECT_EQ(crc32Png(reinterpret_cast<const uint8_t*>("123456789"), 9), 0xCBF43926u);
  // IDAT inflates to 2 rows of filter byte + 6 bytes.
  uint32_t len = (uint32_t{png[33]} << 24) | (uint32_t{png[34]} << 16) | (uint32_t{png[35]} << 8) | png[36];
  std::vector<uint8_t> raw(14);
  uLongf raw_len = raw.size();
  ASSERT_EQ(uncompress(raw.data(), &raw_len, png.data() + 41, len), Z_OK);
  EXPECT_EQ(raw_len, 14u);
  EXPECT_EQ(raw[7], 0);
  EXPECT_EQ(raw[13], 9);
  EXPECT_FALSE(encodePng(px, 3, 2, 3, &png, &err));
}

}  // namespace
}  // namespace ringside::gui
