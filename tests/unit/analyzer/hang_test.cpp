// judgeHang() (analyzer/hang.h) on hand-made rank states: each verdict names the right ranks,
// and a healthy or merely busy record gets none.
#include "ringside/analyzer/hang.h"
#include "ringside/analyzer/hang_flight.h"

#include <gtest/gtest.h>

namespace h = ringside::analyzer::hang;

namespace {

constexpr int64_t kMs = 1000000;

h::Call call(int64_t seq, std::string op, int64_t bytes, h::CallState state, int64_t enter,
             int64_t exit) {
  h::Call c;
  c.comm = "world";
  c.seq = seq;
  c.op = std::move(op);
  c.library = "gloo";
  c.bytes = bytes;
  c.dtype = "f32";
  c.state = state;
  c.enter_ns = enter;
  c.exit_ns = exit;
  return c;
}

// `ranks` ranks that each completed all-reduces #0..done-1 on "world" (1 ms apart).
h::Input healthy(int ranks, int64_t done) {
  h::Input in;
  for (int r = 0; r < ranks; ++r) {
    h::Rank rank;
    rank.rank = r;
    for (int64_t s = 0; s < done; ++s) {
      rank.calls.push_back(call(s, "allreduce", 4096, h::CallState::kDone, s * kMs, s * kMs + kMs / 2));
      rank.calls.back().step = s / 2;
    }
    in.ranks.push_back(rank);
  }
  return in;
}

// Judged 3 s after the calls at 2 ms were entered (the watchdog at --hang-timeout 3): their
// messages have waited past the stall bound (hang.h: 1 s here, no delivery being slower).
constexpr int64_t kStalledNow = 2 * kMs + 3000 * kMs;

// judgeHang(in) gives one verdict, of `rule`, naming `culprits`.
void expectSoleVerdict(const h::Input& in, std::string_view rule, const std::vector<int>& culprits) {
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, rule) << v[0].message;
  EXPECT_EQ(v[0].culprits, culprits) << v[0].message;
}

// Every rank but those in `skip` enters #seq and stays there.
void openAt(h::Input* in, int64_t seq, std::vector<int> skip) {
  for (h::Rank& r : in->ranks) {
    if (std::find(skip.begin(), skip.end(), r.rank) != skip.end()) continue;
    r.calls.push_back(call(seq, "allreduce", 4096, h::CallState::kEntered, seq * kMs, -1));
  }
}

// `ranks` ranks all inside all-reduce #2 since 2 ms, judged at kStalledNow.
h::Input allInside(int ranks) {
  h::Input in = healthy(ranks, 2);
  openAt(&in, 2, {});
  in.now_ns = kStalledNow;
  return in;
}

}  // namespace

TEST(Hang, HealthyHasNoVerdict) {
  EXPECT_TRUE(h::judgeHang(healthy(8, 10)).empty());
  h::Input busy = healthy(4, 10);
  openAt(&busy, 10, {});  // everyone inside the last call, alive: in progress, not a hang
  EXPECT_TRUE(h::judgeHang(busy).empty());
}

TEST(Hang, StuckRankIsNamed) {
  h::Input in = healthy(8, 10);
  openAt(&in, 10, {5});
  in.now_ns = 10 * kMs + 15000 * kMs;
  in.ranks[5].detail = "python stack: data_loader.py:42";
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kStuckCollective);
  EXPECT_EQ(v[0].culprits, std::vector<int>{5});
  EXPECT_EQ(v[0].seq, 10);
  EXPECT_EQ(v[0].step, -1);  // the open calls carry no step here
  EXPECT_EQ(v[0].waited_ns, 15000 * kMs);
  EXPECT_EQ(h::rankRanges(v[0].waiting), "0-4,6,7");
  EXPECT_NE(v[0].message.find("rank 5 never entered allreduce #10"), std::string::npos) << v[0].message;
  ASSERT_EQ(v[0].last_seen.size(), 1u);
  EXPECT_NE(v[0].last_seen[0].find("last completed allreduce #9"), std::string::npos) << v[0].last_seen[0];
  EXPECT_NE(v[0].last_seen[0].find("data_loader.py:42"), std::string::npos);
}

TEST(Hang, DeadRankIsRankExited) {
  h::Input in = healthy(4, 6);
  openAt(&in, 6, {2});
  in.ranks[2].liveness = h::Liveness::kSignaled;
  in.ranks[2].signal = 9;
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kRankExited);
  EXPECT_EQ(v[0].culprits, std::vector<int>{2});
  EXPECT_NE(v[0].last_seen[0].find("signal 9"), std::string::npos) << v[0].last_seen[0];
}

