#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "report/report_format.h"
#include "ringside/analyzer/collective_math.h"
#include "report/report_tables.h"

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
  a.op_buckets = {{"allreduce", "ringside-ring", 65536, 131072, 65536, 65536, 1, 40000, 40000,
                   40000, 40000, 40000, 40000, 1.5}};
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
                 "end_state missing", "", -1},
                {"warning", "straggler", "rank 1 is a straggler", "1/1", "", -1}};
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

// A thousand ranks make a report a person still reads: the per-rank table keeps the ranks that
// wait most and least, and says how many more there are (issue: 1,174 lines at 1,024 ranks).
TEST(ReportText, ManyRanksStayReadable) {
  analyzer::Analysis a = handBuilt();
  a.ranks.clear();
  for (int r = 0; r < 1024; ++r) {
    a.ranks.push_back({r, 5'000'000, 40000, r == 7 ? 0 : 2000 + r, false});
  }
  a.world_size = 1024;
  std::string text = formatReportText(a, ReportContext{});
  size_t lines = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  EXPECT_LE(lines, 150u) << text;
  EXPECT_NE(text.find("more ranks in between; every row is in the JSON and CSV reports"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\n     7  "), std::string::npos) << text;  // waits least: kept
  std::string json = formatReportJson(a, ReportContext{});
  EXPECT_NE(json.find("{\"rank\":1023,"), std::string::npos);  // JSON keeps every rank
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

// At 16,384 ranks a host name (host-1543) and a link (12351->6175) are wider than at 1,024: the
// headers wider than their cells give way first, the data keeps its columns.
TEST(ReportText, HeadersGiveWayBeforeData) {
  ReportTable t;
  t.title = "t";
  t.columns = {{"link", "link", false}, {"a", "a long header, wider than its cells"},
               {"b", "another long header"}, {"state", "state", false}};
  t.rows = {{"12351->6175", "1.0 s", "2", ""}, {"0->1", "10 ms", "3", ""}};
  std::string text = renderTableText(t, 40);
  EXPECT_NE(text.find("12351->6175"), std::string::npos) << text;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), 40u) << text;
  // An empty table with a note gives the note, not "(none)".
  ReportTable empty;
  empty.title = "e";
  empty.note = "left out for this many ranks";
  EXPECT_NE(renderTableText(empty, 100).find("(left out for this many ranks)"), std::string::npos);
}

TEST(ReportCsv, QuotesFields) {
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


// A diff as analyzer::diff() would build it: B faster at 4 KiB, slower at 1 MiB,
// and a size only A measured.
analyzer::Diff handBuiltDiff() {
  analyzer::Diff d;
  d.label_a = "ringside-ring";
  d.label_b = "ringside-tree";
  d.aligned = 6;
  d.unmatched_a = 2;
  analyzer::DiffRow fast{"allreduce", 4096, 8192, 3, 3, 180'000, 100'000, 1.8,
                         "ringside-tree 1.8x faster than ringside-ring at 4 KiB-8 KiB (allreduce)",
                         170'000, 190'000, 95'000, 110'000, 240'000, "", 4096, 4096};
  analyzer::DiffRow slow{"allreduce", 1 << 20, 2 << 20, 3, 3, 1'000'000, 2'500'000, 0.4,
                         "ringside-ring 2.5x faster than ringside-tree at 1 MiB-2 MiB (allreduce)",
                         900'000, 1'100'000, 2'400'000, 2'600'000, -4'500'000, "", 1 << 20, 1 << 20};
  analyzer::DiffRow only_a{"broadcast", 64, 128, 2, 0, 5'000, 0, 0, "", 5'000, 5'000, 0, 0, 0,
                           "", 64, 64};
  d.rows = {fast, slow, only_a};
  d.verdicts = {fast.verdict, slow.verdict};
  d.phases = {{"all-gather", 2'000'000, 3'000'000}, {"reduce-scatter", 1'000'000, 0}};
  d.links = {{0, 1, 1 << 20, 2 << 20, 400'000, 900'000}};
  return d;
}

TEST(DiffText, VerdictsFirstThenRowsPhasesLinks) {
  std::string text = formatDiffText(handBuiltDiff());
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), kReportWidth) << line;
  size_t verdict = text.find("ringside-tree 1.8x faster than ringside-ring at 4 KiB-8 KiB");
  ASSERT_NE(verdict, std::string::npos) << text;
  size_t rows = text.find("Collectives by op and size");
  ASSERT_NE(rows, std::string::npos);
  EXPECT_LT(verdict, rows);
  EXPECT_LT(rows, text.find("Phases"));
  EXPECT_LT(text.find("Phases"), text.find("Links"));
  EXPECT_NE(text.find("1.80x"), std::string::npos);
  EXPECT_NE(text.find("0.40x"), std::string::npos);
  EXPECT_NE(text.find("6 collectives aligned"), std::string::npos);
  EXPECT_NE(text.find("2 only in A"), std::string::npos);
  EXPECT_NE(text.find("0->1"), std::string::npos);
  // The size only A measured has no speed-up and no median for B.
  size_t bcast = text.find("broadcast");
  ASSERT_NE(bcast, std::string::npos);
  std::string bcast_line = text.substr(bcast, text.find('\n', bcast) - bcast);
  EXPECT_NE(bcast_line.find(" -"), std::string::npos) << bcast_line;
}

TEST(DiffText, NoVerdictsSaysSo) {
  analyzer::Diff d;
  d.no_verdict = "no op and size was measured on both sides";  // as diff() says it
  std::string text = formatDiffText(d);
  EXPECT_NE(text.find("none: no op and size"), std::string::npos) << text;
  EXPECT_NE(text.find("(none)"), std::string::npos);
}

TEST(DiffMarkdown, VerdictsAsListThenTables) {
  std::string md = formatDiffMarkdown(handBuiltDiff());
  size_t v = md.find("- ringside-tree 1.8x faster");
  ASSERT_NE(v, std::string::npos) << md;
  EXPECT_LT(md.find("## Verdicts"), v);
  EXPECT_LT(v, md.find("## Collectives by op and size"));
  EXPECT_NE(md.find("| ---: |"), std::string::npos);
  EXPECT_NE(md.find("## Phases"), std::string::npos);
  EXPECT_NE(md.find("## Links"), std::string::npos);
}

// Strings from a trace (a communicator, a host, the trace's own path) go to a terminal or a
// Markdown viewer: no escape sequence, C1 control or raw HTML gets through (issue 16).
constexpr const char* kHostile =
    "x\x1b]0;owned\x07\x1b[2J\r\xc2\x9b" "31m<script>alert(1)</script>&";

bool hasControl(const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) return true;
    const unsigned char next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0;
    if (c == 0xC2 && (next & 0xE0) == 0x80) return true;  // U+0080..U+009F
  }
  return false;
}

