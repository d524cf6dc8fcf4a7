// The one grammar for sizes, durations and rates (format/units.h): every form, and bad input
// refused with one line that names it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "ringside/format/units.h"

namespace ringside::format {
namespace {

int64_t size(const char* text) {
  int64_t out = -1;
  std::string error;
  EXPECT_TRUE(parseSize(text, &out, &error)) << text << ": " << error;
  return out;
}

void badSize(const char* text) {
  int64_t out = -7;
  std::string error;
  EXPECT_FALSE(parseSize(text, &out, &error)) << text;
  EXPECT_EQ(out, -7) << text;  // untouched
  EXPECT_NE(error.find(std::string("'") + text + "'"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(ParseUnits, SizesEveryForm) {
  EXPECT_EQ(size("0"), 0);
  EXPECT_EQ(size("4096"), 4096);
  EXPECT_EQ(size("512B"), 512);
  EXPECT_EQ(size("512b"), 512);
  for (const char* k : {"64K", "64k", "64KB", "64kb", "64KiB", "64kib"}) EXPECT_EQ(size(k), 64 << 10) << k;
  for (const char* m : {"25M", "25m", "25MB", "25MiB"}) EXPECT_EQ(size(m), 25 << 20) << m;
  for (const char* g : {"2G", "2GB", "2GiB", "2g"}) EXPECT_EQ(size(g), int64_t{2} << 30) << g;
  for (const char* t : {"1T", "1TB", "1TiB"}) EXPECT_EQ(size(t), int64_t{1} << 40) << t;
  EXPECT_EQ(size("1.5M"), 1536 << 10);
  EXPECT_EQ(size("1.5K"), 1536);
  EXPECT_EQ(size(".5K"), 512);
  EXPECT_EQ(size("2e3"), 2000);
  EXPECT_EQ(size("1e1K"), 10240);
  EXPECT_EQ(size("0.4"), 0);  // rounded to the nearest byte
  EXPECT_EQ(size("0.6"), 1);
  EXPECT_EQ(size("8388607T"), int64_t{8388607} << 40);
}

TEST(ParseUnits, SizesRefused) {
  for (const char* bad : {"", "K", "-1", "+1", " 1", "1 K", "1KK", "1Q", "1kbit", "inf", "nan", "0x10",
                          "1.5.5", "1,5", "8388608T", "1e300", "MB"}) {
    badSize(bad);
  }
  std::string error;
  int64_t out = 0;
  ASSERT_FALSE(parseSize("12X", &out, &error));
  EXPECT_EQ(error, "bad size '12X' (a number of bytes, K, M, G or T suffixes allowed: 4096, 64K, 1.5MiB, 25MB)");
  EXPECT_FALSE(parseSize("12X", &out));  // no error wanted
}

double duration(const char* text, BareDuration bare) {
  double ns = -1;
  std::string error;
  EXPECT_TRUE(parseDuration(text, bare, &ns, &error)) << text << ": " << error;
  return ns;
}

TEST(ParseUnits, DurationsEveryForm) {
  for (BareDuration bare : {BareDuration::kRequired, BareDuration::kNanoseconds, BareDuration::kSeconds}) {
    EXPECT_DOUBLE_EQ(duration("850ns", bare), 850);
    EXPECT_DOUBLE_EQ(duration("12.5us", bare), 12500);
    EXPECT_DOUBLE_EQ(duration("10ms", bare), 1e7);
    EXPECT_DOUBLE_EQ(duration("2.5s", bare), 2.5e9);
    EXPECT_DOUBLE_EQ(duration("5m", bare), 300e9);
    EXPECT_DOUBLE_EQ(duration("1h", bare), 3600e9);
    EXPECT_DOUBLE_EQ(duration("0s", bare), 0);
    EXPECT_DOUBLE_EQ(duration("1e3us", bare), 1e6);
  }
  EXPECT_DOUBLE_EQ(duration("1500", BareDuration::kNanoseconds), 1500);
  EXPECT_DOUBLE_EQ(duration("30", BareDuration::kSeconds), 30e9);
  EXPECT_DOUBLE_EQ(duration("0.25", BareDuration::kSeconds), 0.25e9);
}

TEST(ParseUnits, DurationsRefused) {
  double ns = -7;
  std::string error;
  EXPECT_FALSE(parseDuration("30", BareDuration::kRequired, &ns, &error));
  EXPECT_EQ(error, "bad duration '30' (a number and ns, us, ms, s, m or h: 500ns, 10us, 2.5ms)");
  for (const char* bad : {"", "s", "-1s", "1 s", "1sec", "1S", "1MS", "inf", "nan", "1e30s", "2m05s", "1d"}) {
    for (BareDuration bare : {BareDuration::kRequired, BareDuration::kNanoseconds, BareDuration::kSeconds}) {
      error.clear();
      EXPECT_FALSE(parseDuration(bad, bare, &ns, &error)) << bad;
      EXPECT_NE(error.find(std::string("'") + bad + "'"), std::string::npos) << error;
      EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    }
  }
  EXPECT_EQ(ns, -7);
}

double rate(const char* text) {
  double r = -1;
  std::string error;
  EXPECT_TRUE(parseRate(text, &r, &error)) << text << ": " << error;
  return r;
}

TEST(ParseUnits, RatesEveryForm) {
  for (const char* bits : {"100Gbit", "100Gb/s", "100Gbit/s", "100Gbps"}) EXPECT_DOUBLE_EQ(rate(bits), 12.5e9) << bits;
  for (const char* bytes : {"25GB/s", "25GBps"}) EXPECT_DOUBLE_EQ(rate(bytes), 25e9) << bytes;
  EXPECT_DOUBLE_EQ(rate("800MB/s"), 800e6);
  EXPECT_DOUBLE_EQ(rate("200Mbit"), 25e6);
  EXPECT_DOUBLE_EQ(rate("8kb/s"), 1e3);
  EXPECT_DOUBLE_EQ(rate("8Kb/s"), 1e3);
  EXPECT_DOUBLE_EQ(rate("1TB/s"), 1e12);
  EXPECT_DOUBLE_EQ(rate("12B/s"), 12);
  EXPECT_DOUBLE_EQ(rate("8b/s"), 1);
  EXPECT_DOUBLE_EQ(rate("1.5GB/s"), 1.5e9);
  EXPECT_DOUBLE_EQ(rate("0B/s"), 0);
}

TEST(ParseUnits, RatesRefused) {
  double r = -7;
  std::string error;
  for (const char* bad : {"", "100", "100G", "100mb/s", "100GiB/s", "100 Gbit", "-1Gbit", "Gbit", "1GB", "inf",
                          "100Gbits", "1e400B/s"}) {
    error.clear();
    EXPECT_FALSE(parseRate(bad, &r, &error)) << bad;
    EXPECT_NE(error.find(std::string("'") + bad + "'"), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  EXPECT_EQ(r, -7);
}

}  // namespace
}  // namespace ringside::format