// NCCL calls whose API returned (queued: completion unknown) on ranks that then exited by
// themselves: a healthy end, not ranks that died inside a call; a rank that never queued the
// last call is still named.
TEST(Hang, QueuedNcclCallsOfExitedRanksAreNoVerdict) {
  h::Input in = healthy(4, 6);
  for (h::Rank& r : in.ranks) {
    r.calls.push_back(call(6, "allreduce", 4096, h::CallState::kQueued, 6 * kMs, -1));
    r.calls.back().library = "nccl";
    r.liveness = h::Liveness::kExited;
    r.exit_status = 0;
  }
  EXPECT_TRUE(h::judgeHang(in).empty());
  in.ranks[1].calls.pop_back();  // rank 1 never called #6
  in.ranks[1].liveness = h::Liveness::kRunning;
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0].rule, h::kStuckCollective);
  EXPECT_EQ(v[0].culprits, std::vector<int>{1});
}

TEST(Hang, DesyncOfOpAndSizeListsEachSide) {
  h::Input in = healthy(6, 4);
  openAt(&in, 4, {});
  in.ranks[3].calls.back().op = "allgather";
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kCollectiveMismatch);
  EXPECT_EQ(v[0].culprits, std::vector<int>{3});
  ASSERT_EQ(v[0].sides.size(), 2u);
  EXPECT_EQ(v[0].seq, 4);
  EXPECT_NE(v[0].message.find("rank 3: allgather"), std::string::npos) << v[0].message;

  h::Input size = healthy(4, 4);
  openAt(&size, 4, {});
  size.ranks[0].calls.back().bytes = 8192;
  v = h::judgeHang(size);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kCollectiveMismatch);
  EXPECT_EQ(v[0].culprits, std::vector<int>{0});
}

TEST(Hang, SizesThatDifferByDesignAreNoDesync) {
  h::Input in = healthy(3, 2);
  for (h::Rank& r : in.ranks) {
    r.calls.push_back(call(2, "allgatherv", 100 * (r.rank + 1), h::CallState::kDone, 2 * kMs, 3 * kMs));
  }
  EXPECT_TRUE(h::judgeHang(in).empty());
}

TEST(Hang, LinkThatStoppedDeliveringIsToldFromSilentPeer) {
  h::Input in = allInside(3);
  // 0 sent to 1 (completed), 1 never received it; 2 waits for 1, which never sent.
  in.ranks[0].messages.push_back({"world", 2, 1, true, 4096, 2 * kMs, 2 * kMs + 10});
  in.ranks[1].messages.push_back({"world", 1, 0, false, 4096, kMs, kMs + 10});  // receives recorded
  in.ranks[1].messages.push_back({"world", 2, 0, false, 4096, 2 * kMs, -1});
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_EQ(v[0].links_from, std::vector<int>{0});
  EXPECT_EQ(v[0].culprits, std::vector<int>{1});

  h::Input silent = allInside(3);
  silent.ranks[2].messages.push_back({"world", 2, 1, false, 4096, 2 * kMs, -1});
  expectSoleVerdict(silent, h::kNeverSent, {1});
}