analyzer::Analysis hostile() {
  analyzer::Analysis a = handBuilt();
  a.collectives[0].comm = kHostile;
  a.phases[0].comm = kHostile;
  a.findings.push_back({"warning", "straggler", std::string("rank 1 on ") + kHostile, kHostile,
                        std::string("try ") + kHostile, -1});
  a.warnings.push_back(kHostile);
  return a;
}

// Sizes come from a trace; extreme ones once overflowed (found by fuzzing). One size or min-max
// of the actual sizes (analyzer::sizeText), never a bucket's edges.
TEST(ReportTables, SizeRangesOfExtremeSizesDoNotOverflow) {
  EXPECT_EQ(analyzer::sizeText(INT64_MAX, INT64_MAX), analyzer::sizeText(INT64_MAX, 0));
  EXPECT_FALSE(analyzer::sizeText(int64_t{1} << 62, INT64_MAX).empty());
  EXPECT_FALSE(analyzer::sizeText(INT64_MIN, INT64_MAX).empty());
  EXPECT_EQ(analyzer::sizeText(27136, 27136), "26.5 KiB");
  EXPECT_EQ(analyzer::sizeText(16384, 27136), "16.0 KiB-26.5 KiB");
}

TEST(ReportText, EscapesControlCharactersFromTheTrace) {
  const std::string text = formatReportText(hostile(), {std::string("t") + kHostile});
  EXPECT_FALSE(hasControl(text)) << text;
  EXPECT_NE(text.find("\\x1b]0;owned\\x07"), std::string::npos) << text;
  EXPECT_NE(text.find("\\u009b31m"), std::string::npos) << text;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) EXPECT_LE(line.size(), kReportWidth) << line;
}

