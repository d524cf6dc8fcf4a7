#include "record/merge_cmd.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "temp_dir.h"

namespace ringside::cli {
namespace {
namespace fs = std::filesystem;

TEST(MergeArgs, InputsAndOptionsInAnyOrder) {
  MergeCliOptions o;
  std::string error;
  ASSERT_EQ(parseMergeArgs(std::vector<std::string>{"a.sqlite", "-o", "out.sqlite", "b.sqlite",
                                                    "--force", "-k"},
                           &o, &error),
            ParseStatus::kOk)
      << error;
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"a.sqlite", "b.sqlite"}));
  EXPECT_EQ(o.output, "out.sqlite");
  EXPECT_TRUE(o.force);
  EXPECT_TRUE(o.keep_going);
  EXPECT_FALSE(o.quiet);
}

TEST(MergeArgs, Errors) {
  MergeCliOptions o;
  std::string error;
  EXPECT_EQ(parseMergeArgs({}, &o, &error), ParseStatus::kError);
  EXPECT_NE(error.find("no inputs"), std::string::npos) << error;
  EXPECT_EQ(parseMergeArgs(std::vector<std::string>{"--bogus", "a"}, &o, &error),
            ParseStatus::kError);
  EXPECT_NE(error.find("unknown option '--bogus'"), std::string::npos) << error;
  EXPECT_EQ(error.find("'--' before"), std::string::npos) << error;  // no command here
  EXPECT_EQ(parseMergeArgs(std::vector<std::string>{"a", "-o"}, &o, &error), ParseStatus::kError);
  EXPECT_EQ(parseMergeArgs(std::vector<std::string>{"-h"}, &o, &error), ParseStatus::kHelp);
  ASSERT_EQ(parseMergeArgs(std::vector<std::string>{"--", "-odd-name.sqlite"}, &o, &error),
            ParseStatus::kOk);
  EXPECT_EQ(o.inputs, (std::vector<std::string>{"-odd-name.sqlite"}));
}

TEST(MergeArgs, DefaultOutput) {
  test_support::TempDir tmp("merge-test");
  fs::path dir = tmp.path();
  EXPECT_EQ(defaultMergeOutput({dir.string()}), dir.string() + ".sqlite");
  EXPECT_EQ(defaultMergeOutput({dir.string() + "/"}), dir.string() + ".sqlite");
  EXPECT_EQ(defaultMergeOutput({(dir / "a.sqlite").string()}), "merged.sqlite");
  EXPECT_EQ(defaultMergeOutput({dir.string(), dir.string()}), "merged.sqlite");
}

}  // namespace
}  // namespace ringside::cli
