#include "bench/bench_options.h"

#include <gtest/gtest.h>

#include "ringside/reference/types.h"

namespace ringside::cli {
namespace {

constexpr uint64_t K = 1024;
constexpr uint64_t M = 1024 * 1024;

std::vector<uint64_t> sizes(std::string_view text) {
  std::vector<uint64_t> out;
  std::string error;
  EXPECT_TRUE(parseSizeList(text, &out, &error)) << text << ": " << error;
  return out;
}

std::string sizeError(std::string_view text) {
  std::vector<uint64_t> out = {1};
  std::string error;
  EXPECT_FALSE(parseSizeList(text, &out, &error)) << text;
  EXPECT_EQ(out, std::vector<uint64_t>{1}) << "output untouched on error";
  return error;
}

TEST(BenchSizes, SingleValuesAndSuffixes) {
  uint64_t v = 0;
  EXPECT_TRUE(parseByteSize("65536", &v));
  EXPECT_EQ(v, 65536u);
  EXPECT_TRUE(parseByteSize("4K", &v));
  EXPECT_EQ(v, 4 * K);
  EXPECT_TRUE(parseByteSize("4k", &v));
  EXPECT_EQ(v, 4 * K);
  EXPECT_TRUE(parseByteSize("4KiB", &v));
  EXPECT_EQ(v, 4 * K);
  EXPECT_TRUE(parseByteSize("4KB", &v));
  EXPECT_EQ(v, 4 * K);
  EXPECT_TRUE(parseByteSize("256M", &v));
  EXPECT_EQ(v, 256 * M);
  EXPECT_TRUE(parseByteSize("1G", &v));
  EXPECT_EQ(v, 1024 * M);
  EXPECT_TRUE(parseByteSize("100B", &v));
  EXPECT_EQ(v, 100u);
  EXPECT_TRUE(parseByteSize(" 2M ", &v));
  EXPECT_EQ(v, 2 * M);
}

TEST(BenchSizes, BadSingleValues) {
  uint64_t v = 7;
  EXPECT_TRUE(parseByteSize("4.5M", &v));  // format/'s size grammar (issue 26): fractions too
  EXPECT_EQ(v, 4608u << 10);
  v = 7;
  for (const char* bad : {"", "K", "0", "0K", "-4K", "4X", "4 K M", "17G", "1T",
                          "99999999999999999999", "0x10"}) {
    EXPECT_FALSE(parseByteSize(bad, &v)) << bad;
  }
  EXPECT_EQ(v, 7u);
  EXPECT_TRUE(parseByteSize("16G", &v)) << "the limit itself is allowed";
}

TEST(BenchSizes, RangeDefaultsToFactorFour) {
  EXPECT_EQ(sizes("4K:64M"),
            (std::vector<uint64_t>{4 * K, 16 * K, 64 * K, 256 * K, M, 4 * M, 16 * M, 64 * M}));
  EXPECT_EQ(sizes("4K:256M").size(), 9u);
  EXPECT_EQ(sizes("4K:256M").back(), 256 * M);
}

TEST(BenchSizes, RangeWithFactor) {
  EXPECT_EQ(sizes("4K:64K:2"), (std::vector<uint64_t>{4 * K, 8 * K, 16 * K, 32 * K, 64 * K}));
  EXPECT_EQ(sizes("4K:256M:2").size(), 17u);
  EXPECT_EQ(sizes("1K:100K:10"), (std::vector<uint64_t>{K, 10 * K, 100 * K}));
}

TEST(BenchSizes, RangeStopsAtOrBelowItsEnd) {
  EXPECT_EQ(sizes("4K:60K"), (std::vector<uint64_t>{4 * K, 16 * K}));
  EXPECT_EQ(sizes("4K:4K"), (std::vector<uint64_t>{4 * K}));
  // No overflow near the limit.
  EXPECT_EQ(sizes("8G:16G:1024"), (std::vector<uint64_t>{8192 * M}));
}

TEST(BenchSizes, CommaListsKeepOrderAndDropRepeats) {
  EXPECT_EQ(sizes("1K,1M"), (std::vector<uint64_t>{K, M}));
  EXPECT_EQ(sizes("1M, 1K"), (std::vector<uint64_t>{M, K}));
  EXPECT_EQ(sizes("1K,1024,4K:16K"), (std::vector<uint64_t>{K, 4 * K, 16 * K}));
}

// simulate --sizes is a step's all-reduces: 25M,25M,12M is three of them (issue 24's small item).
TEST(BenchSizes, SimulateKeepsRepeats) {
  std::vector<uint64_t> out;
  std::string error;
  ASSERT_TRUE(parseSizeList("25M,25M,12M", &out, &error, Repeats::kKeep)) << error;
  EXPECT_EQ(out, (std::vector<uint64_t>{25 * M, 25 * M, 12 * M}));
  ASSERT_TRUE(parseSizeList("1.5M,1536K", &out, &error, Repeats::kKeep)) << error;
  EXPECT_EQ(out, (std::vector<uint64_t>{1536 * K, 1536 * K}));
}

TEST(BenchSizes, Errors) {
  EXPECT_NE(sizeError("").find("expected"), std::string::npos);
  EXPECT_NE(sizeError("1K,,2K").find("expected"), std::string::npos);
  EXPECT_NE(sizeError("64M:4K").find("ends below"), std::string::npos);
  EXPECT_NE(sizeError("4K:64M:1").find("factor"), std::string::npos);
  EXPECT_NE(sizeError("4K:64M:x").find("factor"), std::string::npos);
  EXPECT_NE(sizeError("4K:64M:2:3").find("expected"), std::string::npos);
  EXPECT_NE(sizeError("4Q").find("bad size '4Q'"), std::string::npos);
}

TEST(BenchAlgos, ListsAndErrors) {
  std::vector<BenchAlgo> algos;
  std::string error;
  ASSERT_TRUE(parseAlgoList("tree,gloo-bcube,ring,tree", &algos, &error));
  EXPECT_EQ(algos, (std::vector<BenchAlgo>{BenchAlgo::kTree, BenchAlgo::kGlooBcube,
                                           BenchAlgo::kRing}));
  EXPECT_FALSE(parseAlgoList("ring,nccl", &algos, &error));
  EXPECT_NE(error.find("unknown algorithm 'nccl'"), std::string::npos);
  EXPECT_STREQ(benchAlgoName(BenchAlgo::kGloo), "gloo");
  EXPECT_TRUE(isGlooAlgo(BenchAlgo::kGlooBcube));
  EXPECT_FALSE(isGlooAlgo(BenchAlgo::kTree));
  ASSERT_TRUE(parseAlgoList("ring,floor", &algos, &error));
  EXPECT_EQ(algos, (std::vector<BenchAlgo>{BenchAlgo::kRing, BenchAlgo::kFloor}));
  EXPECT_STREQ(benchAlgoName(BenchAlgo::kFloor), "floor");
  EXPECT_FALSE(isGlooAlgo(BenchAlgo::kFloor));
  ASSERT_TRUE(parseAlgoList("floor-tcp,floor", &algos, &error));
  EXPECT_EQ(algos, (std::vector<BenchAlgo>{BenchAlgo::kFloorTcp, BenchAlgo::kFloor}));
  EXPECT_STREQ(benchAlgoName(BenchAlgo::kFloorTcp), "floor-tcp");
  EXPECT_TRUE(isFloorAlgo(BenchAlgo::kFloorTcp));
  EXPECT_TRUE(isFloorAlgo(BenchAlgo::kFloor));
  EXPECT_FALSE(isFloorAlgo(BenchAlgo::kRing));
}

// `bench --ranks 1000` on a small machine ran for minutes without a line: the local limit
// follows the CPUs, and the machine running this test refuses 1000 ranks unless it has 125 CPUs.
TEST(BenchLocalRanks, LimitFollowsTheCpus) {
  EXPECT_EQ(maxLocalBenchRanks(1), 8);
  EXPECT_EQ(maxLocalBenchRanks(0), 8);
  EXPECT_EQ(maxLocalBenchRanks(2), 16);
  EXPECT_EQ(maxLocalBenchRanks(16), 128);
  EXPECT_EQ(maxLocalBenchRanks(1000), kMaxBenchRanks);
  EXPECT_GE(usableCpus(), 1);
  EXPECT_GE(maxLocalBenchRanks(usableCpus()), 4) << "the default of 4 ranks always fits";
}

TEST(BenchArgs, Defaults) {
  BenchOptions o;
  std::string error;
  ASSERT_EQ(parseBenchArgs(std::vector<std::string>{}, &o, &error), ParseStatus::kOk) << error;
  EXPECT_EQ(o.ranks, 0);
  EXPECT_EQ(o.algos, (std::vector<BenchAlgo>{BenchAlgo::kRing, BenchAlgo::kTree,
                                             BenchAlgo::kGloo}));
  EXPECT_EQ(o.sizes.front(), 4 * K);
  EXPECT_EQ(o.sizes.back(), 64 * M);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_EQ(o.dtype, collector::DType::kF32);
  EXPECT_EQ(o.op, collector::ReduceOp::kSum);
  EXPECT_TRUE(o.check);
  EXPECT_FALSE(o.worker);
  EXPECT_TRUE(o.output.empty());
  EXPECT_TRUE(o.json.empty());
}

TEST(BenchArgs, EveryOption) {
  BenchOptions o;
  std::string error;
  std::vector<std::string> args = {"--ranks", "3", "--algo", "gloo,ring", "--sizes=1K,64K",
                                   "--iters", "7", "--warmup", "0", "--dtype", "bf16", "--op",
                                   "max", "--no-check", "-o", "t.sqlite", "-f", "--json",
                                   "b.json", "--timeout-s", "5", "--chunk-bytes", "64K",
                                   "--worker"};
  ASSERT_EQ(parseBenchArgs(args, &o, &error), ParseStatus::kOk) << error;
  EXPECT_EQ(o.ranks, 3);
  EXPECT_EQ(o.algos, (std::vector<BenchAlgo>{BenchAlgo::kGloo, BenchAlgo::kRing}));
  EXPECT_EQ(o.sizes, (std::vector<uint64_t>{K, 64 * K}));
  EXPECT_EQ(o.iters, 7);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_EQ(o.dtype, collector::DType::kBF16);
  EXPECT_EQ(o.op, collector::ReduceOp::kMax);
  EXPECT_FALSE(o.check);
  EXPECT_EQ(o.output, "t.sqlite");
  EXPECT_TRUE(o.force);
  EXPECT_EQ(o.json, "b.json");
  EXPECT_EQ(o.timeout_s, 5);
  EXPECT_EQ(o.chunk_bytes, 64 * K);
  EXPECT_TRUE(o.worker);
}

TEST(BenchArgs, UsageErrors) {
  BenchOptions o;
  std::string error;
  auto bad = [&](std::vector<std::string> args) {
    error.clear();
    EXPECT_EQ(parseBenchArgs(args, &o, &error), ParseStatus::kError) << args.front();
    return error;
  };
  EXPECT_NE(bad({"--ranks", "0"}).find("--ranks"), std::string::npos);
  EXPECT_NE(bad({"--dtype", "f8"}).find("f32"), std::string::npos);
  EXPECT_NE(bad({"--op", "avg"}).find("sum"), std::string::npos);
  EXPECT_NE(bad({"--sizes", "2", "--dtype", "f32"}).find("smaller than one f32"),
            std::string::npos);
  EXPECT_NE(bad({"--iters", "0"}).find("--iters"), std::string::npos);
  EXPECT_NE(bad({"extra"}).find("unexpected argument 'extra'"), std::string::npos);
  EXPECT_NE(bad({"--bogus"}).find("unknown option"), std::string::npos);
  std::vector<std::string> help = {"--help"};
  EXPECT_EQ(parseBenchArgs(help, &o, &error), ParseStatus::kHelp);
}

TEST(BenchArgs, HelpListsOptionsButNotWorker) {
  std::string help = benchHelp();
  for (const char* option : {"--ranks", "--algo", "--sizes", "--iters", "--warmup", "--dtype",
                             "--op", "--no-check", "--output", "--json"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option;
  }
  EXPECT_EQ(help.find("--worker"), std::string::npos);
  std::size_t start = 0;
  while (start < help.size()) {
    std::size_t end = help.find('\n', start);
    if (end == std::string::npos) end = help.size();
    EXPECT_LE(end - start, 100u) << help.substr(start, end - start);
    start = end + 1;
  }
}

TEST(BenchTypes, ParseAndSize) {
  collector::DType t{};
  for (auto [name, size] : std::vector<std::pair<const char*, size_t>>{
           {"f32", 4}, {"f64", 8}, {"f16", 2}, {"bf16", 2}, {"i32", 4}, {"i64", 8}}) {
    ASSERT_TRUE(reference::parseDType(name, &t)) << name;
    EXPECT_EQ(reference::dtypeSize(t), size) << name;
  }
  EXPECT_FALSE(reference::parseDType("u8", &t));
  EXPECT_EQ(reference::dtypeSize(collector::DType::kU8), 0u);
  collector::ReduceOp op{};
  for (const char* name : {"sum", "prod", "min", "max"}) {
    EXPECT_TRUE(reference::parseReduceOp(name, &op));
  }
  EXPECT_FALSE(reference::parseReduceOp("avg", &op));
}

}  // namespace
}  // namespace ringside::cli