TEST(ReportMarkdown, EscapesControlCharactersAndHtmlFromTheTrace) {
  const std::string md = formatReportMarkdown(hostile(), {std::string("t") + kHostile});
  EXPECT_FALSE(hasControl(md)) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_EQ(md.find("</script>"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;script>alert(1)&lt;/script>&amp;"), std::string::npos) << md;
}

TEST(ReportHtml, EscapesMarkupAndControlCharactersFromTheTrace) {
  const std::string html = formatReportHtml(hostile(), {std::string("t") + kHostile});
  EXPECT_FALSE(hasControl(html));
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
}

TEST(DiffText, EscapesControlCharactersFromTheTraces) {
  analyzer::Diff d = handBuiltDiff();
  d.verdicts.push_back(kHostile);
  d.label_a = kHostile;
  EXPECT_FALSE(hasControl(formatDiffText(d))) << formatDiffText(d);
  const std::string md = formatDiffMarkdown(d);
  EXPECT_FALSE(hasControl(md)) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
}

TEST(DiffJson, ParsesAndHasStableKeys) {
  analyzer::Diff d = handBuiltDiff();
  d.label_a = "ring \"a\"";
  std::string json = formatDiffJson(d);
  EXPECT_TRUE(JsonCheck(json).ok()) << json;
  for (const char* key :
       {"\"schema\":\"ringside-diff/1\"", "\"schema_version\":1", "\"label_a\":\"ring \\\"a\\\"\"",
        "\"label_b\":\"ringside-tree\"", "\"aligned\":6", "\"unmatched_a\":2", "\"unmatched_b\":0",
        "\"verdicts\":[\"ringside-tree 1.8x", "\"rows\":[", "\"size_lo\":4096", "\"size_hi\":8192",
        "\"count_a\":3", "\"median_a_ns\":180000", "\"median_b_ns\":100000", "\"speedup\":1.8",
        "\"speedup\":null", "\"verdict\":\"\"", "\"phases\":[", "\"total_a_ns\":2000000",
        "\"links\":[", "\"bytes_b\":2097152", "\"busy_b_ns\":900000"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_TRUE(JsonCheck(formatDiffJson(analyzer::Diff{})).ok());
}

TEST(DiffCsv, RowsTableWithRawNumbers) {
  std::string csv = formatDiffCsv(handBuiltDiff());
  std::istringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  EXPECT_EQ(header, "op,size_lo,size_hi,count_a,count_b,median_a_ns,p10_a_ns,p90_a_ns,median_b_ns,"
                    "p10_b_ns,p90_b_ns,speedup,at_stake_ns,verdict,note");
  std::getline(in, line);
  EXPECT_EQ(line.rfind("allreduce,4096,8192,3,3,180000,170000,190000,100000,95000,110000,1.8000,"
                       "240000,",
                       0),
            0u)
      << line;
  int lines = 1;
  while (std::getline(in, line)) ++lines;
  EXPECT_EQ(lines, 3);
  EXPECT_EQ(csv.find('\r'), std::string::npos);
  EXPECT_NE(csv.find("broadcast,64,128,2,0,5000,5000,5000,0,0,0,,0,"), std::string::npos) << csv;
}

TEST(DiffHtml, SelfContainedWithColoredRowsAndSpeedupChart) {
  std::string html = formatDiffHtml(handBuiltDiff());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  for (const char* external : {"http://", "https://", "<script", "src=", "<link"})
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  EXPECT_LT(html.find("class=\"verdicts\""), html.find("<table>"));
  EXPECT_NE(html.find("class=\"speedup-chart\""), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"faster\">"), std::string::npos);
  EXPECT_NE(html.find("<tr class=\"slower\">"), std::string::npos);
  // One bar per size bucket measured on both sides: green (faster) and red (slower).
  EXPECT_NE(html.find("fill=\"#2e7d32\""), std::string::npos);
  EXPECT_NE(html.find("fill=\"#c62828\""), std::string::npos);
  size_t bars = 0;
  for (size_t p = html.find("<title>ringside-"); p != std::string::npos;
       p = html.find("<title>ringside-", p + 1))
    ++bars;
  EXPECT_EQ(bars, 2u);
  analyzer::Diff tricky = handBuiltDiff();
  tricky.label_a = "<b>&";
  std::string esc = formatDiffHtml(tricky);
  EXPECT_EQ(esc.find("<b>&"), std::string::npos);
  EXPECT_NE(esc.find("&lt;b&gt;&amp;"), std::string::npos);
}

}  // namespace
}  // namespace ringside::cli

namespace ringside::cli {
namespace {

// handBuilt() with rank 0 on host "a", rank 1 on "b": one inter-host link, an idle host pair.
analyzer::Analysis twoHosts() {
  analyzer::Analysis a = handBuilt();
  a.hosts = {{"a", {0}, 40000, 0, 0, 65536, 0, 0}, {"b", {1}, 40000, 2000, 0, 0, 0, 65536}};
  a.ranks[0].host = 0;
  a.ranks[1].host = 1;
  a.links[0].scope = analyzer::LinkScope::kInterHost;
  a.host_traffic = {{{}, {65536, 1, 30000}}, {{}, {}}};
  analyzer::IdleLink idle;
  idle.where = "whole trace";
  idle.src_host = 1;
  idle.dst_host = 0;
  a.idle_links = {idle};
  return a;
}

// Two clock domains; rank 1's host is 5 us uncertain, more than the 2 us skew of the collective.
storage::ClockModel twoClocks() {
  storage::ClockModel m;
  storage::ClockDomain ref, other;
  ref.id = 0;
  ref.host = "a";
  ref.ranks = {0};
  other.id = 1;
  other.host = "b";
  other.ranks = {1};
  other.method = "evidence";
  other.offset_ns = -1'500'000;
  other.drift_ppm = 12.5;
  other.uncertainty_ns = 5000;
  other.bounds = 40;
  other.violated = 1;
  m.domains = {ref, other};
  m.rank_domain = {{0, 0}, {1, 1}};
  m.method = "evidence";
  m.bounds = 40;
  m.violated = 1;
  m.messages_checked = 20;
  m.messages_before_sent = 3;
  return m;
}

TEST(ReportHosts, SingleHostAddsNothing) {
  analyzer::Analysis a = handBuilt();
  a.hosts = {{"h", {0, 1}}};
  std::string text = formatReportText(a, {"t"});
  EXPECT_EQ(text.find("Hosts"), std::string::npos) << text;
  EXPECT_EQ(text.find("scope"), std::string::npos) << text;
  EXPECT_EQ(text.find("Clocks"), std::string::npos) << text;
  EXPECT_EQ(formatReportJson(a, {"t"}).find("\"clock\""), std::string::npos);
  EXPECT_TRUE(clockNotes(a).empty());
  EXPECT_EQ(formatReportHtml(a, {"t"}).find("host-matrix"), std::string::npos);
}

TEST(ReportHosts, GroupsRanksAndClassifiesLinks) {
  analyzer::Analysis a = twoHosts();
  std::string text = formatReportText(a, {"t"});
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), kReportWidth) << line;
  for (const char* want : {"Hosts", "Ranks (grouped by host)", "Traffic between hosts",
                           "inter-host", "b->a (hosts)", "scope"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  std::string md = formatReportMarkdown(a, {"t"});
  EXPECT_NE(md.find("## Hosts"), std::string::npos);
  std::string json = formatReportJson(a, {"t"});
  EXPECT_TRUE(JsonCheck(json).ok()) << json;
  for (const char* key : {"\"hosts\":[{\"name\":\"a\",\"ranks\":[0]", "\"scope\":\"inter-host\"",
                          "\"host\":\"b\"", "\"host_traffic\":{\"bytes\":[[0,65536],[0,0]]",
                          "\"src\":null,\"dst\":null", "\"src_host\":\"b\",\"dst_host\":\"a\""}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_NE(formatReportHtml(a, {"t"}).find("class=\"host-matrix\""), std::string::npos);
  ReportTable t;
  ASSERT_TRUE(buildReportTable(a, "links", Units::kRaw, 0, &t));
  EXPECT_EQ(renderTableCsv(t).find("src,dst,bytes"), 0u);
  EXPECT_NE(renderTableCsv(t).find(",inter-host\n"), std::string::npos) << renderTableCsv(t);
  ASSERT_TRUE(buildReportTable(a, "hosts", Units::kRaw, 0, &t));
  EXPECT_NE(renderTableCsv(t).find("b,1,40000,2000,0,0,0,65536"), std::string::npos)
      << renderTableCsv(t);
}

TEST(ReportHosts, ClockSectionWithTwoDomains) {
  analyzer::Analysis a = twoHosts();
  a.clock = twoClocks();
  std::string text = formatReportText(a, {"t"});
  for (const char* want : {"Clocks", "evidence", "-1.50 ms", "±5.0 us", "12.50",
                           "3 of 20 messages between domains still appear to arrive before",
                           "warning: the clock uncertainty ±5.0 us is larger than the median "
                           "arrival skew (2.0 us)"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  EXPECT_LT(text.find("Clocks"), text.find("Findings"));
  std::string json = formatReportJson(a, {"t"});
  EXPECT_TRUE(JsonCheck(json).ok()) << json;
  for (const char* key : {"\"clock\":{\"method\":\"evidence\"", "\"max_uncertainty_ns\":5000",
                          "\"messages_before_sent\":3", "\"offset_ns\":-1500000"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_NE(formatReportHtml(a, {"t"}).find("messages between domains"), std::string::npos);
  // An uncertainty below the skew and the durations: no warning.
  a.clock.domains[1].uncertainty_ns = 500;
  for (const std::string& line : clockNotes(a)) EXPECT_EQ(line.find("warning"), std::string::npos);
}

// The clock fit's tree (schema 7): the domain each one was aligned through, "via" for a person
// ("-" for the reference and traces merged before schema 7), parent and its bound in CSV.
TEST(ReportHosts, ClockTableShowsTheTreeOfDomains) {
  analyzer::Analysis a = twoHosts();
  a.clock = twoClocks();
  a.clock.domains[1].parent = 0;
  a.clock.domains[1].parent_uncertainty_ns = 4200;
  ReportTable human, raw;
  ASSERT_TRUE(buildReportTable(a, "clocks", Units::kHuman, 0, &human));
  ASSERT_TRUE(buildReportTable(a, "clocks", Units::kRaw, 0, &raw));
  auto column = [](const ReportTable& t, const std::string& key) {
    for (size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].key == key) return static_cast<int>(i);
    return -1;
  };
  const int via = column(human, "parent");
  ASSERT_GE(via, 0);
  EXPECT_EQ(human.columns[static_cast<size_t>(via)].title, "via");
  EXPECT_EQ(column(human, "parent_uncertainty_ns"), -1);  // the text stays within 100 columns
  ASSERT_EQ(human.rows.size(), 2u);
  EXPECT_EQ(human.rows[0][static_cast<size_t>(via)], "-");
  EXPECT_EQ(human.rows[1][static_cast<size_t>(via)], "0");
  const int parent = column(raw, "parent"), bound = column(raw, "parent_uncertainty_ns");
  ASSERT_GE(parent, 0);
  ASSERT_GE(bound, 0);
  for (const auto& row : raw.rows) ASSERT_EQ(row.size(), raw.columns.size());
  EXPECT_EQ(raw.rows[0][static_cast<size_t>(parent)], "-1");
  EXPECT_EQ(raw.rows[1][static_cast<size_t>(parent)], "0");
  EXPECT_EQ(raw.rows[1][static_cast<size_t>(bound)], "4200");
  std::string text = formatReportText(a, {"t"});
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) EXPECT_LE(line.size(), kReportWidth) << line;
}

}  // namespace
}  // namespace ringside::cli

namespace ringside::cli {
namespace {

// A report keeps only the phase rows it prints (issue 27: one row per instance, rank and phase
// was 1.6 GB at 16,384 ranks): text, md and csv none (they print the totals), JSON its capped
// rows, HTML the ranks its phase timeline draws.
TEST(ReportPhaseRows, EachFormatKeepsWhatItPrints) {
  for (const char* format : {"text", "md", "csv"}) {
    const analyzer::PhaseRowsKept keep = reportPhaseRows(format, kJsonCollectiveCap);
    EXPECT_EQ(keep.first, 0) << format;
    EXPECT_EQ(keep.ranks_below, 0) << format;
  }
  const analyzer::PhaseRowsKept json = reportPhaseRows("json", kJsonCollectiveCap);
  EXPECT_EQ(json.first, static_cast<int64_t>(kJsonCollectiveCap * kJsonPhasesPerCollective));
  EXPECT_EQ(json.ranks_below, 0);
  EXPECT_EQ(reportPhaseRows("json", 0).first, -1);  // no cap: every row
  const analyzer::PhaseRowsKept html = reportPhaseRows("html", kJsonCollectiveCap);
  EXPECT_EQ(html.first, 0);
  EXPECT_EQ(html.ranks_below, kMaxDrawnRanks);
}

// The rows an analysis left out count in the totals and in phases_truncated.
TEST(ReportPhaseRows, LeftOutRowsCountInTotalsAndTruncation) {
  analyzer::Analysis a = handBuilt();
  a.phases_left_out = {{"reduce-scatter", 3, 30000, 500, 15000, 0},
                       {"all-gather", 2, 8000, 0, 5000, 2}};
  const std::vector<PhaseTotal> t = phaseTotals(a);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].phase, "reduce-scatter");  // most time first
  EXPECT_EQ(t[0].instances, 4);
  EXPECT_EQ(t[0].total_ns, 50000);
  EXPECT_EQ(t[0].max_ns, 20000);
  EXPECT_EQ(t[0].wait_ns, 500 + a.phases[0].wait_ns);
  EXPECT_EQ(t[1].inferred, 2);
  // 1 row kept of 6: the JSON shows the one it has and says the list is cut.
  EXPECT_NE(formatReportJson(a, ReportContext{}).find("\"phases_truncated\":true"),
            std::string::npos);
  a.phases_left_out.clear();
  EXPECT_NE(formatReportJson(a, ReportContext{}).find("\"phases_truncated\":false"),
            std::string::npos);
}

}  // namespace
}  // namespace ringside::cli