// A cable cut in the middle of a ring all-reduce (e2e.flight-linkcut-3 once): rank 1 had sent
// rank 0 part of the call (received), its next sends to 0 were posted and never completed while
// rank 0's receives of them wait; 2 waits for 0 (which is stuck behind 1) and for 1 to post the
// receive of its send. The link 1->0 is named, not the ranks waiting behind it.
TEST(Hang, SendAndReceiveBothPostedNeverCompletedIsAStoppedLink) {
  h::Input in = allInside(3);
  auto msg = [](int peer, bool send, int64_t bytes, int64_t done) {
    return h::Message{"world", 2, peer, send, bytes, 2 * kMs, done};
  };
  in.ranks[1].messages = {msg(0, true, 2728, 2 * kMs + 5), msg(0, true, 684, -1), msg(2, false, 4096, 2 * kMs + 6)};
  in.ranks[0].messages = {msg(1, false, 2728, 2 * kMs + 7), msg(1, false, 684, -1), msg(2, true, 4096, 2 * kMs + 8)};
  in.ranks[2].messages = {msg(0, false, 4096, 2 * kMs + 9), msg(0, false, 684, -1), msg(1, true, 4096, 2 * kMs + 4),
                          msg(1, true, 684, -1)};
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_EQ(v[0].links_from, std::vector<int>{1});
  EXPECT_EQ(v[0].culprits, std::vector<int>{0});
  EXPECT_NE(v[0].message.find("link(s) 1->0 stopped delivering"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("posted on both ends, never completed"), std::string::npos) << v[0].message;

  // Rank 1 also waits for a receive from 2 whose send is posted: two stopped links, both at
  // rank 1 (its cable), and nobody is taken for a silent peer.
  in.ranks[1].messages.push_back(msg(2, false, 684, -1));
  v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_EQ(v[0].links_from, (std::vector<int>{1, 2}));
  EXPECT_EQ(v[0].culprits, (std::vector<int>{0, 1}));
  EXPECT_NE(v[0].message.find("(each touches rank 1)"), std::string::npos) << v[0].message;
}

// The cut before the call's first message (e2e.flight-linkcut-3, the watchdog once named rank 2):
// 1's sends to 0 and 2's sends to 1 posted, never completed; 0's and 1's receives wait; 0->2 done.
TEST(Hang, CutBeforeTheFirstMessageNamesTheCutRanksLinks) {
  h::Input in = allInside(3);
  auto msg = [](int peer, bool send, int64_t done) { return h::Message{"world", 2, peer, send, 684, 2 * kMs, done}; };
  in.ranks[0].messages = {msg(1, false, -1), msg(2, true, 2 * kMs + 5), msg(1, false, -1), msg(2, true, 2 * kMs + 6)};
  in.ranks[1].messages = {msg(2, false, -1), msg(0, true, -1), msg(2, false, -1), msg(0, true, -1)};
  in.ranks[2].messages = {msg(0, false, 2 * kMs + 7), msg(1, true, -1), msg(0, false, 2 * kMs + 8), msg(1, true, -1)};
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_NE(v[0].message.find("link(s) 1->0,2->1 stopped"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("(each touches rank 1)"), std::string::npos) << v[0].message;

  // The cut between two of the call's messages, rank 0 already past the call (done, inside the
  // next one): only 2->1 stopped (2's second send and 1's receive of it), and it is named.
  h::Input late = healthy(3, 2);
  openAt(&late, 2, {0});
  late.now_ns = kStalledNow;
  late.ranks[0].calls.push_back(call(2, "allreduce", 4096, h::CallState::kDone, 2 * kMs, 2 * kMs + 9));
  late.ranks[0].calls.push_back(call(3, "allreduce", 4096, h::CallState::kEntered, 3 * kMs, -1));
  late.ranks[0].messages = {msg(1, false, 2 * kMs + 5), msg(2, true, 2 * kMs + 6),
                            h::Message{"world", 3, 1, false, 684, 3 * kMs, -1}};
  late.ranks[1].messages = {msg(2, false, 2 * kMs + 2), msg(0, true, 2 * kMs + 4), msg(2, false, -1)};
  late.ranks[2].messages = {msg(1, true, 2 * kMs + 1), msg(0, false, 2 * kMs + 7), msg(1, true, -1)};
  v = h::judgeHang(late);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_EQ(v[0].links_from, std::vector<int>{2});
  EXPECT_EQ(v[0].culprits, std::vector<int>{1});
}

// A record that ends while messages are merely in flight on healthy links (a dump, a kill, a
// closed recording window 30 us after both ends posted) blames no link and no peer; the same
// messages left waiting for seconds are the stalled link, the lost message and the silent peer
// as before.
TEST(Hang, MessagesPostedJustBeforeTheEndAreInFlightNotStalled) {
  constexpr int64_t kPosted = 2 * kMs + 100;
  auto msg = [](int peer, bool send, int64_t done) { return h::Message{"world", 2, peer, send, 684, kPosted, done}; };
  h::Input stalled = healthy(3, 2);
  openAt(&stalled, 2, {});
  stalled.ranks[1].messages = {msg(0, true, -1), msg(2, false, -1)};
  stalled.ranks[0].messages = {msg(1, false, -1), msg(2, true, kPosted + 5000)};
  stalled.ranks[2].messages = {msg(0, false, kPosted + 9000), msg(1, true, -1)};
  stalled.now_ns = kPosted + 30000;  // 30 us after both ends posted
  EXPECT_TRUE(h::judgeHang(stalled).empty());
  stalled.now_ns = kPosted + 3000 * kMs;
  std::vector<h::Verdict> v = h::judgeHang(stalled);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_NE(v[0].message.find("link(s) 1->0,2->1 stopped"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("posted on both ends, never completed"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].evidence.find("each stopped for at least 3.00 s"), std::string::npos) << v[0].evidence;

  // Sent (handed to the kernel) 30 us before the end, its receive not yet completed: in flight.
  h::Input lost = healthy(3, 2);
  openAt(&lost, 2, {});
  lost.ranks[0].messages = {msg(1, true, kPosted + 10)};
  lost.ranks[1].messages = {msg(0, false, -1)};
  lost.now_ns = kPosted + 10 + 30000;
  EXPECT_TRUE(h::judgeHang(lost).empty());
  lost.now_ns = kPosted + 3000 * kMs;
  v = h::judgeHang(lost);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].message.find("link(s) 0->1 stopped delivering"), std::string::npos) << v[0].message;
  EXPECT_NE(v[0].message.find("sent, never received"), std::string::npos) << v[0].message;

  // A receive posted 30 us before the end whose peer has not sent yet: no silent peer.
  h::Input silent = healthy(3, 2);
  openAt(&silent, 2, {});
  silent.ranks[2].messages = {msg(1, false, -1)};
  silent.now_ns = kPosted + 30000;
  EXPECT_TRUE(h::judgeHang(silent).empty());
  silent.now_ns = kPosted + 3000 * kMs;
  expectSoleVerdict(silent, h::kNeverSent, {1});
}

// Ranks whose records end at different times (flushed at different moments, a live rank
// merged): rank 1's record ends 200 us after rank 0's send completed, so the receive it shows
// open is known open for 200 us only, however long rank 0's record goes on.
TEST(Hang, AMessageOpenWhereItsRanksRecordEndsIsNotLost) {
  h::Input in = allInside(2);
  in.ranks[0].messages = {{"world", 2, 1, true, 4096, 2 * kMs, 2 * kMs + 10}};
  in.ranks[1].messages = {{"world", 2, 0, false, 4096, 2 * kMs, -1}};
  in.ranks[1].seen_until_ns = 2 * kMs + 200000;
  EXPECT_TRUE(h::judgeHang(in).empty());
  in.ranks[1].seen_until_ns = -1;  // a live ring: known open until now, 3 s
  expectSoleVerdict(in, h::kUndelivered, {1});
}

// A four-rank ring whose link 1->2 was cut at 2 ms while 3->0 is merely in flight at the end
// (rank 3 posted its send 30 us before it; rank 0 had been waiting since 2 ms): only the cut link
// is named, the in-flight one is told as such, and rank 3, queued behind the cut, is not blamed.
TEST(Hang, RingWithOneCutLinkAndOneInFlightNamesOnlyTheCut) {
  h::Input in = allInside(4);
  auto msg = [](int peer, bool send, int64_t posted, int64_t done) {
    return h::Message{"world", 2, peer, send, 1024, posted, done};
  };
  const int64_t just = kStalledNow - 30000;
  in.ranks[0].messages = {msg(1, true, 2 * kMs, 2 * kMs + 40), msg(3, false, 2 * kMs, -1)};
  in.ranks[1].messages = {msg(0, false, 2 * kMs, 2 * kMs + 60), msg(2, true, 2 * kMs, -1)};
  in.ranks[2].messages = {msg(1, false, 2 * kMs, -1)};
  in.ranks[3].messages = {msg(2, false, 2 * kMs, -1), msg(0, true, just, -1)};
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_EQ(v[0].links_from, std::vector<int>{1});
  EXPECT_EQ(v[0].culprits, std::vector<int>{2});
  EXPECT_NE(v[0].evidence.find("link(s) 3->0 in flight at the end (for at most 30.0 us)"), std::string::npos)
      << v[0].evidence;
}

// The bound follows the record: a link that needed 2 s for each 64 MiB message while healthy is
// not stalled after 3 s on the next one (4 x 2 s = 8 s), and is after 10 s; a small message
// on the same record is judged against similar sizes only (the 1 s floor). The watchdog's own
// floor (Input::min_stall_ns, its --hang-timeout when shorter than 1 s) judges sooner.
TEST(Hang, StallBoundFollowsTheSlowestSimilarDelivery) {
  constexpr int64_t kBig = 64 << 20;
  h::Input in = healthy(2, 2);
  openAt(&in, 2, {});
  for (int64_t s = 0; s < 2; ++s) {  // the healthy calls' messages: 2 s from both posted to done
    in.ranks[0].messages.push_back({"world", s, 1, true, kBig, s * kMs, s * kMs + 1900 * kMs});
    in.ranks[1].messages.push_back({"world", s, 0, false, kBig, s * kMs + 10, s * kMs + 2000 * kMs});
  }
  in.ranks[0].messages.push_back({"world", 2, 1, true, kBig, 2 * kMs, -1});
  in.ranks[1].messages.push_back({"world", 2, 0, false, kBig, 2 * kMs, -1});
  in.now_ns = 2 * kMs + 3000 * kMs;
  EXPECT_TRUE(h::judgeHang(in).empty());
  in.now_ns = 2 * kMs + 10000 * kMs;
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kUndelivered);
  EXPECT_NE(v[0].evidence.find("past the stall bound of 8.00 s"), std::string::npos) << v[0].evidence;

  // A 4 KiB message open 3 s on the same record: the big deliveries do not excuse it (their
  // throughput gives it 122 us; the floor stands).
  in.ranks[0].messages.back().bytes = 4096;
  in.ranks[1].messages.back().bytes = 4096;
  in.now_ns = 2 * kMs + 3000 * kMs;
  v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_NE(v[0].evidence.find("past the stall bound of 1.00 s"), std::string::npos) << v[0].evidence;

  // Without deliveries, 200 ms is in flight under the default floor and stalled under 100 ms.
  h::Input quick = healthy(2, 2);
  openAt(&quick, 2, {});
  quick.ranks[0].messages = {{"world", 2, 1, true, 4096, 2 * kMs, -1}};
  quick.ranks[1].messages = {{"world", 2, 0, false, 4096, 2 * kMs, -1}};
  quick.now_ns = 202 * kMs;
  EXPECT_TRUE(h::judgeHang(quick).empty());
  quick.min_stall_ns = 100 * kMs;
  EXPECT_EQ(h::judgeHang(quick).size(), 1u);
}

