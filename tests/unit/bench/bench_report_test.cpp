#include "ringside/bench/report.h"

#include <gtest/gtest.h>

#include <sstream>

namespace ringside::bench {
namespace {

BenchRun sampleRun() {
  BenchRun run;
  run.ranks = 4;
  run.hosts = {"vm"};
  run.iters = 20;
  run.warmup = 5;
  run.have_alpha_beta = true;
  run.alpha_s = 38.2e-6;
  run.beta_s_per_byte = 0.31e-9;
  BenchRow ring{4096, 1024, BenchAlgo::kRing, 812.3e-6, 229.1e-6, 0, ""};
  BenchRow gloo{64 << 20, 16 << 20, BenchAlgo::kGloo, 0.25, 0.03, 3, ""};
  BenchRow bcube{4096, 1024, BenchAlgo::kGlooBcube, 0, -1, -1, "n/a: not offered"};
  run.rows = {ring, gloo, bcube};
  return run;
}

void expectLinesFit(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) EXPECT_LE(line.size(), 100u) << line;
}

TEST(BenchReport, HeaderSaysWhatRan) {
  BenchRun run = sampleRun();
  std::string header = formatBenchHeader(run);
  EXPECT_NE(header.find("ringside bench: 4 ranks on 1 host (vm), f32 sum, 20 iters (+5 warm-up)"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("alpha 38.2 us, beta 0.31 ns/B (3.23 GB/s)"), std::string::npos)
      << header;
  EXPECT_NE(header.find("note: all ranks share one host: ring and tree move the same bytes"),
            std::string::npos);
  EXPECT_NE(header.find("differences reflect scheduling, not links"), std::string::npos);
  EXPECT_NE(header.find("lower-bound style"), std::string::npos);
  EXPECT_NE(header.find("ignores reduction cost"), std::string::npos);
  EXPECT_EQ(header.find("floor rows"), std::string::npos);
  expectLinesFit(header);
  run.floor_rows = true;
  header = formatBenchHeader(run);
  EXPECT_NE(header.find("floor rows: not all-reduces (no result, no check)"), std::string::npos) << header;
  expectLinesFit(header);
  run.floor_rows = false;

  run.hosts = {"a", "b"};
  header = formatBenchHeader(run);
  EXPECT_NE(header.find("4 ranks on 2 hosts (a, b)"), std::string::npos) << header;
  EXPECT_EQ(header.find("share one host"), std::string::npos);

  run.ranks = 1;
  run.hosts = {"a"};
  run.have_alpha_beta = false;
  header = formatBenchHeader(run);
  EXPECT_NE(header.find("1 rank on 1 host"), std::string::npos) << header;
  EXPECT_NE(header.find("not measured"), std::string::npos);
  EXPECT_EQ(header.find("share one host"), std::string::npos);
}

TEST(BenchReport, RowsAlignWithColumns) {
  BenchRun run = sampleRun();
  std::string columns = formatBenchColumns();
  std::string ring = formatBenchRow(run.rows[0], 4);
  std::string gloo = formatBenchRow(run.rows[1], 4);
  expectLinesFit(columns + ring + gloo);
  EXPECT_EQ(columns.size(), ring.size()) << columns << ring;
  EXPECT_EQ(columns.size(), gloo.size()) << columns << gloo;
  EXPECT_NE(ring.find("4 KiB"), std::string::npos);
  EXPECT_NE(ring.find("812.3"), std::string::npos);
  EXPECT_NE(ring.find("229.1"), std::string::npos);
  // algbw = 4096 B / 812.3 us = 0.005 GB/s; busbw x1.5 = 0.008
  EXPECT_NE(ring.find("0.005"), std::string::npos) << ring;
  EXPECT_NE(ring.find("0.008"), std::string::npos) << ring;
  EXPECT_EQ(ring.substr(ring.size() - 3), " 0\n");
  EXPECT_NE(gloo.find("64 MiB"), std::string::npos);
  EXPECT_NE(gloo.find("0.268"), std::string::npos) << gloo;  // 64 MiB / 0.25 s
  EXPECT_NE(gloo.find("0.403"), std::string::npos) << gloo;
  EXPECT_EQ(gloo.substr(gloo.size() - 3), " 3\n");
  std::string bcube = formatBenchRow(run.rows[2], 4);
  EXPECT_NE(bcube.find("gloo-bcube"), std::string::npos);
  EXPECT_NE(bcube.find("n/a: not offered"), std::string::npos);
  // Unknown model and unchecked rows show '-'.
  BenchRow unknown = run.rows[0];
  unknown.model_seconds = -1;
  unknown.wrong = -1;
  std::string text = formatBenchRow(unknown, 4);
  EXPECT_EQ(text.substr(text.size() - 3), " -\n") << text;
  EXPECT_NE(text.find("         - "), std::string::npos) << text;
}

TEST(BenchReport, JsonShape) {
  std::string json = benchJson(sampleRun());
  EXPECT_EQ(json.rfind("{\n  \"schema\": \"ringside-bench/1\",\n", 0), 0u) << json;
  for (const char* key :
       {"\"ranks\": 4", "\"hosts\": [\"vm\"]", "\"dtype\": \"f32\"", "\"op\": \"sum\"",
        "\"iters\": 20", "\"warmup\": 5", "\"check\": true", "\"alpha_s\": 3.82e-05",
        "\"beta_s_per_byte\": 3.1e-10", "\"bus_factor\": 1.5", "\"rows\": ["}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_NE(json.find("{\"bytes\": 4096, \"count\": 1024, \"algo\": \"ring\", \"time_us\": 812.3, "
                      "\"algbw_gbps\": 0.00504247"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"model_us\": 229.1, \"wrong\": 0, \"median_us\": 0, \"min_us\": 0, \"cpu_us\": 0}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"algo\": \"gloo\""), std::string::npos);
  EXPECT_NE(json.find("\"wrong\": 3, "), std::string::npos);
  EXPECT_NE(json.find("\"algo\": \"gloo-bcube\", \"error\": \"n/a: not offered\"}"),
            std::string::npos);
  // Balanced brackets, ends with a newline.
  int depth = 0;
  for (char c : json) depth += (c == '{' || c == '[') - (c == '}' || c == ']');
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(json.back(), '\n');
}

TEST(BenchReport, JsonUnknownsAreNull) {
  BenchRun run;
  run.ranks = 1;
  run.hosts = {"h\"ost"};
  run.check = false;
  BenchRow row{1024, 256, BenchAlgo::kTree, 1e-5, -1, -1, ""};
  run.rows = {row};
  std::string json = benchJson(run);
  EXPECT_NE(json.find("\"alpha_s\": null"), std::string::npos) << json;
  EXPECT_NE(json.find("\"beta_s_per_byte\": null"), std::string::npos);
  EXPECT_NE(json.find("\"model_us\": null, \"wrong\": null, "), std::string::npos) << json;
  EXPECT_NE(json.find("\"hosts\": [\"h\\\"ost\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"check\": false"), std::string::npos);
  EXPECT_EQ(jsonString(std::string("a\nb\\")), "\"a\\u000ab\\\\\"");
  run.rows.clear();
  EXPECT_NE(benchJson(run).find("\"rows\": []\n}\n"), std::string::npos) << benchJson(run);
}

}  // namespace
}  // namespace ringside::bench
