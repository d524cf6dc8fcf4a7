// nccl_link: what ties NCCL's profiler events to the wrapped calls, and the
// GPU-timer conversion.
#include "nccl_link.h"

#include <gtest/gtest.h>
#include <time.h>

#include <thread>

#include "ringside/collector/event.h"

namespace nl = ringside::interpose::nccl_link;
using ringside::collector::Op;

namespace {

int64_t clockNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

nl::Pending pending(uint64_t id, int32_t comm, Op op, uint64_t group = 0) {
  nl::Pending p;
  p.id = id;
  p.comm = comm;
  p.op = static_cast<uint8_t>(op);
  p.group = group;
  return p;
}

}  // namespace

TEST(NcclLink, ClaimsInCallOrderPerCommAndOp) {
  nl::pushPending(pending(1, 0, Op::kAllreduce));
  nl::pushPending(pending(2, 1, Op::kAllreduce));
  nl::pushPending(pending(3, 0, Op::kAllreduce));
  nl::Pending p;
  ASSERT_TRUE(nl::claimPending(1, static_cast<uint8_t>(Op::kAllreduce), &p));
  EXPECT_EQ(p.id, 2u);
  ASSERT_TRUE(nl::claimPending(0, static_cast<uint8_t>(Op::kAllreduce), &p));
  EXPECT_EQ(p.id, 1u);
  EXPECT_FALSE(nl::claimPending(0, static_cast<uint8_t>(Op::kBroadcast), &p));
  ASSERT_TRUE(nl::claimPending(-1, static_cast<uint8_t>(Op::kAllreduce), &p));  // comm unknown: any
  EXPECT_EQ(p.id, 3u);
  EXPECT_FALSE(nl::claimPending(-1, static_cast<uint8_t>(Op::kAllreduce), &p));
}

TEST(NcclLink, UnclaimedCallsAreRetired) {
  nl::pushPending(pending(10, 0, Op::kSend));
  nl::retirePending(10);
  nl::Pending p;
  EXPECT_FALSE(nl::claimPending(0, static_cast<uint8_t>(Op::kSend), &p));
  nl::pushPending(pending(11, 0, Op::kSend, 5));
  nl::pushPending(pending(12, 0, Op::kRecv, 5));
  nl::retireGroup();
  EXPECT_FALSE(nl::claimPending(0, static_cast<uint8_t>(Op::kRecv), &p));
}

TEST(NcclLink, QueuesArePerThread) {
  nl::pushPending(pending(20, 0, Op::kAllreduce));
  bool other = true;
  std::thread([&] {
    nl::Pending q;
    other = nl::claimPending(0, static_cast<uint8_t>(Op::kAllreduce), &q);
  }).join();
  EXPECT_FALSE(other);
  nl::Pending p;
  EXPECT_TRUE(nl::claimPending(0, static_cast<uint8_t>(Op::kAllreduce), &p));
}

TEST(NcclLink, CompositesArePeekedNotClaimed) {
  nl::pushPending(pending(30, 2, Op::kAlltoall));
  nl::Pending p;
  ASSERT_TRUE(nl::peekComposite(2, &p));
  EXPECT_EQ(p.id, 30u);
  ASSERT_TRUE(nl::peekComposite(2, &p));  // still there for the next send/recv
  nl::retirePending(30);
  EXPECT_FALSE(nl::peekComposite(2, &p));
}

TEST(NcclLink, GroupsNestAndNumber) {
  EXPECT_EQ(nl::currentGroupPlusOne(), 0u);
  nl::groupStarted();
  uint64_t g = nl::currentGroupPlusOne();
  EXPECT_NE(g, 0u);
  nl::groupStarted();
  EXPECT_EQ(nl::currentGroupPlusOne(), g);
  EXPECT_FALSE(nl::groupEnded());
  EXPECT_TRUE(nl::groupEnded());
  EXPECT_EQ(nl::currentGroupPlusOne(), 0u);
  EXPECT_FALSE(nl::groupEnded());  // unbalanced end: ignored
  nl::groupStarted();
  EXPECT_GT(nl::currentGroupPlusOne(), g);
  EXPECT_TRUE(nl::groupEnded());
}

TEST(NcclLink, CreationWindowBindsByHashThenShapeThenOrder) {
  nl::PluginComm* before = nl::newPluginComm(5);  // outside the window
  nl::CreationWindow w = nl::openCreationWindow(0xabc);
  nl::PluginComm* other = nl::newPluginComm(5);
  other->rank = 1;
  other->nranks = 4;
  other->nccl_hash = 0x111;
  nl::PluginComm* mine = nl::newPluginComm(5);
  mine->rank = 0;
  mine->nranks = 2;
  mine->nccl_hash = 0xabc;
  EXPECT_EQ(nl::bindCreatedContexts(w, 7, 0, 2, 3, 1), 1);
  EXPECT_EQ(mine->comm.load(), 7);
  EXPECT_EQ(mine->device.load(), 3);
  EXPECT_EQ(other->comm.load(), -1);
  EXPECT_EQ(before->comm.load(), -1);
  EXPECT_EQ(nl::bindCreatedContexts(w, 8, 1, 4, -1, 1), 1);  // same rank and size
  EXPECT_EQ(other->comm.load(), 8);

  nl::CreationWindow w2 = nl::openCreationWindow(0);
  nl::PluginComm* a = nl::newPluginComm(2);  // < v4: told nothing
  nl::PluginComm* b = nl::newPluginComm(2);
  EXPECT_EQ(nl::bindCreatedContexts(w2, 9, 0, 2, -1, 1), 1);
  EXPECT_EQ(a->comm.load(), 9);  // the oldest
  EXPECT_EQ(b->comm.load(), -1);
}

TEST(NcclLink, HashesFindCommunicators) {
  EXPECT_EQ(nl::commForNcclHash(0x5151), -1);
  nl::noteNcclHash(0x5151, 4);
  nl::noteNcclHash(0x5151 + 512, 6);  // same slot, probes on
  EXPECT_EQ(nl::commForNcclHash(0x5151), 4);
  EXPECT_EQ(nl::commForNcclHash(0x5151 + 512), 6);
  EXPECT_EQ(nl::commForNcclHash(0), -1);
}

TEST(NcclLink, CommDevices) {
  EXPECT_EQ(nl::commDevice(11), -1);
  nl::setCommDevice(11, 0);
  EXPECT_EQ(nl::commDevice(11), 0);
  EXPECT_EQ(nl::commDevice(-1), -1);
  EXPECT_EQ(nl::commDevice(100000), -1);
}

// One test: the conversion's offset is process state.
TEST(NcclLink, GpuTimerToHostClock) {
  EXPECT_EQ(nl::gpuTimerToHostNs(0, 123), 0);
  // A timer in Unix time, as NVIDIA's globaltimer: lands near the monotonic now.
  int64_t mono = clockNs(CLOCK_MONOTONIC);
  auto real = static_cast<uint64_t>(clockNs(CLOCK_REALTIME));
  int64_t h = nl::gpuTimerToHostNs(real, mono + 1000000000);
  EXPECT_LT(std::llabs(h - mono), 50000000);
  // Causality: never after the host instant that reported it; the offset moves earlier for good.
  int64_t observed = h - 5000;
  int64_t c = nl::gpuTimerToHostNs(real, observed);
  EXPECT_LE(c, observed);
  EXPECT_EQ(nl::gpuTimerToHostNs(real, 0), c);  // the later call keeps the earlier offset
  EXPECT_EQ(nl::gpuTimerToHostNs(real + 1000, 0), c + 1000);
}