// Ranks that wait only on each other (each awaits a receive the other never sent) are named
// together; a rank queued behind them is not.
TEST(Hang, RanksWaitingOnEachOtherAreNamedNotThoseBehindThem) {
  h::Input in = allInside(4);
  auto recv = [](int peer) { return h::Message{"world", 2, peer, false, 684, 2 * kMs, -1}; };
  in.ranks[1].messages = {recv(2)};
  in.ranks[2].messages = {recv(1)};
  in.ranks[0].messages = {recv(1)};
  in.ranks[3].messages = {recv(0)};
  std::vector<h::Verdict> v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, h::kNeverSent);
  EXPECT_EQ(v[0].culprits, (std::vector<int>{1, 2}));

  // A silent rank ahead of the chain is named alone: 3 waits on 0, 0 on 1, 1 on nobody.
  in.ranks[1].messages.clear();
  in.ranks[2].messages.clear();
  v = h::judgeHang(in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].culprits, std::vector<int>{1});
}

TEST(Hang, RankRanges) {
  EXPECT_EQ(h::rankRanges({5, 0, 1, 2, 3, 7, 8, 3}), "0-3,5,7,8");
  EXPECT_EQ(h::rankRanges({}), "");
  h::CallState s;
  EXPECT_TRUE(h::parseCallState("transferring", &s));
  EXPECT_EQ(s, h::CallState::kTransferring);
  EXPECT_FALSE(h::parseCallState("bogus", &s));
}

