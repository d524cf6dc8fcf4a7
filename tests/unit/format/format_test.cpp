#include <gtest/gtest.h>

#include <cstdint>

#include "ringside/format/csv.h"
#include "ringside/format/json.h"
#include "ringside/format/text.h"
#include "ringside/format/units.h"

namespace ringside::format {
namespace {

TEST(Units, Bytes) {
  EXPECT_EQ(bytes(0), "0 B");
  EXPECT_EQ(bytes(1023), "1023 B");
  EXPECT_EQ(bytes(1024), "1.0 KiB");
  EXPECT_EQ(bytes(1536), "1.5 KiB");
  EXPECT_EQ(bytes(150 * 1024), "150 KiB");
  EXPECT_EQ(bytes(int64_t{1} << 20), "1.0 MiB");
  EXPECT_EQ(bytes(int64_t{3} << 30), "3.0 GiB");
  EXPECT_EQ(bytes(int64_t{5} << 40), "5.0 TiB");
}

TEST(Units, BytesWhole) {
  EXPECT_EQ(bytesWhole(0), "0 B");
  EXPECT_EQ(bytesWhole(1536), "1536 B");
  EXPECT_EQ(bytesWhole(4096), "4 KiB");
  EXPECT_EQ(bytesWhole(int64_t{1} << 20), "1 MiB");
  EXPECT_EQ(bytesWhole(int64_t{1} << 50), "1024 TiB");
}

TEST(Units, BytesWholeOrTenths) {
  EXPECT_EQ(bytesWholeOrTenths(4), "4 B");
  EXPECT_EQ(bytesWholeOrTenths(4096), "4 KiB");
  EXPECT_EQ(bytesWholeOrTenths(1536), "1.5 KiB");
  EXPECT_EQ(bytesWholeOrTenths(uint64_t{3} << 20), "3 MiB");
  EXPECT_EQ(bytesWholeOrTenths((uint64_t{3} << 20) + 512 * 1024), "3.5 MiB");
  // The size column of `ringside bench` (its formatByteSize before).
  EXPECT_EQ(bytesWholeOrTenths(100), "100 B");
  EXPECT_EQ(bytesWholeOrTenths(uint64_t{64} << 20), "64 MiB");
  EXPECT_EQ(bytesWholeOrTenths(uint64_t{1} << 30), "1 GiB");
  EXPECT_EQ(bytesWholeOrTenths(uint64_t{1536} << 10), "1.5 MiB");
  EXPECT_EQ(bytesWholeOrTenths(1000), "1000 B");
}

TEST(Units, BytesSignificant) {
  EXPECT_EQ(bytesSignificant(12), "12 B");
  EXPECT_EQ(bytesSignificant(27168), "26.5 KiB");
  EXPECT_EQ(bytesSignificant(3.0 * (1 << 30)), "3 GiB");
}

TEST(Units, Durations) {
  EXPECT_EQ(duration(0), "0 ns");
  EXPECT_EQ(duration(999), "999 ns");
  EXPECT_EQ(duration(1500), "1.5 us");
  EXPECT_EQ(duration(250000), "250 us");
  EXPECT_EQ(duration(2500000), "2.50 ms");
  EXPECT_EQ(duration(1500000000), "1.50 s");
  EXPECT_EQ(duration(int64_t{125} * 1000000000), "2m05s");
  EXPECT_EQ(duration(int64_t{3720} * 1000000000), "1h02m");
  EXPECT_EQ(duration(-5), "-");
}

TEST(Units, DurationFixedAndSignificant) {
  EXPECT_EQ(durationFixed(850), "850 ns");
  EXPECT_EQ(durationFixed(12345), "12.35 us");
  EXPECT_EQ(durationFixed(1500000000), "1.50 s");
  EXPECT_EQ(durationSignificant(0), "0");
  EXPECT_EQ(durationSignificant(850), "850 ns");
  EXPECT_EQ(durationSignificant(12345), "12.35 us");
  EXPECT_EQ(durationSignificant(1.5e9), "1.5 s");
  EXPECT_EQ(durationSignificant(-2e6), "-2 ms");
}

TEST(Units, RatesCountsJoin) {
  EXPECT_EQ(rate(1.25e9), "1.25 GB/s");
  EXPECT_EQ(rate(8.3e8), "830 MB/s");
  EXPECT_EQ(rate(12), "12 B/s");
  EXPECT_EQ(count(0), "0");
  EXPECT_EQ(count(999), "999");
  EXPECT_EQ(count(1000), "1,000");
  EXPECT_EQ(count(1234567), "1,234,567");
  EXPECT_EQ(count(INT64_MIN), "-9,223,372,036,854,775,808");  // once overflowed (fuzzing)
  EXPECT_EQ(count(INT64_MAX), "9,223,372,036,854,775,807");
  EXPECT_EQ(count(-1234), "-1,234");
  EXPECT_EQ(join({}, ","), "");
  EXPECT_EQ(join({0, 2, 3}, ", "), "0, 2, 3");
  EXPECT_EQ(fixed(3.14159), "3.14");
  EXPECT_EQ(printf("%s-%d", "a", 7), "a-7");
  EXPECT_EQ(printf("%300d", 1).size(), 300u);
}

TEST(Json, Strings) {
  EXPECT_EQ(jsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonString("x\ny\t\x01"), "\"x\\ny\\t\\u0001\"");
  EXPECT_EQ(jsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(jsonString("bad\xff"), "\"bad\\ufffd\"");
  EXPECT_EQ(jsonString("\xc3"), "\"\\ufffd\"");  // truncated sequence
}

TEST(Json, Numbers) {
  EXPECT_EQ(jsonNumber(1.5), "1.5");
  EXPECT_EQ(jsonNumber(1.0 / 0.0), "null");
  EXPECT_EQ(jsonNumber(1.0 / 3, 9), "0.333333333");
  EXPECT_EQ(jsonNumber(2.0, 9), "2");
  EXPECT_EQ(microsFromNanos(12345), "12.345");
  EXPECT_EQ(microsFromNanos(7), "0.007");
  EXPECT_EQ(microsFromNanos(-1500), "-1.500");
}

TEST(Csv, Fields) {
  EXPECT_EQ(csvField("plain"), "plain");
  EXPECT_EQ(csvField(""), "");
  EXPECT_EQ(csvField("a,b"), "\"a,b\"");
  EXPECT_EQ(csvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csvField(" padded"), "\" padded\"");
  EXPECT_EQ(csvLine({"a", "b,c", ""}), "a,\"b,c\",\n");
}

// Text from a trace on its way to a terminal or a Markdown viewer (issue 16: a host name or
// command line holding "\x1b]0;...\x07" retitled the terminal, "<script>" reached the Markdown).
TEST(Text, CleanTextIsUnchanged) {
  for (std::string_view s : {"", "rank 0 host vm-1 allreduce 4 KiB", "0->1 | 3->2",
                             "gr\xc3\xbc\xc3\x9f" "e \xe2\x86\x92 \xf0\x9f\x9a\x80 ~!@#$%^*()"}) {
    EXPECT_EQ(printable(s), s);
    EXPECT_EQ(printableText(s), s);
    EXPECT_EQ(markdownText(s), s);
  }
  EXPECT_EQ(printableText("a\n\tb\n"), "a\n\tb\n");
}

TEST(Text, TerminalEscapesAndC0) {
  EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("\x1b]0;owned\x07"), "\\x1b]0;owned\\x07");
  EXPECT_EQ(printable("a\rb"), "a\\x0db");
  EXPECT_EQ(printable("a\nb\tc"), "a\\x0ab\\x09c");
  EXPECT_EQ(printableText("a\nb\tc\r"), "a\nb\tc\\x0d");
  EXPECT_EQ(printable(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(printable("\x7f"), "\\x7f");
  EXPECT_EQ(printable("\x1f \x01"), "\\x1f \\x01");
}

TEST(Text, C1ControlsInvalidUtf8AndBidi) {
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\u009b31m");  // U+009B, CSI as UTF-8
  EXPECT_EQ(printable("\xc2\x80\xc2\x9f\xc2\xa0"), "\\u0080\\u009f\xc2\xa0");
  EXPECT_EQ(printable("\x9b" "31m"), "\\x9b31m");  // a lone 8-bit CSI byte
  EXPECT_EQ(printable("\xff\xc3"), "\\xff\\xc3");
  EXPECT_EQ(printable("\xe0\x80\x80"), "\\xe0\\x80\\x80");  // overlong
  EXPECT_EQ(printable("abc\xe2\x80\xae" "fdp.exe"), "abc\\u202efdp.exe");  // RLO
  EXPECT_EQ(printable("\xe2\x81\xa6x\xe2\x81\xa9"), "\\u2066x\\u2069");
  EXPECT_EQ(printable("\xe2\x80\xa8"), "\\u2028");
}

TEST(Text, MarkdownLetsNoHtmlThrough) {
  EXPECT_EQ(markdownText("<script>alert(1)</script>"), "&lt;script>alert(1)&lt;/script>");
  EXPECT_EQ(markdownText("a & b &amp; <!-- x -->"), "a &amp; b &amp;amp; &lt;!-- x -->");
  EXPECT_EQ(markdownText("\x1b[2J<b>"), "\\x1b[2J&lt;b>");
  EXPECT_EQ(markdownText("0->1"), "0->1");
  EXPECT_EQ(printable("<b>&"), "<b>&");  // text output is not HTML
}

}  // namespace
}  // namespace ringside::format
