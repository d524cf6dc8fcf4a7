#include "record/summary_text.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ringside::cli {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

analyzer::Summary sample(int ranks, int links) {
  analyzer::Summary s;
  s.world_size = ranks + 1;
  s.ranks_present = ranks;
  s.missing_ranks = {ranks};
  s.cut_off_ranks = {1};
  s.dropped_events = 12;
  s.dropped_by_rank = {{0, 12}};
  s.warnings = {"12 events dropped (event buffers full): 12 on rank 0",
                "rank 1: interposition inactive: gloo is linked statically"};
  s.collectives = 1200;
  s.transfers = 4800;
  s.ops = {{"allreduce", "gloo", 1000, int64_t{3} << 30, 12'000'000'000},
           {"a_very_long_operation_name_indeed", "a_long_library_name", 200, 4096, 1'000'000}};
  for (int r = 0; r < ranks; ++r) {
    s.ranks.push_back({r, "host-with-a-rather-long-name-" + std::to_string(r), 1000 + r, 600,
                       20'000'000'000, 6'000'000'000 + int64_t{r} * 100'000'000, 21'000'000'000, r == 1});
  }
  for (int l = 0; l < links; ++l) {
    s.links.push_back({l, l + 1, 100 - l, int64_t{1000} * (links - l), 5'000'000, l == 0});
  }
  return s;
}

// Host names and ops come from the trace: the summary on stderr must not drive the terminal.
TEST(SummaryText, EscapesControlCharactersFromTheTrace) {
  analyzer::Summary s = sample(2, 1);
  s.ranks[0].host = "evil\x1b]0;owned\x07\x1b[2J";
  s.ops[0].op = "all\rreduce\xc2\x9b";
  s.skipped_inputs = {"rank-\x1b[31m.sqlite"};
  const std::string text = formatSummary(s);
  for (unsigned char c : text) {
    EXPECT_TRUE(c >= 0x20 || c == '\n' || c == '\t') << static_cast<int>(c) << "\n" << text;
  }
  EXPECT_NE(text.find("evil\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << text;
  EXPECT_NE(text.find("all\\x0dreduce\\u009b"), std::string::npos) << text;
}

// "calls" has one meaning (docs/metrics.md: instances, matched across ranks): the headline's
// count is the op table's sum, the ranks' rows are "rank calls" (issue 24: 100 vs 25).
TEST(SummaryText, CallsAreInstancesInTheHeadlineAndTheTable) {
  const std::string text = formatSummary(sample(2, 1));
  EXPECT_NE(text.find(", 1,200 collective calls (1,200 rank calls), "), std::string::npos) << text;
  analyzer::Summary s = sample(2, 1);
  s.collectives = 4800;  // four ranks' rows of 1,200 instances
  const std::string four = formatSummary(s);
  EXPECT_NE(four.find(", 1,200 collective calls (4,800 rank calls), "), std::string::npos) << four;
  EXPECT_NE(four.find(" 1,000 "), std::string::npos) << four;  // the op table: instances
}

// A rank whose file the merge could not read is not said to have no file (issue 16).
TEST(SummaryText, SkippedInputsAreUnreadableNotMissing) {
  analyzer::Summary s = sample(2, 1);
  s.skipped_inputs = {"rank-h-1-2.sqlite"};
  const std::string text = formatSummary(s);
  EXPECT_EQ(text.find("no rank file"), std::string::npos) << text;
  EXPECT_NE(text.find("!! MISSING RANKS 2: no usable rank file"), std::string::npos) << text;
  EXPECT_NE(text.find("UNREADABLE RANK FILES skipped by the merge (1): rank-h-1-2.sqlite"),
            std::string::npos)
      << text;
}

TEST(SummaryText, ShowsEverythingAndFits100Columns) {
  std::string text = formatSummary(sample(3, 4));
  for (const std::string& line : lines(text)) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_NE(text.find("ranks: 3 of 4 present"), std::string::npos) << text;
  EXPECT_NE(text.find("!! MISSING RANKS 3"), std::string::npos) << text;
  EXPECT_NE(text.find("!! CUT-OFF RANKS 1"), std::string::npos) << text;
  EXPECT_NE(text.find("12 events dropped"), std::string::npos) << text;
  EXPECT_NE(text.find("--buffer-mb"), std::string::npos) << text;
  EXPECT_NE(text.find("interposition inactive"), std::string::npos) << text;
  EXPECT_NE(text.find("allreduce"), std::string::npos) << text;
  EXPECT_NE(text.find("3.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("12.00 s"), std::string::npos) << text;
  EXPECT_NE(text.find("CUT OFF"), std::string::npos) << text;
  EXPECT_NE(text.find("28.6%"), std::string::npos) << text;  // 6 s of 21 s
  EXPECT_NE(text.find("0 -> 1"), std::string::npos) << text;
  EXPECT_NE(text.find("recv rows"), std::string::npos) << text;  // link 0->1 is from recv
  EXPECT_EQ(text.find("quietest"), std::string::npos) << text;   // 4 links: one table
}

TEST(SummaryText, BusiestAndQuietestLinksDoNotRepeat) {
  std::string text = formatSummary(sample(2, 7));
  EXPECT_NE(text.find("busiest links"), std::string::npos) << text;
  EXPECT_NE(text.find("quietest links"), std::string::npos) << text;
  for (int l = 0; l < 7; ++l) {
    std::string link = std::to_string(l) + " -> " + std::to_string(l + 1) + " ";
    size_t first = text.find(link);
    EXPECT_NE(first, std::string::npos) << link;
    EXPECT_EQ(text.find(link, first + 1), std::string::npos) << link << " twice\n" << text;
  }
}

TEST(SummaryText, ManyRanksAreCondensed) {
  std::string text = formatSummary(sample(40, 100));
  std::vector<std::string> all = lines(text);
  EXPECT_LT(all.size(), 45u) << text;
  EXPECT_NE(text.find("30 ranks in between"), std::string::npos) << text;
  EXPECT_NE(text.find("(100 directed links in all)"), std::string::npos) << text;
  for (const std::string& line : all) EXPECT_LE(line.size(), 100u) << line;
}

TEST(SummaryText, EmptyTrace) {
  analyzer::Summary s;
  s.ranks_present = 0;
  std::string text = formatSummary(s);
  EXPECT_NE(text.find("world size unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("no collective calls recorded"), std::string::npos) << text;
}

}  // namespace
}  // namespace ringside::cli
