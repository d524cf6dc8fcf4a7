#include <gtest/gtest.h>

#include <sstream>

#include "report_format.h"

namespace ringside::cli {
namespace {

analyzer::Analysis handBuilt() {
  analyzer::Analysis a;
  a.world_size = 3;
  a.ranks_present = {0, 1};
  a.cut_off_ranks = {1};
  a.missing_ranks = {2};
  a.start_ns = 1000;
  a.end_ns = 5'001'000;
  a.bin_ns = 1'000'000;
  analyzer::CollectiveInstance c;
  c.comm = "world,\"odd\"";
  c.seq = 0;
  c.op = "allreduce";
  c.library = "ringside-ring";
  c.bytes = 65536;
  c.ranks = 2;
  c.first_start_ns = 1000;
  c.arrival_skew_ns = 2000;
  c.straggler_rank = 1;
  c.duration_ns = 40000;
  c.busbw_gbps = 1.5;
  a.collectives = {c};
  a.op_buckets = {{"allreduce", "ringside-ring", 65536, 131072, 1, 40000, 40000, 40000, 40000,
                   40000, 1.5}};
  analyzer::LinkStats l;
  l.src = 0;
  l.dst = 1;
  l.bytes = 65536;
  l.busy_ns = 30000;
  l.gbps_per_bin = {0.1, 0.5, 0, 0, 0};
  a.links = {l};
  a.traffic = {{0, 65536, 0}, {0, 0, 0}, {0, 0, 0}};
  a.idle_links = {{1, 0, "whole trace", -1}};
  a.phases = {{c.comm, 0, 0, "reduce-scatter", 1000, 21000, 2, 1, 9000, false}};
  a.ranks = {{0, 5'000'000, 40000, 0, false}, {1, 4'000'000, 40000, 2000, true}};
  a.findings = {{"problem", "cut-off", "rank 1 was cut off: its trace ends before the job did, "
                 "so everything after its last flush is missing from this report and more words",
                 "end_state missing"},
                {"warning", "straggler", "rank 1 is a straggler", "1/1"}};
  a.warnings = {"a warning with \"quotes\""};
  return a;
}

TEST(ReportText, FindingsFirstAndFitsHundredColumns) {
  std::string text = formatReportText(handBuilt(), {"t.sqlite"});
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), kReportWidth) << line;
  size_t findings = text.find("Findings");
  ASSERT_NE(findings, std::string::npos);
  EXPECT_LT(findings, text.find("Collectives by op and size"));
  EXPECT_LT(text.find("rank 1 was cut off"), text.find("rank 1 is a straggler"));
  EXPECT_NE(text.find("CUT OFF"), std::string::npos);
  EXPECT_NE(text.find("MISSING"), std::string::npos);
}

TEST(ReportText, NarrowsWideColumns) {
  ReportTable t;
  t.title = "t";
  t.columns = {{"a", "a", false}, {"b", "b"}};
  t.rows = {{std::string(300, 'x'), "1"}};
  std::string text = renderTableText(t, 100);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), 100u);
}

TEST(ReportCsv, QuotesFields) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
  ReportTable t;
  ASSERT_TRUE(buildReportTable(handBuilt(), "collectives", Units::kRaw, 0, &t));
  std::string csv = renderTableCsv(t);
  EXPECT_EQ(csv.rfind("comm,seq,op,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\"world,\"\"odd\"\"\",0,allreduce"), std::string::npos) << csv;
  for (const std::string& id : csvTableIds()) EXPECT_TRUE(buildReportTable(handBuilt(), id, Units::kRaw, 0, &t));
  EXPECT_FALSE(buildReportTable(handBuilt(), "nope", Units::kRaw, 0, &t));
}

TEST(ReportMarkdown, HasTables) {
  std::string md = formatReportMarkdown(handBuilt(), {"t.sqlite"});
  EXPECT_NE(md.find("## Findings"), std::string::npos);
  EXPECT_NE(md.find("| op | library |"), std::string::npos);
  EXPECT_LT(md.find("## Findings"), md.find("## Collectives"));
}

