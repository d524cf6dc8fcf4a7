// The recording window's rules (collector/window.h): step ranges, time spans, the trigger's
// touches, and the parsers `ringside record` shares with the collector.
#include "ringside/collector/window.h"

#include <gtest/gtest.h>

namespace {

using ringside::collector::Detail;
using ringside::collector::kNoEnd;
using ringside::collector::WindowConfig;
using ringside::collector::WindowInputs;
using ringside::collector::windowWanted;

WindowInputs at(int64_t markers, int64_t elapsed_ns = 0, int64_t touches = 0) {
  WindowInputs in;
  in.markers = markers;
  in.elapsed_ns = elapsed_ns;
  in.touches = touches;
  return in;
}

TEST(RecordingWindow, UnboundedKeepsEverything) {
  WindowConfig c;
  EXPECT_FALSE(c.bounded());
  EXPECT_TRUE(windowWanted(c, at(0)));
  EXPECT_TRUE(windowWanted(c, at(1000, 1000000000000)));
}

TEST(RecordingWindow, StepsCountMarkersAndKeepSetup) {
  WindowConfig c;
  c.steps = true;
  c.step_begin = 10;
  c.step_end = 20;
  EXPECT_TRUE(windowWanted(c, at(0)));    // setup, before the first marker
  EXPECT_FALSE(windowWanted(c, at(1)));   // step 0
  EXPECT_FALSE(windowWanted(c, at(10)));  // step 9
  EXPECT_TRUE(windowWanted(c, at(11)));   // step 10
  EXPECT_TRUE(windowWanted(c, at(20)));   // step 19
  EXPECT_FALSE(windowWanted(c, at(21)));  // step 20
}

TEST(RecordingWindow, TimeSpanAndTriggerCombine) {
  WindowConfig c;
  c.time = true;
  c.delay_ns = 5;
  c.duration_ns = 10;
  EXPECT_FALSE(windowWanted(c, at(0, 4)));
  EXPECT_TRUE(windowWanted(c, at(0, 5)));
  EXPECT_TRUE(windowWanted(c, at(0, 14)));
  EXPECT_FALSE(windowWanted(c, at(0, 15)));
  c.trigger_file = "/tmp/go";
  EXPECT_FALSE(windowWanted(c, at(0, 6, 0)));  // not touched yet
  EXPECT_TRUE(windowWanted(c, at(0, 6, 1)));   // touched once: on
  EXPECT_FALSE(windowWanted(c, at(0, 6, 2)));  // twice: off again
  EXPECT_FALSE(windowWanted(c, at(0, 20, 1))); // past the duration
}

TEST(RecordingWindow, ParsesStepRanges) {
  int64_t a = -1, b = -1;
  ASSERT_TRUE(ringside::collector::parseStepRange("10:20", &a, &b));
  EXPECT_EQ(a, 10);
  EXPECT_EQ(b, 20);
  ASSERT_TRUE(ringside::collector::parseStepRange("7:", &a, &b));
  EXPECT_EQ(a, 7);
  EXPECT_EQ(b, kNoEnd);
  ASSERT_TRUE(ringside::collector::parseStepRange(":3", &a, &b));
  EXPECT_EQ(a, 0);
  EXPECT_EQ(b, 3);
  for (const char* bad : {"", ":", "5", "5:5", "6:5", "-1:4", "a:b", "1:2:3", " 1:2"})
    EXPECT_FALSE(ringside::collector::parseStepRange(bad, &a, &b)) << bad;
}

TEST(RecordingWindow, ParsesDetailAndSeconds) {
  Detail d = Detail::kAuto;
  ASSERT_TRUE(ringside::collector::parseDetail("links", &d));
  EXPECT_EQ(d, Detail::kLinks);
  EXPECT_FALSE(ringside::collector::parseDetail("all", &d));
  int64_t ns = 0;
  ASSERT_TRUE(ringside::collector::parseSecondsNs("1.5", &ns));
  EXPECT_EQ(ns, 1500000000);
  for (const char* bad : {"", "-1", "nan", "inf", "1x", "1e30"})
    EXPECT_FALSE(ringside::collector::parseSecondsNs(bad, &ns)) << bad;
  // format/'s duration grammar (issue 26): a unit may be given.
  ASSERT_TRUE(ringside::collector::parseSecondsNs("1s", &ns));
  EXPECT_EQ(ns, 1000000000);
  ASSERT_TRUE(ringside::collector::parseSecondsNs("250ms", &ns));
  EXPECT_EQ(ns, 250000000);
}

TEST(RecordingWindow, Describes) {
  WindowConfig c;
  EXPECT_EQ(ringside::collector::describeWindow(c), "everything");
  c.steps = true;
  c.step_begin = 10;
  c.step_end = 20;
  c.time = true;
  c.delay_ns = 5000000000;
  c.trigger_file = "/tmp/go";
  EXPECT_EQ(ringside::collector::describeWindow(c),
            "steps 10:20 (and the calls before the first step marker), from 5 s after start, "
            "trigger file /tmp/go");
}

}  // namespace
