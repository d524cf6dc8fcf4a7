// finish/: mergeAndFinish() stores the clock model and the training steps before the trace is
// published, the same as finishing a plain merge afterwards; a failing caller step or a failing
// finishing step leaves no trace behind.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/finish/finish.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"
#include "trace_gen.h"

namespace ringside::finish {
namespace {

namespace fs = std::filesystem;

// Rank files of 8 ranks on 2 hosts (two clock domains), 12 all-reduces.
std::vector<std::string> rankFiles(const std::string& dir) {
  gen::GenOptions o;
  o.ranks = 8;
  o.hosts = 2;
  o.collectives = 12;
  o.steps = 3;
  o.bytes = 1 << 16;
  fs::create_directories(dir);
  std::vector<std::string> files;
  std::string error;
  EXPECT_TRUE(gen::writeRankFiles(o, dir, &files, &error)) << error;
  return files;
}

struct Finished {
  std::map<std::string, std::string> meta;
  size_t domains = 0;
  std::string method;
  std::vector<int64_t> step_starts;  // first_seq of each step
};

Finished readFinished(const std::string& trace) {
  Finished f;
  std::string error;
  auto reader = storage::TraceReader::open(trace, &error);
  EXPECT_TRUE(reader) << error;
  if (!reader) return f;
  f.meta = reader->meta();
  f.domains = reader->clockModel().domains.size();
  f.method = reader->clockModel().method;
  EXPECT_TRUE(reader->forEachStep(
      [&](const storage::StepRow& s) {
        f.step_starts.push_back(s.first_seq);
        return true;
      },
      &error))
      << error;
  return f;
}

TEST(Finish, MergeAndFinishEqualsFinishingAfterwards) {
  test_support::TempDir tmp("finish");
  const std::vector<std::string> files = rankFiles(tmp.path() + "/ranks");
  storage::MergeOptions options;
  options.inputs = files;
  options.output = tmp.path() + "/finished.sqlite";
  std::string clock_line;
  const storage::MergeResult finished = mergeAndFinish(options, {}, &clock_line);
  ASSERT_TRUE(finished.ok) << finished.error;

  options.output = tmp.path() + "/plain.sqlite";
  const storage::MergeResult plain = storage::mergeRankFiles(options);
  ASSERT_TRUE(plain.ok) << plain.error;
  EXPECT_EQ(readFinished(options.output).meta.count("steps_detected"), 0u);
  std::string line, error;
  ASSERT_TRUE(finishTrace(options.output, {}, &line, &error)) << error;

  const Finished a = readFinished(tmp.path() + "/finished.sqlite");
  const Finished b = readFinished(options.output);
  EXPECT_EQ(a.domains, 2u);
  EXPECT_EQ(a.domains, b.domains);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(clock_line, line);
  EXPECT_FALSE(clock_line.empty());  // two hosts: the model is described
  ASSERT_EQ(a.meta.count("steps_detected"), 1u);
  EXPECT_EQ(a.meta.at("steps_detected"), b.meta.at("steps_detected"));
  EXPECT_EQ(a.step_starts, b.step_starts);
  EXPECT_FALSE(a.step_starts.empty());  // one all-reduce a period here: detection finds steps
}

TEST(Finish, CallerStepRunsFirstAndItsFailurePublishesNothing) {
  test_support::TempDir tmp("finish");
  storage::MergeOptions options;
  options.inputs = rankFiles(tmp.path() + "/ranks");
  options.output = tmp.path() + "/t.sqlite";
  bool called = false;
  options.before_publish = [&](const std::string& temp, std::string* error) {
    called = true;
    EXPECT_NE(temp, options.output);
    *error = "caller said no";
    return false;
  };
  std::string clock_line;
  const storage::MergeResult r = mergeAndFinish(options, {}, &clock_line);
  EXPECT_TRUE(called);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("caller said no"), std::string::npos) << r.error;
  EXPECT_FALSE(fs::exists(options.output));
  EXPECT_TRUE(clock_line.empty());
}

TEST(Finish, AMissingTraceIsOneLineError) {
  test_support::TempDir tmp("finish");
  std::string line, error;
  EXPECT_FALSE(finishTrace(tmp.path() + "/none.sqlite", {}, &line, &error));
  EXPECT_EQ(error.rfind("clock alignment failed: ", 0), 0u) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace ringside::finish
