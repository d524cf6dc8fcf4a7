// The GPU parts of `ringside report` (hand-built analyses): the GPU and
// channel tables in every format, only when the trace has GPU data.
#include <gtest/gtest.h>

#include <sstream>

#include "report/report_format.h"

namespace ringside::cli {
namespace {

analyzer::Analysis withGpus() {
  analyzer::Analysis a;
  a.world_size = 2;
  a.ranks_present = {0, 1};
  a.start_ns = 0;
  a.end_ns = 53500;
  analyzer::CollectiveInstance c;
  c.comm = "nccl/x";
  c.op = "allreduce";
  c.library = "nccl";
  c.bytes = 1 << 20;
  c.ranks = 2;
  c.gpu_start_ns = 3000;
  c.gpu_end_ns = 12000;
  c.gpu_ranks = 2;
  c.gpu_timed = true;
  c.duration_ns = 9000;
  a.collectives = {c};
  analyzer::GpuStats g;
  g.rank = 0;
  g.device = 0;
  g.span_ns = 53500;
  g.busy_ns = 35500;
  g.busy_share = 35500.0 / 53500.0;
  g.kernels = 5;
  g.comm_kernels = 2;
  g.comm_kernel_ns = 20000;
  g.compute_kernel_ns = 21000;
  g.overlap_ns = 9000;
  g.overlap_share = 0.45;
  g.exposed_comm_ns = 11000;
  g.memcpy_htod_bytes = 4096;
  a.gpus = {g};
  a.channel_traffic = {{0, 1, 0, 2000, 2}, {0, 1, 1, 3000, 1}};
  a.gpu_activities = 13;
  return a;
}

TEST(GpuReport, TextHasGpuTablesWithinHundredColumns) {
  std::string text = formatReportText(withGpus(), {"t.sqlite"});
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), kReportWidth) << line;
  EXPECT_NE(text.find("GPUs (CUPTI"), std::string::npos);
  EXPECT_NE(text.find("45.0%"), std::string::npos);  // overlapped share
  EXPECT_NE(text.find("Traffic per link and NCCL channel"), std::string::npos);
}

TEST(GpuReport, NoGpuSectionsWithoutGpuData) {
  analyzer::Analysis a = withGpus();
  a.gpus.clear();
  a.channel_traffic.clear();
  std::string text = formatReportText(a, {"t.sqlite"});
  EXPECT_EQ(text.find("GPUs (CUPTI"), std::string::npos);
  EXPECT_EQ(text.find("NCCL channel"), std::string::npos);
  std::string md = formatReportMarkdown(a, {"t.sqlite"});
  EXPECT_EQ(md.find("GPUs (CUPTI"), std::string::npos);
}

TEST(GpuReport, MarkdownAndHtmlHaveTheTables) {
  EXPECT_NE(formatReportMarkdown(withGpus(), {"t.sqlite"}).find("GPUs (CUPTI"), std::string::npos);
  std::string html = formatReportHtml(withGpus(), {"t.sqlite"});
  EXPECT_NE(html.find("GPUs (CUPTI"), std::string::npos);
  EXPECT_NE(html.find("Traffic per link and NCCL channel"), std::string::npos);
}

TEST(GpuReport, JsonKeys) {
  std::string json = formatReportJson(withGpus(), {"t.sqlite"});
  for (const char* key :
       {"\"gpu_start_ns\":3000", "\"gpu_end_ns\":12000", "\"gpu_ranks\":2", "\"gpu_timed\":true",
        "\"gpus\":[{\"rank\":0,\"device\":0,\"span_ns\":53500,\"busy_ns\":35500",
        "\"overlap_ns\":9000,\"overlap_share\":0.45,\"exposed_comm_ns\":11000", "\"gpu_activities\":13",
        "\"channel_traffic\":[{\"src\":0,\"dst\":1,\"channel\":0,\"bytes\":2000,\"messages\":2}"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  analyzer::Analysis a = withGpus();
  a.collectives[0].gpu_start_ns = -1;
  a.gpus[0].overlap_share = -1;
  json = formatReportJson(a, {"t.sqlite"});
  EXPECT_NE(json.find("\"gpu_start_ns\":null"), std::string::npos);
  EXPECT_NE(json.find("\"overlap_share\":null"), std::string::npos);
}

TEST(GpuReport, CsvTables) {
  ReportTable t;
  ASSERT_TRUE(buildReportTable(withGpus(), "gpus", Units::kRaw, 0, &t));
  std::string csv = renderTableCsv(t);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "rank,device,span_ns,busy_share,kernels,comm_kernel_ns,overlap_share,exposed_comm_ns,"
            "compute_kernel_ns,memcpy_htod_bytes,memcpy_dtoh_bytes,sync_ns");
  EXPECT_NE(csv.find("0,0,53500,0.663551,5,20000,0.450000,11000,21000,4096,0,0"), std::string::npos) << csv;
  ASSERT_TRUE(buildReportTable(withGpus(), "channels", Units::kRaw, 0, &t));
  EXPECT_EQ(renderTableCsv(t), "src,dst,channel,bytes,messages\n0,1,0,2000,2\n0,1,1,3000,1\n");
}

}  // namespace
}  // namespace ringside::cli
