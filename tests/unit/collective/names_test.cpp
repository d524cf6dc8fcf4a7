// collective/names.h: every list's names round-trip, the trace's spellings are kept, and the
// --allreduce / RINGSIDE_ALLREDUCE choice is read in one place.
#include <gtest/gtest.h>

#include <string>

#include "ringside/collective/cost_model.h"
#include "ringside/collective/names.h"

namespace ringside::collective {
namespace {

template <typename Enum>
void roundTrips(int count) {
  for (int i = 0; i < count; ++i) {
    const auto v = static_cast<Enum>(i);
    Enum back{};
    ASSERT_TRUE(parse(name(v), &back)) << name(v);
    EXPECT_EQ(back, v) << name(v);
  }
  Enum untouched = static_cast<Enum>(1);
  EXPECT_FALSE(parse("no-such-name", &untouched));
  EXPECT_EQ(untouched, static_cast<Enum>(1));
}

TEST(CollectiveNames, EveryListRoundTrips) {
  roundTrips<Op>(14);
  roundTrips<Library>(6);
  roundTrips<DType>(12);
  roundTrips<ReduceOp>(6);
  roundTrips<Algorithm>(11);
  roundTrips<Protocol>(4);
  roundTrips<Phase>(5);
}

TEST(CollectiveNames, TheTracesSpellings) {
  EXPECT_STREQ(name(Op::kReducescatter), "reducescatter");
  EXPECT_STREQ(name(Op::kUnknown), "unknown");
  EXPECT_STREQ(name(Library::kRingsideMultipath), "ringside-multipath");
  EXPECT_STREQ(name(DType::kBF16), "bf16");
  EXPECT_STREQ(name(DType::kUnknown), "");
  EXPECT_STREQ(name(ReduceOp::kNone), "");
  EXPECT_STREQ(name(ReduceOp::kUnknown), "unknown");
  EXPECT_STREQ(name(Algorithm::kDefault), "");
  EXPECT_STREQ(name(Algorithm::kCollnetDirect), "collnet_direct");
  EXPECT_STREQ(name(Algorithm::kHalvingDoubling), "halving-doubling");
  EXPECT_STREQ(name(Protocol::kLL128), "LL128");
  EXPECT_STREQ(name(Phase::kReduceScatter), "reduce-scatter");
  EXPECT_STREQ(name(Side::kSend), "send");
  EXPECT_STREQ(name(Side::kRecv), "recv");
  EXPECT_STREQ(name(static_cast<Op>(200)), "unknown");  // a damaged value
  EXPECT_TRUE(is("allreduce", Op::kAllreduce));
  EXPECT_FALSE(is("Allreduce", Op::kAllreduce));
  Protocol p = Protocol::kUnknown;
  EXPECT_FALSE(parse("ll128", &p));  // case matters
}

TEST(CollectiveNames, AllreduceChoice) {
  Algorithm a = Algorithm::kPat;
  ASSERT_TRUE(parseAllreduceChoice("gloo", &a));
  EXPECT_EQ(a, Algorithm::kDefault);
  for (Algorithm want : {Algorithm::kRing, Algorithm::kTree, Algorithm::kMultipath}) {
    ASSERT_TRUE(parseAllreduceChoice(name(want), &a)) << name(want);
    EXPECT_EQ(a, want);
    EXPECT_TRUE(referenceRuns(want));
  }
  a = Algorithm::kRing;
  for (const char* bad : {"", "bcube", "nvls", "Ring", "default"}) {
    EXPECT_FALSE(parseAllreduceChoice(bad, &a)) << bad;
    EXPECT_EQ(a, Algorithm::kRing);
  }
  EXPECT_EQ(referenceLibrary(Algorithm::kTree), Library::kRingsideTree);
  EXPECT_EQ(referenceLibrary(Algorithm::kBcube), Library::kUnknown);
  EXPECT_STREQ(kAllreduceChoices, "ring, tree, multipath or gloo");
}

TEST(CollectiveCostModel, BusFactorsByNameAndEnum) {
  EXPECT_DOUBLE_EQ(busbwFactor(Op::kAllreduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busbwFactor("allgatherv", 4), 0.75);
  EXPECT_DOUBLE_EQ(busbwFactor("barrier", 4), 0);
  EXPECT_DOUBLE_EQ(busbwFactor("no-such-op", 4), 1);
  EXPECT_EQ(busbwFactor(Op::kAllreduce, 0), 0);
  EXPECT_EQ(modelSteps(Op::kAllreduce, false, 4), 6);
  EXPECT_EQ(modelSteps(Op::kAllreduce, true, 5), 6);
  EXPECT_EQ(modelSteps(Op::kBroadcast, false, 5), 3);
  EXPECT_EQ(modelSteps(Op::kSend, false, 5), 1);
  EXPECT_EQ(modelSteps(Op::kAllreduce, false, 1), 0);
  // Multipath: the ring's latency, its bandwidth term over the plan's rate; no plan, no time.
  EXPECT_DOUBLE_EQ(multipathAllreduceTime(4, 1000, 1, 1, 2), ringAllreduceTime(4, 1000, 1, 0.5));
  EXPECT_EQ(multipathAllreduceTime(4, 1000, 1, 1, 0), -1);
}

}  // namespace
}  // namespace ringside::collective