// A small strict JSON checker: true when `s` is one valid JSON value.
class JsonCheck {
 public:
  explicit JsonCheck(const std::string& s) : s_(s) {}
  bool ok() {
    ws();
    if (!value()) return false;
    ws();
    return i_ == s_.size();
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool lit(const char* w) {
    std::string_view v(w);
    if (s_.compare(i_, v.size(), v) != 0) return false;
    i_ += v.size();
    return true;
  }
  bool str() {
    if (s_[i_] != '"') return false;
    for (++i_; i_ < s_.size(); ++i_) {
      unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') { ++i_; return true; }
      if (c < 0x20) return false;
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) return false;
        if (s_[i_] == 'u') {
          for (int k = 0; k < 4; ++k)
            if (++i_ >= s_.size() || !isxdigit(static_cast<unsigned char>(s_[i_]))) return false;
        } else if (std::string_view("\"\\/bfnrt").find(s_[i_]) == std::string_view::npos) {
          return false;
        }
      }
    }
    return false;
  }
  bool number() {
    size_t start = i_;
    if (s_[i_] == '-') ++i_;
    while (i_ < s_.size() && (isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                              s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-'))
      ++i_;
    return i_ > start;
  }
  bool value() {
    if (i_ >= s_.size()) return false;
    char c = s_[i_];
    if (c == '{' || c == '[') {
      char close = c == '{' ? '}' : ']';
      ++i_;
      ws();
      if (i_ < s_.size() && s_[i_] == close) { ++i_; return true; }
      while (true) {
        ws();
        if (c == '{') {
          if (i_ >= s_.size() || !str()) return false;
          ws();
          if (i_ >= s_.size() || s_[i_++] != ':') return false;
          ws();
        }
        if (!value()) return false;
        ws();
        if (i_ >= s_.size()) return false;
        if (s_[i_] == ',') { ++i_; continue; }
        if (s_[i_] == close) { ++i_; return true; }
        return false;
      }
    }
    if (c == '"') return str();
    if (c == 't') return lit("true");
    if (c == 'f') return lit("false");
    if (c == 'n') return lit("null");
    return number();
  }
  const std::string& s_;
  size_t i_ = 0;
};

TEST(ReportJson, ParsesAndHasStableKeys) {
  std::string json = formatReportJson(handBuilt(), {"t\"1\".sqlite"});
  EXPECT_TRUE(JsonCheck(json).ok()) << json;
  for (const char* key : {"\"schema\":\"ringside-report/1\"", "\"schema_version\":1", "\"trace\"",
                          "\"world_size\":3", "\"ranks_present\":[0,1]", "\"cut_off_ranks\":[1]",
                          "\"missing_ranks\":[2]", "\"collectives\"", "\"op_buckets\"", "\"links\"",
                          "\"traffic\"", "\"idle_links\"", "\"phases\"", "\"stragglers\"",
                          "\"ranks\"", "\"model\"", "\"findings\"", "\"warnings\"",
                          "\"collectives_truncated\":false"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key;
  }
  ReportContext capped{"t", 0};
  capped.json_collective_cap = 0;  // 0 = no cap
  EXPECT_NE(formatReportJson(handBuilt(), capped).find("\"collectives_truncated\":false"),
            std::string::npos);
  EXPECT_FALSE(JsonCheck("{\"a\":}").ok());
  EXPECT_FALSE(JsonCheck("[1,]").ok());
}

}  // namespace
}  // namespace ringside::cli

namespace ringside::cli {
namespace {

TEST(ReportHtml, SelfContainedWithCharts) {
  std::string html = formatReportHtml(handBuilt(), {"<t>.sqlite"});
  for (const char* part : {"class=\"phase-timeline\"", "class=\"link-heatmap\"", "class=\"traffic-matrix\"",
                           "class=\"topology\"", "class=\"busbw\"", "stroke-dasharray", "&lt;t&gt;.sqlite"})
    EXPECT_NE(html.find(part), std::string::npos) << part;
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_LT(html.find("Findings"), html.find("phase-timeline"));
}

}  // namespace
}  // namespace ringside::cli
