// Rings and trees from NCCL's INFO log lines.
#include "nccl_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "temp_dir.h"

namespace nl = ringside::interpose::nccl_log;

TEST(NcclLog, ChannelAndTreeLinesBelongToTheirInitComplete) {
  nl::Parser p(4242);
  EXPECT_FALSE(p.feed("gpu1:4242:4250 [0] NCCL INFO Channel 00/02 :    0   1   2   3"));
  EXPECT_FALSE(p.feed("gpu1:4242:4250 [0] NCCL INFO Channel 01/02 :    0   3   2   1"));
  EXPECT_FALSE(p.feed("gpu1:4242:4250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC"));
  EXPECT_FALSE(p.feed("gpu1:4242:4250 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1"));
  EXPECT_FALSE(p.feed("gpu1:9999:9999 [0] NCCL INFO Channel 00/02 :    7   8"));  // another process
  EXPECT_FALSE(p.feed("gpu1:4242:4251 [0] NCCL INFO Channel 00/01 :    0   1"));  // another thread's comm
  ASSERT_TRUE(p.feed("gpu1:4242:4250 [0] NCCL INFO ncclCommInitRank comm 0x55d0 rank 0 nranks 4 cudaDev 0 "
                     "nvmlDev 0 busId 1000 commId 0x8a3b41e1b5b4a6f2 - Init COMPLETE"));
  nl::CommTopology t = p.take();
  EXPECT_EQ(t.comm_id, 0x8a3b41e1b5b4a6f2ull);
  EXPECT_EQ(t.comm, 0x55d0u);
  ASSERT_EQ(t.lines.size(), 4u);
  EXPECT_EQ(t.lines[0], "ring 0: 0 1 2 3");
  EXPECT_EQ(t.lines[1], "ring 1: 0 3 2 1");
  EXPECT_EQ(t.lines[2], "tree 0: 1/-1/-1->0->-1");
  EXPECT_EQ(t.lines[3], "tree 1: -1/-1/-1->0->1");
  ASSERT_TRUE(p.feed("gpu1:4242:4251 [0] NCCL INFO ncclCommSplit comm 0x55e0 rank 0 nranks 2 cudaDev 0 "
                     "nvmlDev 0 busId 1000 commId 0x12 - Init COMPLETE"));
  t = p.take();
  EXPECT_EQ(t.comm_id, 0x12u);
  EXPECT_EQ(t.comm, 0x55e0u);
  ASSERT_EQ(t.lines.size(), 1u);
  EXPECT_EQ(t.lines[0], "ring 0: 0 1");
  EXPECT_FALSE(p.feed("not a NCCL line"));
  EXPECT_FALSE(p.feed(""));
}

TEST(NcclLog, ReadsOnlyWhatWasAppended) {
  ringside::test_support::TempDir tmp("nccl-log");
  ASSERT_FALSE(tmp.path().empty());
  const std::string path = tmp.path() + "/nccl.log";
  long pid = 77;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "h:77:1 [0] NCCL INFO Channel 00/01 :    0   1\n");
  std::fprintf(f, "h:77:1 [0] NCCL INFO x comm 0x10 rank 0 commId 0xab - Init COMPLETE\n");
  std::fprintf(f, "h:77:1 [0] NCCL INFO Channel 00/01 :    1   0\n");
  std::fprintf(f, "h:77:1 [0] NCCL INFO x commId 0xcd - Init COM");  // still being written
  std::fflush(f);
  nl::Parser parser(pid);
  long offset = 0;
  auto got = nl::readNew(path, pid, &offset, &parser);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].comm_id, 0xabu);
  EXPECT_EQ(got[0].comm, 0x10u);
  std::fprintf(f, "PLETE\n");
  std::fclose(f);
  got = nl::readNew(path, pid, &offset, &parser);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].comm_id, 0xcdu);
  ASSERT_EQ(got[0].lines.size(), 1u);
  EXPECT_EQ(got[0].lines[0], "ring 0: 1 0");
  EXPECT_TRUE(nl::readNew(path, pid, &offset, &parser).empty());
}

// Issue 28: NCCL_DEBUG_FILE comes from the job's environment. A FIFO there blocked the traced
// process in fopen() (waiting for a writer); /dev/zero was read without end.
TEST(NcclLog, AFifoOrADeviceIsNeitherWaitedForNorRead) {
  ringside::test_support::TempDir tmp("nccl-log");
  ASSERT_FALSE(tmp.path().empty());
  const std::string fifo = tmp.path() + "/nccl.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  nl::Parser parser(1);
  long offset = 0;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(nl::readNew(fifo, 1, &offset, &parser).empty());
  EXPECT_TRUE(nl::readNew("/dev/zero", 1, &offset, &parser).empty());
  EXPECT_EQ(offset, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
}

TEST(NcclLog, DebugFilePathNeedsInfoLevel) {
  unsetenv("NCCL_DEBUG");
  setenv("NCCL_DEBUG_FILE", "/tmp/x-%h.%p.log", 1);
  EXPECT_EQ(nl::debugFilePath(), "");
  setenv("NCCL_DEBUG", "WARN", 1);
  EXPECT_EQ(nl::debugFilePath(), "");
  setenv("NCCL_DEBUG", "INFO", 1);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_EQ(nl::debugFilePath(), std::string("/tmp/x-") + host + "." + std::to_string(getpid()) + ".log");
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_FILE");
}
