// The analyzer's table of call rows (analyzer/src/call_table.h): rows per instance by rank, per
// rank in reading order, each rank's earliest entry into an instance and each row id's instance,
// whether the rows come in the order a merged trace gives them or not.
#include "call_table.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace ringside::analyzer::detail {
namespace {

std::vector<int32_t> ranksOf(const CallTable::Rows& rows) {
  std::vector<int32_t> out;
  for (const Arrival& a : rows) out.push_back(a.rank);
  return out;
}

std::vector<int64_t> startsOf(const CallTable::Rows& rows) {
  std::vector<int64_t> out;
  for (const Arrival& a : rows) out.push_back(a.start_ns);
  return out;
}

// A table of `instances` instances and `rows` in this reading order, row ids from `first_id`.
CallTable tableOf(int instances, int64_t first_id, const std::vector<Arrival>& rows) {
  CallTable t;
  for (int i = 0; i < instances; ++i) t.addInstance();
  for (const Arrival& row : rows) t.add(first_id++, row);
  std::string error;
  EXPECT_TRUE(t.finish(&error)) << error;
  return t;
}

// `ranks` ranks, each calling `instances` instances in order; row ids from `first_id` in reading
// order (rank, then instance), start = 1000 * instance + rank.
CallTable inOrder(int ranks, int instances, int64_t first_id) {
  CallTable t;
  for (int i = 0; i < instances; ++i) t.addInstance();
  int64_t id = first_id;
  for (int r = 0; r < ranks; ++r) {
    for (int i = 0; i < instances; ++i) t.add(id++, {1000 * i + r, 5, r, i});
  }
  std::string error;
  EXPECT_TRUE(t.finish(&error)) << error;
  return t;
}

TEST(CallTableTest, MergedTraceOrderAcrossBlocks) {
  // 90,000 rows: past one block of 65,536.
  const int ranks = 300, instances = 300;
  CallTable t = inOrder(ranks, instances, 7);
  ASSERT_EQ(t.size(), static_cast<size_t>(instances));
  ASSERT_EQ(t.rows(), static_cast<size_t>(ranks * instances));
  for (int i : {0, 150, 299}) {
    const auto rows = t[static_cast<size_t>(i)];
    ASSERT_EQ(rows.size(), static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(rows[static_cast<size_t>(r)].rank, r);
      EXPECT_EQ(rows[static_cast<size_t>(r)].instance, i);
      EXPECT_EQ(t.entry(i, r), 1000 * i + r);
    }
    EXPECT_EQ(t.first(static_cast<size_t>(i)).rank, 0);
  }
  EXPECT_EQ(t.entry(0, ranks), -1);
  EXPECT_EQ(t.entry(instances, 0), -1);
  EXPECT_EQ(t.entry(-1, 0), -1);
  int seen = 0;
  t.forEachRank([&](int rank, const CallTable::Rows& rows) {
    EXPECT_EQ(rank, seen++);
    ASSERT_EQ(rows.size(), static_cast<size_t>(instances));
    EXPECT_EQ(rows[299].start_ns, 1000 * 299 + rank);
  });
  EXPECT_EQ(seen, ranks);
  EXPECT_EQ(t.ofRank(17).size(), static_cast<size_t>(instances));
  EXPECT_TRUE(t.ofRank(ranks).empty());
  // Row ids: 7 + rank * instances + instance.
  EXPECT_EQ(t.instanceOfRow(7), 0);
  EXPECT_EQ(t.instanceOfRow(7 + 5 * instances + 42), 42);
  EXPECT_EQ(t.instanceOfRow(6), -1);
  EXPECT_EQ(t.instanceOfRow(7 + ranks * instances), -1);
}

TEST(CallTableTest, MissingRanksAndRepeatedCalls) {
  // Instance 0: ranks 0, 1 and 3 (rank 3 twice, its later row entering first); instance 1:
  // rank 2 alone.
  const CallTable t = tableOf(
      2, 0, {{100, 1, 0, 0}, {110, 1, 1, 0}, {400, 1, 2, 1}, {130, 1, 3, 0}, {120, -1, 3, 0}});
  EXPECT_EQ(ranksOf(t[0]), (std::vector<int32_t>{0, 1, 3, 3}));
  EXPECT_EQ(startsOf(t[0]), (std::vector<int64_t>{100, 110, 130, 120}));
  EXPECT_EQ(t.entry(0, 2), -1);
  EXPECT_EQ(t.entry(0, 3), 120);
  EXPECT_EQ(t.entry(1, 2), 400);
  EXPECT_EQ(t.entry(1, 0), -1);
  EXPECT_EQ(t.first(1).rank, 2);
}

TEST(CallTableTest, RowsNotGroupedByRankAnswerAsIfTheyWere) {
  // A damaged trace: rank 1's last row comes after rank 2's (its rank column sorted apart).
  // Rank 1's last row is its second call of instance 0, entered earlier than its first.
  const CallTable t = tableOf(
      2, 10,
      {{10, 1, 0, 0}, {20, 1, 1, 0}, {30, 1, 2, 0}, {40, 1, 2, 1}, {50, 1, 1, 1}, {5, 1, 1, 0}});
  EXPECT_EQ(ranksOf(t[0]), (std::vector<int32_t>{0, 1, 1, 2}));
  EXPECT_EQ(startsOf(t[0]), (std::vector<int64_t>{10, 20, 5, 30}));
  EXPECT_EQ(ranksOf(t[1]), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(t.first(1).rank, 2);  // the first read, as pass 1 met it
  EXPECT_EQ(t.entry(0, 1), 5);
  EXPECT_EQ(t.entry(1, 1), 50);
  std::vector<std::pair<int, std::vector<int64_t>>> by_rank;
  t.forEachRank(
      [&](int rank, const CallTable::Rows& rows) { by_rank.emplace_back(rank, startsOf(rows)); });
  const std::vector<std::pair<int, std::vector<int64_t>>> want = {
      {0, {10}}, {1, {20, 50, 5}}, {2, {30, 40}}};
  EXPECT_EQ(by_rank, want);
  EXPECT_EQ(startsOf(t.ofRank(1)), (std::vector<int64_t>{20, 50, 5}));
  EXPECT_EQ(t.instanceOfRow(14), 1);
}

TEST(CallTableTest, RowIdsOutOfOrderOrSparse) {
  std::string error;
  CallTable gaps;  // dense with gaps, out of order after the third row
  for (int i = 0; i < 3; ++i) gaps.addInstance();
  gaps.add(100, {1, 1, 0, 0});
  gaps.add(101, {2, 1, 0, 1});
  gaps.add(103, {3, 1, 0, 2});
  gaps.add(102, {4, 1, 1, 1});
  ASSERT_TRUE(gaps.finish(&error));
  EXPECT_EQ(gaps.instanceOfRow(100), 0);
  EXPECT_EQ(gaps.instanceOfRow(101), 1);
  EXPECT_EQ(gaps.instanceOfRow(102), 1);
  EXPECT_EQ(gaps.instanceOfRow(103), 2);
  EXPECT_EQ(gaps.instanceOfRow(104), -1);
  EXPECT_EQ(gaps.instanceOfRow(99), -1);

  CallTable sparse;  // ids far apart: a sorted list, extremes included
  sparse.addInstance();
  sparse.addInstance();
  sparse.add(INT64_MAX, {1, 1, 0, 0});
  sparse.add(INT64_MIN, {2, 1, 1, 1});
  sparse.add(0, {3, 1, 2, 1});
  ASSERT_TRUE(sparse.finish(&error));
  EXPECT_EQ(sparse.instanceOfRow(INT64_MAX), 0);
  EXPECT_EQ(sparse.instanceOfRow(INT64_MIN), 1);
  EXPECT_EQ(sparse.instanceOfRow(0), 1);
  EXPECT_EQ(sparse.instanceOfRow(1), -1);

  CallTable empty;
  ASSERT_TRUE(empty.finish(&error));
  EXPECT_EQ(empty.instanceOfRow(0), -1);
  int ranks = 0;
  empty.forEachRank([&](int, const CallTable::Rows&) { ++ranks; });
  EXPECT_EQ(ranks, 0);
}

}  // namespace
}  // namespace ringside::analyzer::detail
