#include "options.h"

#include <gtest/gtest.h>

#include <sstream>

#include "record/record_options.h"
#include "verbs.h"

namespace ringside::cli {
namespace {

struct Parsed {
  ParseStatus status;
  RecordOptions options;
  std::string error;
};

Parsed record(std::vector<std::string> args) {
  Parsed p;
  p.status = parseRecordArgs(args, &p.options, &p.error);
  return p;
}

TEST(RecordArgs, CommandAfterDoubleDash) {
  Parsed p = record({"-o", "t.sqlite", "--", "ls", "-l"});
  ASSERT_EQ(p.status, ParseStatus::kOk) << p.error;
  EXPECT_EQ(p.options.output, "t.sqlite");
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"ls", "-l"}));
}

TEST(RecordArgs, DoubleDashIsOptionalAndOptionsAfterCommandBelongToIt) {
  Parsed p = record({"--ranks", "2", "python3", "train.py", "--ranks", "5", "--help"});
  ASSERT_EQ(p.status, ParseStatus::kOk) << p.error;
  EXPECT_EQ(p.options.ranks, 2);
  EXPECT_EQ(p.options.command,
            (std::vector<std::string>{"python3", "train.py", "--ranks", "5", "--help"}));
}

TEST(RecordArgs, CommandStartingWithDashNeedsDoubleDash) {
  Parsed p = record({"-weird"});
  EXPECT_EQ(p.status, ParseStatus::kError);
  EXPECT_NE(p.error.find("unknown option '-weird'"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("'--'"), std::string::npos) << p.error;
  p = record({"--", "-weird", "x"});
  ASSERT_EQ(p.status, ParseStatus::kOk) << p.error;
  EXPECT_EQ(p.options.command, (std::vector<std::string>{"-weird", "x"}));
}

TEST(RecordArgs, UnknownFlag) {
  Parsed p = record({"--bogus", "ls"});
  EXPECT_EQ(p.status, ParseStatus::kError);
  EXPECT_NE(p.error.find("unknown option '--bogus'"), std::string::npos) << p.error;
  EXPECT_EQ(p.error.find('\n'), std::string::npos);
}

// A near miss names the option meant, not the '--' advice ("record --rank 4" once suggested
// putting '--' before a command).
TEST(RecordArgs, MistypedOptionSuggestsTheClosest) {
  Parsed p = record({"--rank", "4", "ls"});
  EXPECT_EQ(p.status, ParseStatus::kError);
  EXPECT_EQ(p.error, "unknown option '--rank'; did you mean --ranks?");
  p = record({"--buffer=4", "ls"});
  EXPECT_EQ(p.error, "unknown option '--buffer=4'; did you mean --buffer-mb?");
  p = record({"--zzzzzz", "ls"});
  EXPECT_EQ(p.error.find("did you mean"), std::string::npos) << p.error;
}

// Examples a Debian user can paste: Debian's python with torch is /usr/bin/python3, and
// Debian's torchrun does not run on it (README).
TEST(RecordArgs, HelpExamplesRunOnDebian) {
  for (const std::string& help : {recordHelp(), topLevelHelp()}) {
    EXPECT_EQ(help.find(" python3 train.py"), std::string::npos) << help;
    EXPECT_NE(help.find("/usr/bin/python3 train.py"), std::string::npos) << help;
  }
}

TEST(RecordArgs, MissingCommand) {
  for (const auto& args :
       std::vector<std::vector<std::string>>{{}, {"--ranks", "2"}, {"--"}, {"-q", "--"}}) {
    Parsed p = record(args);
    EXPECT_EQ(p.status, ParseStatus::kError);
    EXPECT_NE(p.error.find("no command"), std::string::npos) << p.error;
  }
  EXPECT_EQ(record({"--", ""}).status, ParseStatus::kError);
}

TEST(RecordArgs, RanksValidation) {
  for (const char* bad : {"0", "-1", "abc", "2x", "", "1025", "99999999999999999999"}) {
    Parsed p = record({"--ranks", bad, "ls"});
    EXPECT_EQ(p.status, ParseStatus::kError) << bad;
    EXPECT_NE(p.error.find("--ranks"), std::string::npos) << p.error;
  }
  EXPECT_EQ(record({"--ranks=4", "ls"}).options.ranks, 4);
  EXPECT_EQ(record({"-n4", "ls"}).options.ranks, 4);
  EXPECT_EQ(record({"-n", "1024", "ls"}).options.ranks, 1024);
  Parsed p = record({"ls", "--ranks"});  // belongs to ls
  EXPECT_EQ(p.status, ParseStatus::kOk);
  EXPECT_EQ(p.options.ranks, 0);
}

TEST(RecordArgs, MissingValue) {
  Parsed p = record({"--ranks"});
  EXPECT_EQ(p.status, ParseStatus::kError);
  EXPECT_NE(p.error.find("needs a value"), std::string::npos) << p.error;
  p = record({"-o"});
  EXPECT_NE(p.error.find("--output needs a value"), std::string::npos) << p.error;
}

TEST(RecordArgs, FlagWithValueIsAnError) {
  Parsed p = record({"--quiet=1", "ls"});
  EXPECT_EQ(p.status, ParseStatus::kError);
  EXPECT_NE(p.error.find("takes no value"), std::string::npos) << p.error;
}

TEST(RecordArgs, OtherOptions) {
  Parsed p =
      record({"-f", "-q", "--keep-rank-files", "--no-merge", "--dir", "d", "--buffer-mb", "128",
              "--master-addr", "10.0.0.1", "--master-port", "29500", "--grace-s", "2.5", "true"});
  ASSERT_EQ(p.status, ParseStatus::kOk) << p.error;
  EXPECT_TRUE(p.options.force);
  EXPECT_TRUE(p.options.quiet);
  EXPECT_TRUE(p.options.keep_rank_files);
  EXPECT_TRUE(p.options.no_merge);
  EXPECT_TRUE(p.options.master_set);
  EXPECT_EQ(p.options.dir, "d");
  EXPECT_EQ(p.options.buffer_mb, 128);
  EXPECT_EQ(p.options.master_addr, "10.0.0.1");
  EXPECT_EQ(p.options.master_port, 29500);
  EXPECT_DOUBLE_EQ(p.options.grace_s, 2.5);
  EXPECT_EQ(record({"--master-port", "70000", "ls"}).status, ParseStatus::kError);
  EXPECT_EQ(record({"--grace-s", "-1", "ls"}).status, ParseStatus::kError);
  EXPECT_EQ(record({"--grace-s", "nan", "ls"}).status, ParseStatus::kError);
  EXPECT_EQ(record({"--buffer-mb", "0", "ls"}).status, ParseStatus::kError);
  // The preload library's range (RINGSIDE_BUFFER_MB), not a wider one it would ignore.
  EXPECT_EQ(record({"--buffer-mb", "65537", "ls"}).status, ParseStatus::kError);
  EXPECT_EQ(record({"--buffer-mb", "1048576", "ls"}).status, ParseStatus::kError);
  EXPECT_EQ(record({"--buffer-mb", "65536", "ls"}).status, ParseStatus::kOk);
  EXPECT_EQ(record({"-o", "", "ls"}).status, ParseStatus::kError);
}

TEST(RecordArgs, Nodes) {
  Parsed p = record({"--nnodes", "4", "--node-rank", "3", "--ranks", "2", "-o", "t.sqlite",
                     "--run-id", "job-7", "ls"});
  ASSERT_EQ(p.status, ParseStatus::kOk) << p.error;
  EXPECT_EQ(p.options.nnodes, 4);
  EXPECT_EQ(p.options.node_rank, 3);
  EXPECT_TRUE(isMultiNode(p.options));
  EXPECT_TRUE(p.options.run_id_set);
  EXPECT_EQ(p.options.run_id, "job-7");
  // One node: no node-rank needed, and nothing changes.
  p = record({"--nnodes", "1", "ls"});
  ASSERT_EQ(p.status, ParseStatus::kOk) << p.error;
  EXPECT_FALSE(isMultiNode(p.options));
  EXPECT_EQ(record({"--dir", "d", "--nnodes", "2", "--node-rank", "1", "ls"}).status,
            ParseStatus::kOk);
  for (std::vector<std::string> bad :
       {std::vector<std::string>{"--nnodes", "2", "-o", "t.sqlite", "ls"},
        {"--node-rank", "0", "-o", "t.sqlite", "ls"},
        {"--nnodes", "2", "--node-rank", "2", "-o", "t.sqlite", "ls"},
        {"--nnodes", "2", "--node-rank", "0", "ls"},
        {"--nnodes", "0", "ls"},
        {"--run-id", "", "ls"},
        {"--run-id", "a\tb", "ls"},
        {"--run-id", std::string(257, 'x'), "ls"}}) {
    Parsed q = record(bad);
    EXPECT_EQ(q.status, ParseStatus::kError) << bad[0] << " " << bad[1];
    EXPECT_EQ(q.error.find('\n'), std::string::npos) << q.error;
  }
}

// The run id of `record --nnodes N -- torchrun ... --rdzv-id ID`: what torchrun gives its ranks
// as TORCHELASTIC_RUN_ID, read from its command line (docs/multi-node.md).
TEST(RecordArgs, TorchrunRdzvId) {
  using V = std::vector<std::string>;
  auto id = [](V command, const char* pet = nullptr) { return torchrunRdzvId(command, pet); };
  EXPECT_EQ(id({"torchrun", "--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-id", "exp17",
                "train.py"}),
            "exp17");
  EXPECT_EQ(id({"/venv/bin/torchrun", "--standalone", "--rdzv_id=j9", "train.py"}), "j9");
  EXPECT_EQ(id({"python3", "-u", "-m", "torch.distributed.run", "--rdzv-id", "r1", "t.py"}), "r1");
  // The training script's own --rdzv-id is not torchrun's; torchrun's default names no run.
  EXPECT_EQ(id({"torchrun", "--nproc-per-node", "2", "train.py", "--rdzv-id", "x"}), "");
  EXPECT_EQ(id({"torchrun", "--rdzv-id", "none", "train.py"}), "");
  EXPECT_EQ(id({"torchrun", "--standalone", "train.py"}), "");
  // torchrun's environment default, overridden by its command line.
  EXPECT_EQ(id({"torchrun", "train.py"}, "pet5"), "pet5");
  EXPECT_EQ(id({"torchrun", "--rdzv-id", "cli", "train.py"}, "pet5"), "cli");
  // Not torchrun.
  EXPECT_EQ(id({"python3", "train.py", "--rdzv-id", "x"}), "");
  EXPECT_EQ(id({"python3", "train.py", "-m", "torch.distributed.run"}), "");
  EXPECT_EQ(id({"mytorchrun", "--rdzv-id", "x"}), "");
  EXPECT_EQ(id({}), "");
}

TEST(RecordArgs, Defaults) {
  Parsed p = record({"ls"});
  ASSERT_EQ(p.status, ParseStatus::kOk);
  EXPECT_EQ(p.options.output, "");
  EXPECT_EQ(p.options.ranks, 0);
  EXPECT_EQ(p.options.master_addr, "127.0.0.1");
  EXPECT_EQ(p.options.master_port, 0);
  EXPECT_FALSE(p.options.master_set);
  EXPECT_DOUBLE_EQ(p.options.grace_s, 30.0);
  EXPECT_FALSE(p.options.force);
}

TEST(RecordArgs, Help) {
  Parsed p = record({"--help"});
  EXPECT_EQ(p.status, ParseStatus::kHelp);
  EXPECT_EQ(record({"-q", "-h"}).status, ParseStatus::kHelp);
  std::string help = recordHelp();
  for (const char* option :
       {"--output", "--ranks", "--dir", "--keep-rank-files", "--master-addr", "--master-port",
        "--quiet", "--buffer-mb", "--no-merge", "--force", "--grace-s", "--nnodes",
        "--node-rank", "--run-id", "--help"}) {
    EXPECT_NE(help.find(option), std::string::npos) << option;
  }
  std::istringstream lines(help);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
}

TEST(ValueParsers, Integer) {
  int64_t v = 0;
  EXPECT_TRUE(parseInteger("42", 0, 100, &v));
  EXPECT_EQ(v, 42);
  EXPECT_FALSE(parseInteger("101", 0, 100, &v));
  EXPECT_FALSE(parseInteger(" 1", 0, 100, &v));
  EXPECT_FALSE(parseInteger("+1", 0, 100, &v));
  EXPECT_FALSE(parseInteger("", 0, 100, &v));
}

TEST(ValueParsers, Seconds) {
  double s = 0;
  EXPECT_TRUE(parseSeconds("0", &s));
  EXPECT_TRUE(parseSeconds("0.25", &s));
  EXPECT_DOUBLE_EQ(s, 0.25);
  EXPECT_FALSE(parseSeconds("-0.5", &s));
  EXPECT_FALSE(parseSeconds("inf", &s));
  EXPECT_FALSE(parseSeconds("1x", &s));
  EXPECT_TRUE(parseSeconds("1s", &s));  // format/'s duration grammar (issue 26)
  EXPECT_DOUBLE_EQ(s, 1);
  EXPECT_TRUE(parseSeconds("500ms", &s));
  EXPECT_DOUBLE_EQ(s, 0.5);
}

TEST(ValueParsers, Choice) {
  std::string format = "text";
  auto apply = storeChoice(&format, {"text", "md", "csv"});
  std::string error;
  EXPECT_TRUE(apply("md", &error));
  EXPECT_EQ(format, "md");
  EXPECT_FALSE(apply("pdf", &error));
  EXPECT_EQ(format, "md");
  EXPECT_EQ(error, "'pdf' is not one of text, md, csv");
}

TEST(OneInput, ExactlyOne) {
  bool flag = false;
  std::vector<OptionSpec> specs = {{"flag", 'f', "", "a flag", setFlag(&flag)}};
  std::string input, error;
  std::vector<std::string> args = {"-f", "t.sqlite"};
  EXPECT_EQ(parseOptionsOneInput(args, specs, "none", "many", &input, &error), ParseStatus::kOk);
  EXPECT_EQ(input, "t.sqlite");
  EXPECT_TRUE(flag);
  args = {"-f"};
  EXPECT_EQ(parseOptionsOneInput(args, specs, "none", "many", &input, &error),
            ParseStatus::kError);
  EXPECT_EQ(error, "none");
  args = {"a", "b"};
  EXPECT_EQ(parseOptionsOneInput(args, specs, "none", "many", &input, &error),
            ParseStatus::kError);
  EXPECT_EQ(error, "many");
  args = {"--help"};
  EXPECT_EQ(parseOptionsOneInput(args, specs, "none", "many", &input, &error), ParseStatus::kHelp);
}

}  // namespace
}  // namespace ringside::cli
