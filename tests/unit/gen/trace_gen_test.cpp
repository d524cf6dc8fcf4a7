// trace_gen (tools/trace_gen): message counts of ring and tree, a straggler arrives last, a slow link is
// slower, the same seed gives the same rows, bad option values are refused.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"
#include "trace_gen.h"

namespace ringside::gen {
namespace {

// Generates `o` into a fresh folder under `tmp` and merges it; returns the merged trace's path.
std::string generate(const GenOptions& o, const std::string& tmp, const std::string& name) {
  const std::string dir = tmp + "/" + name;
  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  std::string error;
  EXPECT_TRUE(writeRankFiles(o, dir, &files, &error)) << error;
  EXPECT_EQ(files.size(), static_cast<size_t>(o.ranks));
  storage::MergeOptions m;
  m.inputs = files;
  m.output = dir + ".sqlite";
  const storage::MergeResult r = storage::mergeRankFiles(m);
  EXPECT_TRUE(r.ok) << r.error;
  return m.output;
}

struct Rows {
  std::vector<storage::CollectiveRow> calls;
  std::vector<std::tuple<int, int, int64_t, int64_t, std::string>> messages;  // src, dst, start, end, side
};

Rows read(const std::string& trace) {
  Rows rows;
  std::string error;
  auto reader = storage::TraceReader::open(trace, &error);
  EXPECT_TRUE(reader) << error;
  if (!reader) return rows;
  EXPECT_TRUE(reader->forEachCollective(
      [&](const storage::CollectiveRow& c) {
        rows.calls.push_back(c);
        return true;
      },
      &error));
  EXPECT_TRUE(reader->forEachTransfer(
      [&](const storage::TransferRow& t) {
        rows.messages.emplace_back(t.src_rank, t.dst_rank, t.start_ns, t.end_ns, std::string(t.side));
        return true;
      },
      &error));
  return rows;
}

TEST(TraceGen, RingAndTreeMessageCounts) {
  test_support::TempDir tmp("trace-gen");
  GenOptions o;
  o.ranks = 5;
  o.collectives = 3;
  Rows ring = read(generate(o, tmp.path(), "ring"));
  EXPECT_EQ(ring.calls.size(), 15u);
  EXPECT_EQ(ring.messages.size(), 5u * 2 * 4 * 3);  // 2(N-1) sends per rank per call
  o.receives = true;
  EXPECT_EQ(read(generate(o, tmp.path(), "ring-recv")).messages.size(), 2u * 5 * 2 * 4 * 3);
  o.receives = false;
  o.tree = true;
  Rows tree = read(generate(o, tmp.path(), "tree"));
  EXPECT_EQ(tree.messages.size(), 2u * 4 * 3);  // every edge up once and down once per call
}

TEST(TraceGen, StragglerArrivesLastAndSlowLinkIsSlower) {
  test_support::TempDir tmp("trace-gen");
  GenOptions o;
  o.ranks = 8;
  o.hosts = 2;
  o.collectives = 4;
  o.stragglers[5] = 500;       // us
  o.slow_links[{2, 3}] = 4.0;  // 2 -> 3 four times as long
  Rows rows = read(generate(o, tmp.path(), "t"));
  std::map<int64_t, std::pair<int, int64_t>> last;  // seq -> (rank, start) of the latest arrival
  for (const storage::CollectiveRow& c : rows.calls) {
    auto [it, fresh] = last.emplace(c.seq, std::make_pair(c.rank, c.start_ns));
    if (!fresh && c.start_ns > it->second.second) it->second = {c.rank, c.start_ns};
  }
  ASSERT_EQ(last.size(), 4u);
  for (const auto& [seq, who] : last) EXPECT_EQ(who.first, 5) << "call " << seq;
  int64_t slow = 0, other = INT64_MAX;
  for (const auto& [src, dst, start, end, side] : rows.messages) {
    if (src == 2 && dst == 3) slow = std::max(slow, end - start);
    else if (end - start > 0) other = std::min(other, end - start);
  }
  EXPECT_GE(slow, 3 * other);
}

TEST(TraceGen, SameSeedSameRows) {
  test_support::TempDir tmp("trace-gen");
  GenOptions o;
  o.ranks = 4;
  o.collectives = 2;
  o.seed = 9;
  Rows a = read(generate(o, tmp.path(), "a"));
  Rows b = read(generate(o, tmp.path(), "b"));
  EXPECT_EQ(a.messages, b.messages);
  o.seed = 10;
  Rows c = read(generate(o, tmp.path(), "c"));
  EXPECT_NE(a.messages, c.messages);
}

TEST(TraceGen, OptionValues) {
  GenOptions o;
  std::string error;
  EXPECT_TRUE(parseStraggler("17:2000", &o, &error));
  EXPECT_EQ(o.stragglers.at(17), 2000);
  EXPECT_TRUE(parseSlowLink("3-4:2.5", &o, &error));
  EXPECT_DOUBLE_EQ(o.slow_links.at({3, 4}), 2.5);
  for (const char* bad : {"", "17", "17:", "x:1", "17:-1", "17:5us"})
    EXPECT_FALSE(parseStraggler(bad, &o, &error)) << bad;
  for (const char* bad : {"3-4", "3:4", "3-4:0.5", "3-4:x", "-4:2"})
    EXPECT_FALSE(parseSlowLink(bad, &o, &error)) << bad;
  GenOptions zero;
  zero.ranks = 0;
  std::vector<std::string> files;
  EXPECT_FALSE(writeRankFiles(zero, "/nonexistent", &files, &error));
}

}  // namespace
}  // namespace ringside::gen
