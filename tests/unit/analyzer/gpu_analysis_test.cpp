// Golden analyses of synthetic NCCL traces with GPU rows: collectives timed on
// the GPU (NCCL's own times, else the kernels linked by external correlation),
// per-GPU busy share and comm/compute overlap, channel traffic, GPU findings.
// Every expected number is worked out by hand in the comments.
#include <gtest/gtest.h>

#include "ringside/analyzer/analysis.h"
#include "trace_builder.h"

namespace ringside::analyzer {
namespace {

using testing_util::TraceBuilder;

const Finding* findRule(const Analysis& a, const std::string& rule) {
  for (const Finding& f : a.findings)
    if (f.rule == rule) return &f;
  return nullptr;
}

bool analyzeTrace(const std::string& path, Analysis* a) {
  std::string error;
  auto reader = storage::TraceReader::open(path, &error);
  EXPECT_TRUE(reader) << error;
  if (!reader) return false;
  bool ok = analyze(*reader, AnalysisOptions{}, a, &error);
  EXPECT_TRUE(ok) << error;
  return ok;
}

// Two ranks, two NCCL all-reduces of 1 MiB. Rank 0 on GPU 0 computes beside
// its NCCL kernels; rank 1 on GPU 1 does not.
void buildNcclStep(TraceBuilder* t) {
  const int64_t kMiB = 1 << 20;
  // Host times: the calls return once enqueued (100 ns); rank 1 enters seq 0 last.
  t->colls.push_back({1, 0, 0, "allreduce", "nccl", kMiB, 1000, 1100, "nccl/x"});
  t->colls.push_back({1, 1, 0, "allreduce", "nccl", kMiB, 1500, 1600, "nccl/x"});
  t->colls.push_back({2, 0, 1, "allreduce", "nccl", kMiB, 20000, 20100, "nccl/x"});
  t->colls.push_back({2, 1, 1, "allreduce", "nccl", kMiB, 20050, 20150, "nccl/x"});
  // Rank 0, GPU 0: NCCL kernels [2000,12000] and [30000,40000] (20000 ns);
  // compute [0,5000], [8000,9000], [35000,50000]; overlap 3000 + 1000 + 5000 = 9000.
  t->gpu.push_back({0, "kernel", "ncclDevKernel_AllReduce", 2000, 12000, 0, 1});
  t->gpu.push_back({0, "kernel", "ncclDevKernel_AllReduce", 30000, 40000, 0, 2});
  t->gpu.push_back({0, "kernel", "gemm", 0, 5000, 0});
  t->gpu.push_back({0, "kernel", "gemm", 8000, 9000, 0});
  t->gpu.push_back({0, "kernel", "gemm", 35000, 50000, 0});
  t->gpu.push_back({0, "memcpy", "", 50000, 52000, 0, -1, 4096, "HtoD"});
  t->gpu.push_back({0, "memcpy", "", 52000, 53000, 0, -1, 1024, "DtoH"});
  t->gpu.push_back({0, "memset", "", 53000, 53500, 0, -1, 512});
  // Rank 1, GPU 1: NCCL kernels [3000,12000] and [30500,40500]; NCCL's own GPU
  // times for seq 1 ([31000,41000]) win over its kernel's span.
  t->gpu.push_back({1, "kernel", "ncclDevKernel_AllReduce", 3000, 12000, 1, 1});
  t->gpu.push_back({1, "kernel", "ncclDevKernel_AllReduce", 30500, 40500, 1, 2});
  t->gpu.push_back({1, "kernel", "relu", 12000, 13000, 1});
  t->gpu.push_back({1, "sync", "stream_synchronize", 41000, 42000, -1});
  t->gpu.push_back({1, "nvtx", "step", 0, 42000, -1});
  t->coll_gpu.push_back({1, 2, 31000, 41000});
  // Channels: rank 0 -> 1 on channels 0 (2 x 1000 B) and 1 (3000 B); rank 1 -> 0 on 2.
  t->xfers.push_back({1, 0, 1, "send", 1000, 2000, 3000, "", -1, 0});
  t->xfers.push_back({1, 0, 1, "send", 1000, 3000, 4000, "", -1, 0});
  t->xfers.push_back({1, 0, 1, "send", 3000, 2000, 5000, "", -1, 1});
  t->xfers.push_back({1, 0, 1, "recv", 1000, 2000, 3100, "", -1, 0});  // the send rows count
  t->xfers.push_back({1, 1, 0, "send", 500, 3000, 4000, "", -1, 2});
  t->meta[1]["cupti_records_dropped"] = "7";
}

TEST(GpuAnalysis, NcclCollectivesTimedOnTheGpu) {
  TraceBuilder t(2);
  buildNcclStep(&t);
  Analysis a;
  ASSERT_TRUE(analyzeTrace(t.build(), &a));
  ASSERT_EQ(a.collectives.size(), 2u);
  const CollectiveInstance& c0 = a.collectives[0];
  // seq 0: every rank's kernel is running from max(2000, 3000) until max(12000, 12000).
  EXPECT_TRUE(c0.gpu_timed);
  EXPECT_EQ(c0.gpu_ranks, 2);
  EXPECT_EQ(c0.gpu_start_ns, 3000);
  EXPECT_EQ(c0.gpu_end_ns, 12000);
  EXPECT_EQ(c0.duration_ns, 9000);
  EXPECT_DOUBLE_EQ(c0.algbw_gbps, 1048576.0 / 9000.0);
  EXPECT_DOUBLE_EQ(c0.busbw_gbps, 1048576.0 / 9000.0 * 2.0 * (2 - 1) / 2);
  // Stragglers stay a host-side matter: rank 1 entered 500 ns after rank 0.
  EXPECT_EQ(c0.arrival_skew_ns, 500);
  EXPECT_EQ(c0.straggler_rank, 1);
  // seq 1: rank 0's kernel [30000,40000], rank 1's NCCL times [31000,41000].
  const CollectiveInstance& c1 = a.collectives[1];
  EXPECT_EQ(c1.gpu_start_ns, 31000);
  EXPECT_EQ(c1.gpu_end_ns, 41000);
  EXPECT_EQ(c1.duration_ns, 10000);
  EXPECT_DOUBLE_EQ(c1.busbw_gbps, 1048576.0 / 10000.0);
  EXPECT_EQ(a.gpu_activities, 13);
}

TEST(GpuAnalysis, BusyShareAndOverlapPerGpu) {
  TraceBuilder t(2);
  buildNcclStep(&t);
  Analysis a;
  ASSERT_TRUE(analyzeTrace(t.build(), &a));
  ASSERT_EQ(a.gpus.size(), 2u);
  const GpuStats& g0 = a.gpus[0];
  EXPECT_EQ(g0.rank, 0);
  EXPECT_EQ(g0.device, 0);
  EXPECT_EQ(g0.kernels, 5);
  EXPECT_EQ(g0.comm_kernels, 2);
  EXPECT_EQ(g0.comm_kernel_ns, 20000);
  EXPECT_EQ(g0.compute_kernel_ns, 5000 + 1000 + 15000);
  EXPECT_EQ(g0.overlap_ns, 9000);
  EXPECT_DOUBLE_EQ(g0.overlap_share, 0.45);
  EXPECT_EQ(g0.exposed_comm_ns, 11000);
  // Busy: [0,12000] and [30000,53500]; span [0,53500].
  EXPECT_EQ(g0.span_ns, 53500);
  EXPECT_EQ(g0.busy_ns, 12000 + 23500);
  EXPECT_DOUBLE_EQ(g0.busy_share, 35500.0 / 53500.0);
  EXPECT_EQ(g0.memcpys, 2);
  EXPECT_EQ(g0.memcpy_htod_bytes, 4096);
  EXPECT_EQ(g0.memcpy_dtoh_bytes, 1024);
  EXPECT_EQ(g0.memsets, 1);
  EXPECT_EQ(g0.memset_bytes, 512);
  const GpuStats& g1 = a.gpus[1];
  EXPECT_EQ(g1.rank, 1);
  EXPECT_EQ(g1.device, 1);
  EXPECT_EQ(g1.comm_kernel_ns, 9000 + 10000);
  EXPECT_EQ(g1.overlap_ns, 0);  // relu starts as the first NCCL kernel ends
  EXPECT_DOUBLE_EQ(g1.overlap_share, 0.0);
  EXPECT_EQ(g1.span_ns, 40500 - 3000);
  EXPECT_EQ(g1.busy_ns, 10000 + 10000);
  EXPECT_EQ(g1.sync_ns, 1000);  // no device on the sync row: the rank's only GPU
  EXPECT_EQ(g1.nvtx_ranges, 1);

  // Only rank 1 hides nothing: one finding, with its numbers.
  const Finding* f = findRule(a, "low-overlap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, "warning");
  EXPECT_EQ(f->message, "NCCL kernels overlap compute for only 0% of their time on rank(s) 1: 0.02 ms exposed");
  EXPECT_EQ(f->evidence, "rank 1 GPU 1: 0% of 0.02 ms");
  const Finding* d = findRule(a, "dropped-gpu-records");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->message, "7 GPU activity records dropped (buffers full)");
  EXPECT_EQ(findRule(a, "cupti-busy"), nullptr);
}

TEST(GpuAnalysis, ChannelTrafficFromSendRows) {
  TraceBuilder t(2);
  buildNcclStep(&t);
  Analysis a;
  ASSERT_TRUE(analyzeTrace(t.build(), &a));
  ASSERT_EQ(a.channel_traffic.size(), 3u);
  auto expect = [&](size_t i, int src, int dst, int ch, int64_t bytes, int64_t msgs) {
    SCOPED_TRACE(i);
    EXPECT_EQ(a.channel_traffic[i].src, src);
    EXPECT_EQ(a.channel_traffic[i].dst, dst);
    EXPECT_EQ(a.channel_traffic[i].channel, ch);
    EXPECT_EQ(a.channel_traffic[i].bytes, bytes);
    EXPECT_EQ(a.channel_traffic[i].messages, msgs);
  };
  expect(0, 0, 1, 0, 2000, 2);
  expect(1, 0, 1, 1, 3000, 1);
  expect(2, 1, 0, 2, 500, 1);
  EXPECT_EQ(a.traffic[0][1], 5000);
  EXPECT_EQ(a.traffic[1][0], 500);
}

// CUPTI held by a profiler on rank 0: NCCL calls are there, GPU rows are not;
// the collectives keep their host times.
TEST(GpuAnalysis, CuptiBusyIsAFindingAndHostTimesStay) {
  TraceBuilder t(2);
  t.colls.push_back({1, 0, 0, "allreduce", "nccl", 4096, 1000, 2000, "nccl/x"});
  t.colls.push_back({1, 1, 0, "allreduce", "nccl", 4096, 1000, 2000, "nccl/x"});
  t.meta[0]["cupti"] = "busy: cuptiSubscribe: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
  t.meta[1]["cupti"] = "recording (CUPTI 130001, libcupti.so.13)";
  Analysis a;
  ASSERT_TRUE(analyzeTrace(t.build(), &a));
  ASSERT_EQ(a.collectives.size(), 1u);
  EXPECT_FALSE(a.collectives[0].gpu_timed);
  EXPECT_EQ(a.collectives[0].duration_ns, 1000);
  EXPECT_TRUE(a.gpus.empty());
  const Finding* f = findRule(a, "cupti-busy");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->message, "rank(s) 0: no GPU activity, another tool held CUPTI (NCCL calls still recorded)");
}

// Only some ranks have GPU times: the instance keeps its host duration.
TEST(GpuAnalysis, PartialGpuTimesKeepHostDuration) {
  TraceBuilder t(2);
  t.colls.push_back({1, 0, 0, "allreduce", "nccl", 4096, 1000, 2000, "nccl/x"});
  t.colls.push_back({1, 1, 0, "allreduce", "nccl", 4096, 1000, 2500, "nccl/x"});
  t.gpu.push_back({0, "kernel", "k", 1200, 1800, 0, 1});
  Analysis a;
  ASSERT_TRUE(analyzeTrace(t.build(), &a));
  ASSERT_EQ(a.collectives.size(), 1u);
  EXPECT_EQ(a.collectives[0].gpu_ranks, 1);
  EXPECT_FALSE(a.collectives[0].gpu_timed);
  EXPECT_EQ(a.collectives[0].duration_ns, 1500);
}

}  // namespace
}  // namespace ringside::analyzer
