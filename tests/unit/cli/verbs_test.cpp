#include "verbs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

namespace ringside::cli {
namespace {

struct Outcome {
  int code;
  std::string out;
  std::string err;
};

Outcome run(std::vector<std::string> args) {
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  int code = runCli(args);
  Outcome r{code, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

int lineCount(const std::string& text) {
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

TEST(Verbs, TableHasTheVerbsThatExist) {
  EXPECT_NE(findVerb("record"), nullptr);
  EXPECT_NE(findVerb("merge"), nullptr);
  EXPECT_NE(findVerb("help"), nullptr);
  EXPECT_NE(findVerb("bench"), nullptr);
  EXPECT_NE(findVerb("export"), nullptr);
  EXPECT_NE(findVerb("report"), nullptr);
  EXPECT_NE(findVerb("diff"), nullptr);
  EXPECT_NE(findVerb("view"), nullptr);  // execs ringside-view; says so when the build has none
  std::string help = topLevelHelp();
  for (const Verb& verb : verbs())
    EXPECT_NE(help.find("  " + std::string(verb.name)), std::string::npos);
}

TEST(Verbs, HelpAndVersion) {
  Outcome r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("record"), std::string::npos);
  r = run({"--version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("ringside ", 0), 0u) << r.out;
  r = run({"help", "record"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: ringside record"), std::string::npos);
  r = run({"merge", "--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("Usage: ringside merge"), std::string::npos);
  r = run({"help", "nope"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
}

TEST(Verbs, UsageErrorsAreOneLineAndExit2) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"nope"},
                                                                {"--bogus"},
                                                                {"record"},
                                                                {"record", "--bogus", "ls"},
                                                                {"record", "--ranks", "0", "ls"},
                                                                {"merge"},
                                                                {"merge", "--bogus", "x"}}) {
    Outcome r = run(args);
    EXPECT_EQ(r.code, 2) << args.front();
    EXPECT_EQ(lineCount(r.err), 1) << r.err;
    EXPECT_EQ(r.err.rfind("ringside", 0), 0u) << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  EXPECT_EQ(run({"record"}).err.rfind("ringside record: ", 0), 0u);
  EXPECT_EQ(run({}).code, 2);
}

TEST(Verbs, MergeBadInputIsOneLineExit1) {
  Outcome r =
      run({"merge", "-o", "/tmp/ringside-verbs-test-never.sqlite", "/no/such/input.sqlite"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("/no/such/input.sqlite"), std::string::npos) << r.err;

  const char* garbage = "/tmp/ringside-verbs-test-garbage.txt";
  std::ofstream(garbage) << "this is not a trace\n";
  r = run({"merge", "-o", "/tmp/ringside-verbs-test-never.sqlite", garbage});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(lineCount(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("ringside merge: ", 0), 0u) << r.err;
  std::remove(garbage);
}

}  // namespace
}  // namespace ringside::cli
