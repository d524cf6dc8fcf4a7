// The flight recorder as the preload library drives it (collector/flight.h): the ring file in the
// rank folder holds the last calls of each communicator and the messages, open ones included;
// dumps are stamped on a failed call and at exit with a call open; it survives SIGKILL; merge
// turns it into flight_* and rank_exit rows. Each test runs in a forked child (the collector is a
// process-wide singleton, as in a traced job).
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/collector/collector.h"
#include "ringside/collector/flight.h"
#include "ringside/storage/flight_ring.h"
#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "traced_child.h"

namespace col = ringside::collector;
namespace flight = ringside::collector::flight;
namespace ring = ringside::storage::flight;
namespace st = ringside::storage;

namespace {

using ringside::test_support::inChild;
using ringside::test_support::makeTempDir;
using ringside::test_support::rankFiles;

// `calls` all-reduces on one communicator, each with one send posted and completed; the last
// `open` of them left open (entered, transferring).
void runCalls(int calls, int open) {
  static int key = 0;
  const int32_t comm = col::registerComm(&key, 1, 3, "gloo");
  col::setIdentity(1, 3, "test");
  col::markStep(7);
  for (int i = 0; i < calls; ++i) {
    const int64_t t = col::nowNs();
    const flight::CallHandle outer = flight::current();
    const flight::CallHandle h = flight::enter(comm, i, col::Op::kAllreduce, col::Library::kGloo,
                                               col::DType::kF32, 4096, 1024, -1, t);
    flight::post(comm, 0x10, 2, col::Side::kSend, 4096, t + 1);
    if (i >= calls - open) continue;  // never returns
    flight::done(0x10, 2, col::Side::kSend, t + 2);
    flight::leave(h, t + 3, true, nullptr, outer);
  }
}

std::vector<std::string> rings(const std::string& dir) { return ring::listRings(dir); }

// Runs `body` in a traced child (after activate()) and reads the ring it left.
template <class Body>
void ringOfChild(Body body, ring::Snapshot* s) {
  const std::string dir = makeTempDir("flight");
  ASSERT_EQ(inChild(dir, {}, [&] { return col::activate() ? body() : 2; }), 0);
  std::string err;
  const auto files = rings(dir);
  ASSERT_FALSE(files.empty()) << dir;
  ASSERT_TRUE(ring::readRing(files[0], s, &err)) << err;
}

}  // namespace

TEST(Flight, RingKeepsTheLastCallsOfEachCommunicatorAndOpenOnes) {
  const std::string dir = makeTempDir("flight");
  ASSERT_EQ(inChild(dir, {}, [] {
              if (!col::activate()) return 2;
              runCalls(100, 1);
              return 0;
            }),
            0);
  const auto files = rings(dir);
  ASSERT_EQ(files.size(), 1u);
  ring::Snapshot s;
  std::string err;
  ASSERT_TRUE(ring::readRing(files[0], &s, &err)) << err;
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.world_size, 3);
  ASSERT_EQ(s.calls.size(), static_cast<size_t>(ring::kCallsPerComm));
  EXPECT_EQ(s.calls.front().seq, 100 - ring::kCallsPerComm);
  EXPECT_EQ(s.calls.back().seq, 99);
  EXPECT_EQ(s.calls.back().state, "transferring");
  EXPECT_EQ(s.calls.back().exit_ns, st::kNone);
  EXPECT_EQ(s.calls.back().step, 7);
  EXPECT_EQ(s.calls.back().op, "allreduce");
  EXPECT_EQ(s.calls.back().dtype, "f32");
  EXPECT_EQ(s.calls.front().state, "done");
  EXPECT_EQ(s.calls_dropped, 100u - ring::kCallsPerComm);
  ASSERT_FALSE(s.messages.empty());
  EXPECT_EQ(s.messages.back().done_ns, st::kNone);  // the open call's send
  EXPECT_EQ(s.messages.back().peer, 2);
  // The process exited with a call open: an exit-open dump, its end noted.
  ASSERT_EQ(s.dumps.size(), 1u);
  EXPECT_EQ(s.dumps[0].reason, "exit-open");
  EXPECT_EQ(s.ended, ring::Ended::kExited);
}

TEST(Flight, FailedCallStampsATimeoutDumpWithTheErrorText) {
  ring::Snapshot s;
  ASSERT_NO_FATAL_FAILURE(ringOfChild(
      [] {
        static int key = 0;
        const int32_t comm = col::registerComm(&key, 0, 2, "gloo");
        const flight::CallHandle h = flight::enter(comm, 0, col::Op::kBroadcast, col::Library::kGloo,
                                                   col::DType::kUnknown, 8, 8, 0, col::nowNs());
        flight::leave(h, col::nowNs(), false, "Timed out waiting 15000ms for recv", {});
        return 0;
      },
      &s));
  ASSERT_EQ(s.dumps.size(), 1u);
  EXPECT_EQ(s.dumps[0].reason, "timeout");
  EXPECT_EQ(s.dumps[0].detail, "Timed out waiting 15000ms for recv");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].state, "failed");
  EXPECT_EQ(s.calls[0].root, 0);
}

