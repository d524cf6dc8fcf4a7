#include "export/export_json.h"

#include <gtest/gtest.h>

namespace ringside::cli {
namespace {

TEST(ExportJson, EscapesQuotesControlsAndBadUtf8) {
  EXPECT_EQ(jsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(jsonString("x\ny\t\x01"), "\"x\\ny\\t\\u0001\"");
  EXPECT_EQ(jsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(jsonString("bad\xff"), "\"bad\\ufffd\"");
  EXPECT_EQ(jsonString("\xc3"), "\"\\ufffd\"");  // truncated sequence
}

TEST(ExportJson, Numbers) {
  EXPECT_EQ(jsonNumber(1.5), "1.5");
  EXPECT_EQ(jsonNumber(1.0 / 0.0), "null");
  EXPECT_EQ(microsFromNanos(12345), "12.345");
  EXPECT_EQ(microsFromNanos(7), "0.007");
  EXPECT_EQ(microsFromNanos(-1500), "-1.500");
}

}  // namespace
}  // namespace ringside::cli
