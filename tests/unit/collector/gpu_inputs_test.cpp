// The collector's GPU inputs (gpu.h and EventKind::kCollectiveGpu): named
// communicators with their life cycle, GPU details of collectives arriving
// in parts, transfer channels, and the bounded GPU activity queue. Each test
// runs in a forked child (the collector is a process-wide singleton).
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/collector/collector.h"
#include "ringside/collector/gpu.h"
#include "ringside/storage/trace_reader.h"
#include "traced_child.h"

namespace col = ringside::collector;
namespace st = ringside::storage;

namespace {

using ringside::test_support::inChild;
using ringside::test_support::makeTempDir;

std::string onlyRankFile(const std::string& dir) {
  const std::vector<std::string> out = ringside::test_support::rankFiles(dir);
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? "" : out[0];
}

TEST(GpuInputs, CommunicatorsCollectiveDetailsChannelsAndActivities) {
  const std::string dir = makeTempDir("gpu-inputs");
  const int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 2;
    int key = 0, child_key = 0;
    const int32_t comm = col::registerCommNamed(&key, 1, 2, "nccl", "nccl/0123456789abcdef");
    const int32_t child = col::registerCommNamed(&child_key, 0, 1, "nccl", "nccl/fedcba9876543210");
    if (comm < 0 || child < 0) return 3;
    if (std::string(col::commName(comm)) != "nccl/0123456789abcdef") return 4;
    if (std::string(col::commName(999)) != "") return 5;
    col::setIdentity(1, 2, "nccl");
    col::noteCommCreated(comm, -1, 100);
    col::noteCommTopology(comm, "ring 0: 0 1");
    col::noteCommTopology(comm, "ring 1: 1 0");
    col::noteCommCreated(child, comm, 200);
    col::noteCommEnded(child, 300, "aborted");

    col::Event c;
    c.kind = col::EventKind::kCollective;
    c.op = static_cast<uint8_t>(col::Op::kAllreduce);
    c.library = static_cast<uint8_t>(col::Library::kNccl);
    c.id = col::newCollectiveId();
    c.comm = static_cast<int16_t>(comm);
    c.key = 0;
    c.bytes = 4096;
    c.aux = 1024;
    c.t0 = col::nowNs();
    c.t1 = c.t0 + 10;
    col::emit(c);
    col::Event api;  // what the API wrapper knows: group and stream
    api.kind = col::EventKind::kCollectiveGpu;
    api.id = c.id;
    api.aux = 5 + 1;
    api.key = 0x7f00;
    api.comm = 0;  // device 0
    col::emit(api);
    col::Event prof;  // what the profiler adds later
    prof.kind = col::EventKind::kCollectiveGpu;
    prof.id = c.id;
    prof.t0 = c.t0 + 100;
    prof.t1 = c.t0 + 900;
    prof.peer = 2;
    prof.algorithm = static_cast<uint8_t>(col::Algorithm::kRing);
    prof.protocol = static_cast<uint8_t>(col::Protocol::kSimple);
    col::emit(prof);
    col::Event t;
    t.kind = col::EventKind::kTransfer;
    t.id = c.id;
    t.comm = static_cast<int16_t>(comm);
    t.side = static_cast<uint8_t>(col::Side::kSend);
    t.peer = 0;
    t.bytes = 2048;
    t.t0 = c.t0 + 200;
    t.t1 = c.t0 + 400;
    t.channel = 1 + 1;
    col::emit(t);

    col::GpuActivity a[2];
    a[0].kind = col::GpuActivityKind::kKernel;
    a[0].name = "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE";
    a[0].start_ns = c.t0 + 100;
    a[0].end_ns = c.t0 + 900;
    a[0].device = 0;
    a[0].stream = 7;
    a[0].correlation_id = 42;
    a[0].collective_id = c.id;
    a[1].kind = col::GpuActivityKind::kMemcpy;
    a[1].start_ns = c.t0 + 1000;
    a[1].end_ns = c.t0 + 1100;
    a[1].bytes = 1 << 20;
    a[1].copy_kind = col::CopyKind::kDtoH;
    col::recordGpuActivities(a, 2);
    col::noteCommEnded(comm, c.t0 + 2000, "destroyed");
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const std::string file = onlyRankFile(dir);
  std::string err;
  auto r = st::TraceReader::open(file, &err);
  ASSERT_TRUE(r) << err;

  int gpu_rows = 0;
  ASSERT_TRUE(r->forEachCollectiveGpu([&](const st::CollectiveGpuRow& g) {
    ++gpu_rows;
    EXPECT_EQ(g.gpu_end_ns - g.gpu_start_ns, 800);
    EXPECT_EQ(g.algorithm, "ring");
    EXPECT_EQ(g.protocol, "Simple");
    EXPECT_EQ(g.channels, 2);
    EXPECT_EQ(g.group_id, 5);
    EXPECT_EQ(g.stream, 0x7f00);
    EXPECT_EQ(g.device, 0);
    return true;
  }, &err)) << err;
  EXPECT_EQ(gpu_rows, 1);

  int transfers = 0;
  ASSERT_TRUE(r->forEachTransfer([&](const st::TransferRow& t) {
    ++transfers;
    EXPECT_EQ(t.channel, 1);
    EXPECT_EQ(t.src_rank, 1);
    EXPECT_EQ(t.dst_rank, 0);
    return true;
  }, &err));
  EXPECT_EQ(transfers, 1);

  int kernels = 0, copies = 0;
  int64_t collective_id = -1;
  ASSERT_TRUE(r->forEachCollective([&](const st::CollectiveRow& c) {
    collective_id = c.id;
    EXPECT_EQ(c.comm, "nccl/0123456789abcdef");
    EXPECT_EQ(c.library, "nccl");
    return true;
  }, &err));
  ASSERT_TRUE(r->forEachGpuActivity([&](int32_t rank, const st::GpuActivityRow& a) {
    EXPECT_EQ(rank, 1);
    if (a.kind == "kernel") {
      ++kernels;
      EXPECT_EQ(a.name, "ncclDevKernel_AllReduce_Sum_f32_RING_SIMPLE");
      EXPECT_EQ(a.collective_id, collective_id);
      EXPECT_EQ(a.correlation_id, 42);
      EXPECT_EQ(a.stream, 7);
    } else if (a.kind == "memcpy") {
      ++copies;
      EXPECT_EQ(a.bytes, 1 << 20);
      EXPECT_EQ(a.copy_kind, "DtoH");
      EXPECT_EQ(a.collective_id, st::kNone);
    }
    return true;
  }, &err)) << err;
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(copies, 1);

  std::map<std::string, std::string> comms;
  ASSERT_TRUE(r->forEachCommunicator([&](int32_t rank, const st::CommunicatorRow& m) {
    EXPECT_EQ(rank, 1);
    EXPECT_EQ(m.library, "nccl");
    comms[std::string(m.comm)] = std::string(m.end_state) + "|" + std::string(m.parent) + "|" +
                                 std::string(m.topology);
    return true;
  }, &err)) << err;
  EXPECT_EQ(comms["nccl/0123456789abcdef"], "destroyed||ring 0: 0 1\nring 1: 1 0");
  EXPECT_EQ(comms["nccl/fedcba9876543210"], "aborted|nccl/0123456789abcdef|");
  EXPECT_EQ(r->meta()["gpu_activity_recorded"], "2");
  EXPECT_EQ(r->meta()["gpu_activity_dropped"], "0");
}

TEST(GpuInputs, ActivityQueueIsBoundedAndCountsDrops) {
  const std::string dir = makeTempDir("gpu-inputs");
  const int rc = inChild(dir, {{"RINGSIDE_BUFFER_MB", "1"}}, [] {  // 1 MiB cap: a quarter for queued GPU records
    if (!col::activate()) return 2;
    std::vector<col::GpuActivity> flood(50000);
    for (size_t i = 0; i < flood.size(); ++i) {
      flood[i].name = "compute_kernel";
      flood[i].start_ns = static_cast<int64_t>(i);
      flood[i].end_ns = static_cast<int64_t>(i) + 1;
    }
    col::recordGpuActivities(flood.data(), flood.size());
    const col::GpuCounters c = col::gpuCounters();
    if (c.activities_queued + c.activities_dropped != flood.size()) return 3;
    if (c.activities_dropped == 0) return 4;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::string err;
  auto r = st::TraceReader::open(onlyRankFile(dir), &err);
  ASSERT_TRUE(r) << err;
  const auto meta = r->meta();
  const int64_t recorded = std::stoll(meta.at("gpu_activity_recorded"));
  const int64_t dropped = std::stoll(meta.at("gpu_activity_dropped"));
  EXPECT_EQ(recorded + dropped, 50000);
  EXPECT_EQ(r->gpuActivityCount(), recorded);
}

TEST(GpuInputs, NothingIsQueuedWhileDormant) {
  const std::string dir = makeTempDir("gpu-inputs");
  const int rc = inChild(dir, {}, [] {
    col::GpuActivity a;
    col::recordGpuActivities(&a, 1);
    col::noteCommCreated(0, -1, 1);
    return col::gpuCounters().activities_queued == 0 ? 0 : 3;
  });
  ASSERT_EQ(rc, 0);
  DIR* d = opendir(dir.c_str());
  int files = 0;
  while (dirent* e = d != nullptr ? readdir(d) : nullptr) files += e->d_name[0] != '.';
  if (d != nullptr) closedir(d);
  EXPECT_EQ(files, 0);
}

}  // namespace