// NCCL's shape (asynchronous calls): queued when the API returns, done when the plugin sees the
// work end (before or after the return), an abort's error dump; queued calls are not open at exit.
TEST(Flight, AsyncCallsAreQueuedThenDoneAndNotOpenAtExit) {
  ring::Snapshot s;
  ASSERT_NO_FATAL_FAILURE(ringOfChild(
      [] {
        static int key = 0;
        const int32_t comm = col::registerComm(&key, 0, 2, "nccl");
        auto enter = [comm](int64_t seq) {
          return flight::enter(comm, seq, col::Op::kAllreduce, col::Library::kNccl, col::DType::kBF16, 64, 32,
                               -1, col::nowNs());
        };
        const flight::CallHandle a = enter(0);
        flight::returned(a, col::nowNs(), {});
        flight::completed(a, col::nowNs() + 5);  // completed after the API returned
        const flight::CallHandle b = enter(1);
        flight::completed(b, col::nowNs());  // completed inside the API call
        flight::returned(b, col::nowNs(), {});
        flight::returned(enter(2), col::nowNs(), {});  // completion never seen
        flight::error("ncclCommAbort on nccl/00", col::nowNs());
        return 0;
      },
      &s));
  ASSERT_EQ(s.calls.size(), 3u);
  EXPECT_EQ(s.calls[0].state, "done");
  EXPECT_EQ(s.calls[1].state, "done");
  EXPECT_EQ(s.calls[2].state, "queued");
  EXPECT_NE(s.calls[2].exit_ns, st::kNone);  // the API's return
  EXPECT_EQ(s.calls[2].library, "nccl");
  EXPECT_EQ(s.calls[2].dtype, "bf16");
  ASSERT_EQ(s.dumps.size(), 1u);  // the abort's; no exit-open for a queued call
  EXPECT_EQ(s.dumps[0].reason, "error");
  EXPECT_EQ(s.dumps[0].detail, "ncclCommAbort on nccl/00");
}

TEST(Flight, RingSurvivesSigkillAndMergeStoresIt) {
  const std::string dir = makeTempDir("flight");
  const int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 2;
    runCalls(10, 1);
    ::usleep(300 * 1000);  // one periodic flush: the rank file knows its rank
    ::raise(SIGKILL);
    return 0;
  });
  EXPECT_NE(rc, 0);
  const auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  // A watchdog stamps it from outside, as record does.
  {
    ring::Mapping m;
    std::string err;
    ASSERT_TRUE(m.open(rings(dir).at(0), true, &err)) << err;
    ring::stampDump(m.layout(), ring::Reason::kWatchdog, col::nowNs(), "hang: rank 0 never entered");
    ring::noteEnd(m.layout(), ring::Ended::kSignal, 2, -1, SIGKILL, col::nowNs());
  }
  st::MergeOptions o;
  o.inputs = files;
  o.output = dir + "/merged.sqlite";
  const st::MergeResult res = st::mergeRankFiles(o);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_EQ(res.merged_rings.size(), 1u);
  std::string err;
  auto r = st::TraceReader::open(o.output, &err);
  ASSERT_TRUE(r) << err;
  std::vector<st::FlightDumpRow> dumps;
  ASSERT_TRUE(r->forEachFlightDump([&](const st::FlightDumpRow& d) { return dumps.push_back(d), true; }, &err));
  ASSERT_EQ(dumps.size(), 1u);
  EXPECT_EQ(dumps[0].rank, 1);
  EXPECT_EQ(dumps[0].reason, "watchdog");
  int calls = 0, open = 0;
  ASSERT_TRUE(r->forEachFlightCall(
      [&](const st::FlightCallRow& c) {
        ++calls;
        open += c.exit_ns == st::kNone;
        EXPECT_EQ(c.comm, "gloo/3/0");
        return true;
      },
      &err));
  EXPECT_EQ(calls, 10);
  EXPECT_EQ(open, 1);
  std::vector<st::RankExitRow> exits;
  ASSERT_TRUE(r->forEachRankExit([&](const st::RankExitRow& e) { return exits.push_back(e), true; }, &err));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  EXPECT_EQ(exits[0].source, "launcher");
  EXPECT_EQ(exits[0].open_calls, 1);
}

TEST(Flight, OffWithRingsideFlight0) {
  const std::string dir = makeTempDir("flight");
  ASSERT_EQ(inChild(dir, {{"RINGSIDE_FLIGHT", "0"}}, [] {
              if (!col::activate()) return 2;
              runCalls(3, 0);
              return 0;
            }),
            0);
  EXPECT_TRUE(rings(dir).empty());
}
