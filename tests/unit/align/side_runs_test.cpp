// Unit tests of align/src/side_runs.h: message sides kept as delta- and varint-encoded sorted
// runs come back exactly, merged into the total order the fit pairs them in, and pair the same
// however they were split into runs.
#include "side_runs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "internal.h"

namespace ringside::align::detail {
namespace {

bool same(const Side& a, const Side& b) {
  return a.src == b.src && a.dst == b.dst && a.slot == b.slot && a.bytes == b.bytes &&
         a.recv == b.recv && a.t == b.t;
}

std::vector<Side> drained(SideRuns* runs) {
  std::vector<Side> out;
  runs->drain([&](const Side& s) { out.push_back(s); });
  return out;
}

// Any values round-trip, the extremes of every field included (a damaged trace's), and come
// back in sideBefore order across runs of every length.
TEST(SideRunsTest, EverySideComesBackInPairingOrder) {
  std::mt19937_64 rng(27);
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const int32_t lo32 = std::numeric_limits<int32_t>::min(), hi32 = std::numeric_limits<int32_t>::max();
  std::vector<Side> all = {{lo32, hi32, lo, hi, true, lo}, {hi32, lo32, hi, lo, false, hi},
                           {0, 0, 0, 0, false, 0},         {hi32, hi32, hi, hi, true, hi},
                           {lo32, lo32, lo, lo, false, lo}};
  for (int i = 0; i < 20000; ++i) {
    const bool wild = i % 7 == 0;
    all.push_back({static_cast<int32_t>(wild ? rng() : rng() % 64),
                   static_cast<int32_t>(wild ? rng() : rng() % 64), static_cast<int64_t>(rng() % 4),
                   wild ? static_cast<int64_t>(rng()) : 1 << 20, (rng() & 1) != 0,
                   wild ? static_cast<int64_t>(rng()) : static_cast<int64_t>(rng() % 1'000'000'000)});
  }
  std::vector<Side> sorted = all;
  std::sort(sorted.begin(), sorted.end(), sideBefore);
  for (size_t run : {size_t{1}, size_t{3}, size_t{1000}, all.size()}) {
    SCOPED_TRACE(run);
    SideRuns runs;
    for (size_t i = 0; i < all.size(); ++i) {
      runs.add(all[i]);
      if ((i + 1) % run == 0) runs.endRun();
    }
    const std::vector<Side> back = drained(&runs);
    ASSERT_EQ(back.size(), sorted.size());
    for (size_t i = 0; i < back.size(); ++i) ASSERT_TRUE(same(back[i], sorted[i])) << i;
    EXPECT_EQ(runs.runs(), 0u);  // freed as read
  }
}

// Runs moved from one SideRuns to another (a merge's inputs, some left out) give exactly the
// sides of the runs moved; a tree's sends take a few bytes each instead of 40.
TEST(SideRunsTest, RunsMovedKeepTheirSidesCompactly) {
  SideRuns inputs;
  std::vector<Side> kept;
  for (int32_t rank = 0; rank < 8; ++rank) {
    for (int64_t k = 0; k < 200; ++k) {  // 200 1 MiB sends to two children, 5 ms apart
      for (int32_t child : {2 * rank + 1, 2 * rank + 2}) {
        const Side s{rank, child, 0, 1 << 20, false, 3'600'000'000'000 + k * 5'000'000 + rank};
        inputs.add(s);
        if (rank != 5) kept.push_back(s);
      }
    }
    inputs.endRun();
  }
  EXPECT_LT(inputs.encodedBytes(), 9u * 400 * 8);  // about 8 bytes a side, not 40
  SideRuns taken;
  for (size_t r = 0; r < inputs.runs(); ++r) {
    if (r != 5) taken.takeRun(inputs, r);
  }
  std::sort(kept.begin(), kept.end(), sideBefore);
  const std::vector<Side> back = drained(&taken);
  ASSERT_EQ(back.size(), kept.size());
  for (size_t i = 0; i < back.size(); ++i) ASSERT_TRUE(same(back[i], kept[i])) << i;
}

// The k-th send of a (src, dst, slot) meets its k-th receive whatever runs the sides were in; a
// key whose counts differ, or a pair whose sizes differ, gives no message.
TEST(SideRunsTest, PairingDoesNotDependOnTheRuns) {
  Domains domains;
  domains.list.resize(2);
  domains.of_rank = {{0, 0}, {1, 1}};
  const std::vector<Side> sides = {
      {0, 1, 0, 64, false, 100}, {0, 1, 0, 64, false, 300}, {0, 1, 0, 64, true, 9'150},
      {0, 1, 0, 64, true, 9'300}, {1, 0, 0, 64, false, 9'400}, {1, 0, 0, 64, true, 470},
      {0, 1, 1, 64, false, 500}, {0, 1, 1, 32, true, 9'550},      // sizes differ
      {1, 0, 2, 64, false, 9'600}, {1, 0, 2, 64, false, 9'700}, {1, 0, 2, 64, true, 800}};  // 2 vs 1
  for (size_t run : {size_t{1}, size_t{2}, sides.size()}) {
    SCOPED_TRACE(run);
    SideRuns runs;
    for (size_t i = sides.size(); i-- > 0;) {  // backwards, ending runs of `run` sides
      runs.add(sides[i]);
      if (i % run == 0) runs.endRun();
    }
    Evidence ev;
    pairSides(&runs, domains, &ev);
    ASSERT_EQ(ev.messages.size(), 3u);
    EXPECT_EQ(ev.messages[0].sent, 100);
    EXPECT_EQ(ev.messages[0].received, 9'150);
    EXPECT_EQ(ev.messages[1].sent, 300);
    EXPECT_EQ(ev.messages[1].received, 9'300);
    EXPECT_EQ(ev.messages[2].from, 1);
    EXPECT_EQ(ev.messages[2].sent, 9'400);
    EXPECT_EQ(ev.messages[2].received, 470);
    ASSERT_EQ(ev.representatives.size(), 2u);  // one per (from, to, 10 ms of receipt)
    EXPECT_EQ(ev.representatives[0].sent, 300);  // the tightest of 0 -> 1
  }
}

}  // namespace
}  // namespace ringside::align::detail
