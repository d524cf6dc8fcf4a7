// The writer's parts on hand-made events: TransferPairing pairs each post with its completion in
// FIFO order per (buffer, peer, side) whichever is drained first, waits for events within the
// reorder lag, pairs an any-peer receive with the completion's peer, and hands over what is left
// at the end; LinkTotals adds messages up per (call, link, side) and writes a link only once it
// has been quiet.
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "link_totals.h"
#include "transfer_pairing.h"

namespace ringside::collector::detail {
namespace {

using storage::kNone;

Event post(uint64_t buffer, int32_t peer, Side side, int64_t t0, uint64_t tag) {
  Event e;
  e.kind = EventKind::kTransferPost;
  e.key = buffer;
  e.peer = peer;
  e.side = static_cast<uint8_t>(side);
  e.t0 = t0;
  e.aux = tag;
  return e;
}

Event done(uint64_t buffer, int32_t peer, Side side, int64_t t1) {
  Event e;
  e.kind = EventKind::kTransferDone;
  e.key = buffer;
  e.peer = peer;
  e.side = static_cast<uint8_t>(side);
  e.t0 = t1;
  e.t1 = t1;
  return e;
}

// (the post's tag, the peer, the end time) of every paired transfer, in order.
using Paired = std::vector<std::tuple<uint64_t, int32_t, int64_t>>;

struct Pairing {
  Paired out;
  TransferPairing pairing{[this](const Event& p, int32_t peer, int64_t end_ns) {
    out.emplace_back(p.aux, peer, end_ns);
  }};
};

TEST(TransferPairing, PairsInFifoOrderPerBufferPeerAndSide) {
  Pairing p;
  p.pairing.stage(post(7, 1, Side::kSend, 100, 1));
  p.pairing.stage(post(7, 1, Side::kSend, 110, 2));
  p.pairing.stage(post(7, 1, Side::kRecv, 120, 3));  // same buffer and peer, other side
  p.pairing.stage(done(7, 1, Side::kRecv, 150));
  p.pairing.stage(done(7, 1, Side::kSend, 160));
  p.pairing.stage(done(7, 1, Side::kSend, 170));
  p.pairing.match(1000);
  EXPECT_EQ(p.out, (Paired{{3, 1, 150}, {1, 1, 160}, {2, 1, 170}}));
  EXPECT_FALSE(p.pairing.postsWaiting());
}

TEST(TransferPairing, ACompletionDrainedBeforeItsPostWaitsForIt) {
  Pairing p;
  p.pairing.stage(done(9, 2, Side::kSend, 200));
  p.pairing.match(1000);
  EXPECT_TRUE(p.out.empty());
  p.pairing.stage(post(9, 2, Side::kSend, 150, 4));
  p.pairing.match(1000);
  EXPECT_EQ(p.out, (Paired{{4, 2, 200}}));
}

TEST(TransferPairing, EventsWithinTheLagWaitForTheNextMatch) {
  Pairing p;
  p.pairing.stage(post(1, 0, Side::kSend, 100, 5));
  p.pairing.stage(done(1, 0, Side::kSend, 300));
  p.pairing.match(200);  // the completion is too recent: another ring may hold earlier events
  EXPECT_TRUE(p.out.empty());
  EXPECT_TRUE(p.pairing.postsWaiting());
  p.pairing.match(400);
  EXPECT_EQ(p.out, (Paired{{5, 0, 300}}));
  EXPECT_FALSE(p.pairing.postsWaiting());
}

TEST(TransferPairing, AnAnyPeerReceiveTakesTheCompletionsPeer) {
  Pairing p;
  p.pairing.stage(post(3, -1, Side::kRecv, 100, 6));
  p.pairing.stage(done(3, 5, Side::kRecv, 180));
  p.pairing.match(1000);
  EXPECT_EQ(p.out, (Paired{{6, 5, 180}}));
}

TEST(TransferPairing, FinishHandsOverUnpairedPostsAndCountsUnpairedCompletions) {
  Pairing p;
  p.pairing.stage(post(4, 1, Side::kSend, 100, 7));
  p.pairing.stage(done(8, 1, Side::kRecv, 120));
  p.pairing.stage(done(8, 1, Side::kRecv, 130));
  p.pairing.match(1000);
  EXPECT_TRUE(p.out.empty());
  EXPECT_EQ(p.pairing.finish(), 2u);
  EXPECT_EQ(p.out, (Paired{{7, 1, kNone}}));
  EXPECT_FALSE(p.pairing.postsWaiting());
  EXPECT_EQ(p.pairing.finish(), 0u);
}

storage::TransferRow message(int64_t call, int32_t src, int32_t dst, int64_t bytes, int64_t start,
                             int64_t end, int32_t channel) {
  storage::TransferRow r;
  r.collective_id = call;
  r.src_rank = src;
  r.dst_rank = dst;
  r.bytes = bytes;
  r.start_ns = start;
  r.end_ns = end;
  r.side = "send";
  r.channel = channel;
  return r;
}

TEST(LinkTotals, OneRowPerQuietLinkWithItsSums) {
  LinkTotals totals;
  const auto rs = static_cast<uint8_t>(Phase::kReduceScatter);
  totals.add(message(1, 0, 1, 100, 1000, 1500, 0), rs);
  totals.add(message(1, 0, 1, 300, 1200, 2500, 1), rs);  // another channel
  totals.add(message(1, 0, 2, 50, 1100, 1300, 0), static_cast<uint8_t>(Phase::kAllGather));
  EXPECT_EQ(totals.firstNs(), 1000);
  std::vector<storage::TransferRow> rows;
  std::vector<std::string> phases;
  auto write = [&](const storage::TransferRow& r) {
    rows.push_back(r);
    phases.emplace_back(r.phase);
    return true;
  };
  totals.flush(2000, write);  // link 0->1 last moved at 2500: not quiet yet
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].dst_rank, 2);
  EXPECT_EQ(phases[0], "all-gather");
  totals.flush(3000, write);
  ASSERT_EQ(rows.size(), 2u);
  const storage::TransferRow& r = rows[1];
  EXPECT_EQ(r.dst_rank, 1);
  EXPECT_EQ(r.bytes, 400);
  EXPECT_EQ(r.slot, 2);  // messages added up
  EXPECT_EQ(r.chunk, LinkTotals::kLinkTotalChunk);
  EXPECT_EQ(r.start_ns, 1000);
  EXPECT_EQ(r.end_ns, 2500);
  EXPECT_EQ(r.channel, -1);  // the channels differ
  EXPECT_EQ(phases[1], "reduce-scatter");
  EXPECT_EQ(totals.rowsWritten(), 2u);
  EXPECT_EQ(totals.messagesWritten(), 3u);
  EXPECT_TRUE(totals.empty());
}

TEST(LinkTotals, AFailedWriteKeepsTheLinkForLater) {
  LinkTotals totals;
  totals.add(message(2, 1, 0, 64, 10, 20, 3), 0);
  totals.flush(100, [](const storage::TransferRow&) { return false; });
  EXPECT_FALSE(totals.empty());
  EXPECT_EQ(totals.rowsWritten(), 0u);
  int written = 0;
  totals.flush(100, [&](const storage::TransferRow& r) {
    EXPECT_EQ(r.channel, 3);
    ++written;
    return true;
  });
  EXPECT_EQ(written, 1);
  EXPECT_TRUE(totals.empty());
}

}  // namespace
}  // namespace ringside::collector::detail