// The flight recorder's rows as the verdicts read them (hang_flight.h): the same conversion for
// the watchdog's live rings and for analyze() on a merged trace.
TEST(Hang, FlightRowsConvert) {
  ringside::storage::FlightCallRow row;
  row.comm = "world";
  row.seq = 7;
  row.op = "allreduce";
  row.bytes = ringside::storage::kNone;
  row.state = "transferring";
  row.enter_ns = 5;
  row.exit_ns = 9;  // a stale end on an open call is not kept
  row.step = 3;
  h::Call c = h::fromFlight(row);
  EXPECT_TRUE(c.open());
  EXPECT_EQ(c.state, h::CallState::kTransferring);
  EXPECT_EQ(c.exit_ns, -1);
  EXPECT_EQ(c.bytes, 0);
  EXPECT_EQ(c.step, 3);
  row.state = "bogus";
  EXPECT_EQ(h::fromFlight(row).state, h::CallState::kEntered);
  row.state = "failed";
  EXPECT_EQ(h::fromFlight(row).exit_ns, 9);

  ringside::storage::FlightMessageRow m;
  m.direction = "recv";
  m.peer = 2;
  m.done_ns = ringside::storage::kNone;
  h::Message msg = h::fromFlight(m);
  EXPECT_FALSE(msg.send);
  EXPECT_EQ(msg.peer, 2);
  EXPECT_EQ(msg.done_ns, -1);

  h::Rank r;
  h::applyExit(-1, 0, &r);  // neither: untouched
  EXPECT_EQ(r.liveness, h::Liveness::kRunning);
  h::applyExit(3, 0, &r);
  EXPECT_EQ(r.liveness, h::Liveness::kExited);
  EXPECT_EQ(r.exit_status, 3);
  h::applyExit(-1, 9, &r);
  EXPECT_EQ(r.liveness, h::Liveness::kSignaled);
  EXPECT_EQ(r.signal, 9);
}
