#include "record/launch.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace ringside::cli {
namespace {

int waitStatusOfChild(void (*body)()) {
  pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(99);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ExitStatus, MapsLikeAShell) {
  EXPECT_EQ(exitCodeFromWaitStatus(W_EXITCODE(0, 0)), 0);
  EXPECT_EQ(exitCodeFromWaitStatus(W_EXITCODE(3, 0)), 3);
  EXPECT_EQ(exitCodeFromWaitStatus(W_EXITCODE(255, 0)), 255);
  EXPECT_EQ(exitCodeFromWaitStatus(W_EXITCODE(0, SIGTERM)), 143);
  EXPECT_EQ(exitCodeFromWaitStatus(W_EXITCODE(0, SIGINT)), 130);
  EXPECT_EQ(exitCodeFromWaitStatus(waitStatusOfChild([] { _exit(7); })), 7);
  EXPECT_EQ(exitCodeFromWaitStatus(waitStatusOfChild([] { raise(SIGKILL); })), 137);
  EXPECT_EQ(exitCodeFromWaitStatus(waitStatusOfChild([] {
              signal(SIGSEGV, SIG_DFL);
              raise(SIGSEGV);
            })),
            128 + SIGSEGV);  // with or without the core-dump bit
}

TEST(ExitStatus, Describe) {
  EXPECT_EQ(describeWaitStatus(W_EXITCODE(3, 0)), "exit code 3");
  EXPECT_EQ(describeWaitStatus(W_EXITCODE(0, SIGTERM)), "killed by SIGTERM");
  EXPECT_EQ(exitCodeForExecError(ENOENT), 127);
  EXPECT_EQ(exitCodeForExecError(EACCES), 126);
  EXPECT_EQ(exitCodeForExecError(ENOEXEC), 126);
}

TEST(Environment, SetAndFind) {
  std::vector<std::string> env = {"RANKX=1", "PATH=/bin", "EMPTY="};
  setEnvVar(&env, "RANK", "3");
  setEnvVar(&env, "PATH", "/usr/bin");
  EXPECT_EQ(env, (std::vector<std::string>{"RANKX=1", "PATH=/usr/bin", "EMPTY=", "RANK=3"}));
  ASSERT_NE(findEnvVar(env, "RANK"), nullptr);
  EXPECT_STREQ(findEnvVar(env, "RANK"), "3");
  EXPECT_STREQ(findEnvVar(env, "EMPTY"), "");
  EXPECT_EQ(findEnvVar(env, "RAN"), nullptr);
  EXPECT_FALSE(currentEnvironment().empty());
}

int exitOf(const std::vector<ChildSpec>& children, const SuperviseOptions& options) {
  return runJob(children, options).exit_code;
}

ChildSpec shell(const std::string& script, int rank = -1) {
  return {{"/bin/sh", "-c", script}, currentEnvironment(), rank};
}

TEST(RunJob, PassesTheExitStatusThrough) {
  EXPECT_EQ(exitOf({{{"true"}, currentEnvironment(), -1}}, {}), 0);
  EXPECT_EQ(exitOf({{{"false"}, currentEnvironment(), -1}}, {}), 1);
  EXPECT_EQ(exitOf({shell("exit 3")}, {}), 3);
  EXPECT_EQ(exitOf({shell("kill -TERM $$")}, {}), 143);
}

TEST(RunJob, CommandNotFound) {
  EXPECT_EQ(exitOf({{{"ringside-no-such-command-xyz"}, currentEnvironment(), -1}}, {}), 127);
  EXPECT_EQ(exitOf({{{"/no/such/file"}, currentEnvironment(), -1}}, {}), 127);
  EXPECT_EQ(exitOf({{{"/"}, currentEnvironment(), -1}}, {}), 126);
  EXPECT_TRUE(runJob({{{"/no/such/file"}, currentEnvironment(), -1}}, {}).start_failed);
  EXPECT_FALSE(runJob({shell("exit 127")}, {}).start_failed);
}

TEST(RunJob, StartFailureOfALaterRankStopsTheEarlierOnes) {
  SuperviseOptions options;
  options.grace_s = 0.1;
  JobResult result =
      runJob({shell("exec sleep 30", 0), {{"/no/such/file"}, currentEnvironment(), 1}}, options);
  EXPECT_EQ(result.exit_code, 127);
  EXPECT_TRUE(result.start_failed);
}

// Issue 28: `bench` starts its ranks through the same launcher as `record`, and its lines said
// "ringside record:". The prefix is the caller's.
TEST(RunJob, LinesCarryTheCallersPrefix) {
  SuperviseOptions options;
  options.prefix = "ringside bench: ";
  options.grace_s = 0.1;
  ::testing::internal::CaptureStderr();
  runJob({shell("exec sleep 30", 0), shell("exit 1", 1)}, options);
  runJob({{{"/no/such/file"}, currentEnvironment(), 0}}, options);
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("ringside bench: stopping 1 remaining process(es) with SIGTERM"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("ringside bench: cannot run '/no/such/file'"), std::string::npos) << said;
  EXPECT_EQ(said.find("ringside record:"), std::string::npos) << said;
  EXPECT_EQ(SuperviseOptions{}.prefix, "ringside record: ");
}

TEST(RunJob, ChildSeesItsEnvironment) {
  ChildSpec child = shell("test \"$RINGSIDE_TEST_VALUE\" = hello");
  setEnvVar(&child.env, "RINGSIDE_TEST_VALUE", "hello");
  EXPECT_EQ(exitOf({child}, {}), 0);
}

TEST(RunJob, AllRanksZeroIsZero) {
  EXPECT_EQ(exitOf({shell("exit 0", 0), shell("exit 0", 1), shell("exit 0", 2)}, {}), 0);
}

TEST(RunJob, FirstFailureWinsAndTheRestAreStopped) {
  SuperviseOptions options;
  options.grace_s = 0.2;
  options.kill_after_s = 0.3;
  auto start = std::chrono::steady_clock::now();
  // Rank 0 would sleep long, rank 1 fails at once; rank 0 gets SIGTERM after the grace.
  int code = exitOf({shell("exec sleep 30", 0), shell("exit 5", 1)}, options);
  EXPECT_EQ(code, 5);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(RunJob, SigkillAfterIgnoredSigterm) {
  SuperviseOptions options;
  options.grace_s = 0.1;
  options.kill_after_s = 0.3;
  auto start = std::chrono::steady_clock::now();
  int code = exitOf({shell("trap '' TERM; exec sleep 30", 0), shell("kill -KILL $$", 1)}, options);
  EXPECT_EQ(code, 137);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(RunJob, ForwardsSigtermSentToUs) {
  // The child is told our pid and sends us SIGTERM; we forward it, it dies of it.
  ChildSpec child = shell("kill -TERM $PPID; sleep 5 & wait");
  int code = exitOf({child}, {});
  EXPECT_EQ(code, 143);
}

}  // namespace
}  // namespace ringside::cli
