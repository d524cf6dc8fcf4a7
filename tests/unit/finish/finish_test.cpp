// finish/: mergeAndFinish() stores the clock model and the training steps before the trace is
// published, the same as finishing a plain merge afterwards; a failing caller step or a failing
// finishing step leaves no trace behind.
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/align/input_sides.h"
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

// Every field of a clock model, for comparing two fits.
std::string modelText(const storage::ClockModel& m) {
  std::ostringstream out;
  out.precision(17);
  out << m.method << ' ' << m.bounds << ' ' << m.violated << ' ' << m.messages_checked << ' '
      << m.messages_before_sent << '\n';
  for (const storage::ClockDomain& d : m.domains) {
    out << d.id << ' ' << d.host << ' ' << d.method << ' ' << d.offset_ns << ' ' << d.drift_ppm
        << ' ' << d.uncertainty_ns << ' ' << d.bounds << ' ' << d.violated << ' ' << d.anchors
        << ' ' << d.segments << ' ' << d.parent << ' ' << d.parent_uncertainty_ns << ':';
    for (int32_t r : d.ranks) out << ' ' << r;
    out << '\n';
  }
  for (const storage::ClockSegment& s : m.segments) {
    out << s.domain << ' ' << s.lo_ns << ' ' << s.hi_ns << ' ' << s.ref_ns << ' ' << s.offset_ns
        << ' ' << s.rate << '\n';
  }
  for (const auto& [rank, domain] : m.rank_domain) out << rank << '>' << domain << ' ';
  return out.str();
}

// The clock fit's message sides read from the inputs beside the copy (align::InputSides) are taken
// when they are the merged trace's, and the model is the one a fit reading the trace makes; an
// input skipped by the copy (-k), or one still being written, sends the fit back to the trace.
TEST(Finish, MessageSidesReadBesideTheCopyGiveTheTracesModel) {
  test_support::TempDir tmp("finish");
  gen::GenOptions o;
  o.ranks = 16;
  o.hosts = 4;
  o.collectives = 6;
  o.bytes = 1 << 16;
  o.receives = true;     // message pairs: bounds from messages
  o.host_clocks = true;  // hours apart, as the fit must find
  fs::create_directories(tmp.path() + "/ranks");
  std::vector<std::string> files;
  std::string error;
  ASSERT_TRUE(gen::writeRankFiles(o, tmp.path() + "/ranks", &files, &error)) << error;
  for (const char* kase : {"all copied", "one skipped", "one live"}) {
    SCOPED_TRACE(kase);
    const std::string kind = kase;
    std::vector<std::string> inputs = files;
    if (kind == "one skipped") {  // the last rank's file, damaged while the first is copied
      fs::create_directories(tmp.path() + "/spoiled");
      inputs.back() = tmp.path() + "/spoiled/" + fs::path(files.back()).filename().string();
      fs::copy_file(files.back(), inputs.back(), fs::copy_options::overwrite_existing);
    }
    storage::MergeOptions options;
    options.inputs = inputs;
    options.output = tmp.path() + "/t.sqlite";
    options.overwrite = true;
    options.keep_going = true;
    align::InputSides sides;
    sides.attachTo(&options);
    bool spoiled = false;
    options.on_input_copied = [&, hook = options.on_input_copied](size_t i, bool copied,
                                                                  int64_t transfers) {
      if (kind == "one skipped" && !spoiled) {
        spoiled = true;
        std::ofstream(inputs.back(), std::ios::binary | std::ios::trunc) << std::string(4096, 'x');
      }
      hook(i, copied, transfers);
    };
    if (kind == "one live") {
      options.on_copy_plan = [&sides](const std::vector<storage::MergePlanInput>& plan) {
        std::vector<storage::MergePlanInput> live = plan;
        live.back().live = true;
        sides.start(live);
      };
    }
    const storage::MergeResult merged = storage::mergeRankFiles(options);
    ASSERT_TRUE(merged.ok) << merged.error;
    EXPECT_EQ(merged.merged_files.size(), files.size() - (kind == "one skipped" ? 1 : 0));
    storage::ClockModel beside, after;
    align::AlignStats stats_beside, stats_after;
    ASSERT_TRUE(align::realignTrace(options.output, {}, &beside, &stats_beside, &error, &sides))
        << error;
    ASSERT_TRUE(align::realignTrace(options.output, {}, &after, &stats_after, &error)) << error;
    EXPECT_EQ(stats_beside.sides_from_inputs, kind == "all copied")
        << stats_beside.sides_not_from_inputs;
    EXPECT_FALSE(stats_after.sides_from_inputs);
    EXPECT_EQ(beside.domains.size(), 4u);
    EXPECT_GT(beside.messages_checked, 0);
    EXPECT_EQ(modelText(beside), modelText(after));
  }
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
