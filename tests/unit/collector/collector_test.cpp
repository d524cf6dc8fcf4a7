// The collector as the preload library drives it: many threads, some short
// lived, a memory cap, the final flush. Each test runs in a forked child
// because the collector is a process-wide singleton (as in a traced job).
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/collector/collector.h"
#include "ringside/storage/trace_reader.h"
#include "traced_child.h"

namespace col = ringside::collector;
namespace st = ringside::storage;

namespace {

using ringside::test_support::inChild;
using ringside::test_support::makeTempDir;
using ringside::test_support::rankFiles;

col::Event collective(uint64_t seq) {
  col::Event e;
  e.kind = col::EventKind::kCollective;
  e.op = static_cast<uint8_t>(col::Op::kAllreduce);
  e.library = static_cast<uint8_t>(col::Library::kGloo);
  e.id = col::newCollectiveId();
  e.key = seq;
  e.bytes = 4096;
  e.aux = 1024;
  e.t0 = col::nowNs();
  e.t1 = e.t0 + 10;
  return e;
}

std::map<std::string, std::string> metaOf(const std::string& file) {
  std::string err;
  auto r = st::TraceReader::open(file, &err);
  EXPECT_TRUE(r) << err;
  return r ? r->meta() : std::map<std::string, std::string>{};
}

// The one rank file a child left in `dir`, opened; null (and a failure) otherwise.
std::unique_ptr<st::TraceReader> onlyRankFile(const std::string& dir) {
  const auto files = rankFiles(dir);
  EXPECT_EQ(files.size(), 1u);
  std::unique_ptr<st::TraceReader> r;
  std::string err;
  if (files.size() == 1) r = st::TraceReader::open(files[0], &err);
  EXPECT_TRUE(r) << err;
  return r;
}

}  // namespace

TEST(Collector, DormantUntilActivated) {
  std::string dir = makeTempDir("collector") + "/sub";
  int rc = inChild(dir, {}, [] {
    col::emit(collective(0));  // not activated: ignored, no file
    return col::isActive() ? 1 : 0;
  });
  EXPECT_EQ(rc, 0);
  EXPECT_TRUE(rankFiles(dir).empty());
}

TEST(Collector, ManyThreadsBalance) {
  std::string dir = makeTempDir("collector");
  constexpr int kThreads = 64, kEvents = 10000;
  int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 2;
    int comm = col::registerComm(reinterpret_cast<void*>(0x1000), 0, 1, "test");
    col::setIdentity(0, 1, "test");
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([comm] {
        for (int i = 0; i < kEvents; ++i) {
          col::Event e = collective(static_cast<uint64_t>(col::nextSeq(comm)));
          e.comm = static_cast<int16_t>(comm);
          col::emit(e);
          if (i % 1000 == 999) std::this_thread::yield();
        }
      });
      if (t % 8 == 7) {  // short-lived threads: rings get retired and reused
        for (auto& th : threads) th.join();
        threads.clear();
      }
    }
    for (auto& th : threads) th.join();
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  auto meta = metaOf(files[0]);
  EXPECT_EQ(meta["end_state"], "clean");
  uint64_t emitted = std::stoull(meta["events_emitted"]);
  uint64_t recorded = std::stoull(meta["events_recorded"]);
  uint64_t dropped = std::stoull(meta["events_dropped"]);
  EXPECT_EQ(emitted, uint64_t{kThreads} * kEvents);
  EXPECT_EQ(recorded + dropped, emitted);
  std::string err;
  auto r = st::TraceReader::open(files[0], &err);
  ASSERT_TRUE(r) << err;
  EXPECT_EQ(static_cast<uint64_t>(r->collectiveCount()), recorded);
}

TEST(Collector, MemoryCapDropsAndCounts) {
  std::string dir = makeTempDir("collector");
  int rc = inChild(dir, {{"RINGSIDE_BUFFER_MB", "1"}}, [] {
    if (!col::activate()) return 2;
    col::setIdentity(0, 1, "test");
    // Far more threads than 1 MiB of rings can hold, each bursting faster than
    // the writer drains: events must be dropped, never block, and be counted.
    std::vector<std::thread> threads;
    for (int t = 0; t < 32; ++t)
      threads.emplace_back([] {
        for (int i = 0; i < 20000; ++i) col::emit(collective(static_cast<uint64_t>(i)));
      });
    for (auto& th : threads) th.join();
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  auto meta = metaOf(files[0]);
  uint64_t emitted = std::stoull(meta["events_emitted"]);
  uint64_t recorded = std::stoull(meta["events_recorded"]);
  uint64_t dropped = std::stoull(meta["events_dropped"]);
  EXPECT_EQ(emitted, 32u * 20000u);
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(recorded + dropped, emitted);
}

// RINGSIDE_BUFFER_MB: the whole public range is taken; a value outside it is ignored (the
// default is used) with exactly one warning line on stderr, never silently.
TEST(Collector, BufferMbRangeAndWarning) {
  struct Case {
    std::string value;
    uint64_t want_mb;
    bool warns;
  };
  const std::vector<Case> cases = {
      {std::to_string(col::kBufferMbMax), static_cast<uint64_t>(col::kBufferMbMax), false},
      {std::to_string(col::kBufferMbMin), static_cast<uint64_t>(col::kBufferMbMin), false},
      {std::to_string(col::kBufferMbMax + 1), static_cast<uint64_t>(col::kBufferMbDefault), true},
      {"1048576", static_cast<uint64_t>(col::kBufferMbDefault), true},
      {"0", static_cast<uint64_t>(col::kBufferMbDefault), true},
  };
  for (const Case& c : cases) {
    std::string dir = makeTempDir("collector");
    const std::string err_path = dir + ".stderr";
    int rc = inChild(dir, {{"RINGSIDE_BUFFER_MB", c.value}}, [&err_path] {
      std::FILE* err = std::freopen(err_path.c_str(), "w", stderr);
      if (err == nullptr) return 3;
      if (!col::activate()) return 2;
      col::setIdentity(0, 1, "test");
      return 0;
    });
    ASSERT_EQ(rc, 0) << c.value;
    auto files = rankFiles(dir);
    ASSERT_EQ(files.size(), 1u) << c.value;
    EXPECT_EQ(metaOf(files[0])["buffer_bytes"], std::to_string(c.want_mb << 20)) << c.value;
    std::string text;
    if (std::FILE* f = std::fopen(err_path.c_str(), "r")) {
      char buf[4096];
      size_t n = 0;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
    std::remove(err_path.c_str());
    if (c.warns) {
      EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << c.value << ": " << text;
      EXPECT_NE(text.find("RINGSIDE_BUFFER_MB=" + c.value), std::string::npos) << text;
      EXPECT_NE(text.find("1..65536"), std::string::npos) << text;
    } else {
      EXPECT_EQ(text.find("RINGSIDE_BUFFER_MB"), std::string::npos) << c.value << ": " << text;
    }
  }
}

// A child forked without exec stays quiet, but its wrapped calls are not lost silently: the
// traced parent's rank file counts them and the children that made them (issue 16).
TEST(Collector, ForkedChildCallsAreCountedInTheParentsFile) {
  std::string dir = makeTempDir("collector");
  int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 2;
    col::setIdentity(0, 1, "test");
    auto forkAndCall = [](int calls) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        int active = 0;
        for (int i = 0; i < calls; ++i) active += col::activate() ? 1 : 0;  // as a wrapper does
        ::_exit(active == 0 ? 0 : 1);  // _exit: no atexit handler, as multiprocessing does
      }
      int status = 0;
      ::waitpid(pid, &status, 0);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 100;
    };
    if (forkAndCall(3) != 0 || forkAndCall(2) != 0 || forkAndCall(0) != 0) return 3;
    const col::Counters c = col::counters();
    return c.forked_child_calls == 5 && c.forked_children == 2 ? 0 : 4;
  });
  ASSERT_EQ(rc, 0);
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u) << "the quiet children write no file of their own";
  auto meta = metaOf(files[0]);
  EXPECT_EQ(meta["forked_child_calls"], "5");
  EXPECT_EQ(meta["forked_children"], "2");

  // Without such children the keys are absent: a plain run's file is unchanged.
  std::string plain = makeTempDir("collector");
  ASSERT_EQ(inChild(plain, {}, [] { return col::activate() ? 0 : 2; }), 0);
  files = rankFiles(plain);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(metaOf(files[0]).count("forked_child_calls"), 0u);
}

TEST(Collector, TransfersPairPostWithCompletion) {
  std::string dir = makeTempDir("collector");
  int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 2;
    col::setIdentity(1, 4, "test");
    // The completion arrives on another thread, possibly drained first.
    for (int i = 0; i < 100; ++i) {
      col::Event post;
      post.kind = col::EventKind::kTransferPost;
      post.key = 0xabc;
      post.peer = 2;
      post.side = static_cast<uint8_t>(col::Side::kSend);
      post.bytes = 100 + static_cast<uint64_t>(i);
      post.t0 = col::nowNs();
      col::emit(post);
      std::thread([] {
        col::Event done;
        done.kind = col::EventKind::kTransferDone;
        done.key = 0xabc;
        done.peer = 2;
        done.side = static_cast<uint8_t>(col::Side::kSend);
        done.t1 = col::nowNs();
        col::emit(done);
      }).join();
    }
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  std::string err;
  auto r = st::TraceReader::open(files[0], &err);
  ASSERT_TRUE(r) << err;
  int n = 0;
  int64_t expect_bytes = 100;
  ASSERT_TRUE(r->forEachTransfer(
      [&](const st::TransferRow& t) {
        EXPECT_EQ(t.src_rank, 1);
        EXPECT_EQ(t.dst_rank, 2);
        EXPECT_EQ(t.side, "send");
        EXPECT_EQ(t.bytes, expect_bytes++);  // FIFO pairing keeps the order
        EXPECT_GE(t.end_ns, t.start_ns);
        ++n;
        return true;
      },
      &err))
      << err;
  EXPECT_EQ(n, 100);
}

TEST(Collector, UnwritableDirectoryDisablesQuietly) {
  std::string dir = makeTempDir("collector");
  std::string file = dir + "/a-file";
  FILE* f = fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  int rc = inChild(file + "/sub", {}, [] {
    col::activate();
    for (int i = 0; i < 1000; ++i) col::emit(collective(static_cast<uint64_t>(i)));
    return 7;  // the job's own status
  });
  EXPECT_EQ(rc, 7);
}

// RINGSIDE_REDACT: the process's arguments (here the test runner's own, e.g.
// --gtest_filter=...) reach neither the meta nor the rank row; the folder the
// collector makes is 0700 and the rank file 0600 under umask 022.
TEST(Collector, RedactedCommandLineInAPrivateFolder) {
  std::string dir = makeTempDir("collector") + "/sub";
  const mode_t old = ::umask(022);
  int rc = inChild(dir, {{"RINGSIDE_REDACT", "1"}}, [] {
    if (!col::activate()) return 2;
    col::setIdentity(0, 1, "test");
    col::emit(collective(0));
    return 0;
  });
  ::umask(old);
  ASSERT_EQ(rc, 0);
  std::vector<std::string> files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  struct stat sd, sf;
  ASSERT_EQ(::stat(dir.c_str(), &sd), 0);
  ASSERT_EQ(::stat(files[0].c_str(), &sf), 0);
  EXPECT_EQ(sd.st_mode & 07777, 0700u);
  EXPECT_EQ(sf.st_mode & 07777, 0600u);

  // What the runner passed, redacted: "collector_test <redacted> ...".
  std::string own;
  if (FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char buf[4096];
    size_t n = std::fread(buf, 1, sizeof buf, f);
    std::fclose(f);
    int args = 0;
    for (size_t i = 0; i < n; ++i) args += buf[i] == '\0' ? 1 : 0;
    own = "collector_test";
    for (int i = 1; i < args; ++i) own += " <redacted>";
  }
  EXPECT_EQ(metaOf(files[0])["command_line"], own);
  std::string err;
  auto r = st::TraceReader::open(files[0], &err);
  ASSERT_TRUE(r) << err;
  auto ranks = r->ranks();
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].command_line, own);
}

namespace {

// One call as a wrapper makes it: the id taken at entry, `messages` sends to rank 1 (post and
// completion), then the call's own event.
void callWithMessages(uint64_t seq, int messages) {
  col::Event call = collective(seq);
  for (int i = 0; i < messages; ++i) {
    col::Event post;
    post.kind = col::EventKind::kTransferPost;
    post.id = call.id;
    post.key = 0x10 + static_cast<uint64_t>(i);
    post.peer = 1;
    post.side = static_cast<uint8_t>(col::Side::kSend);
    post.bytes = 100;
    post.t0 = col::nowNs();
    col::emit(post);
    col::Event done = post;
    done.kind = col::EventKind::kTransferDone;
    done.id = 0;  // completions carry no call id
    done.t1 = col::nowNs();
    col::emit(done);
  }
  call.t1 = col::nowNs();
  col::emit(call);
}

struct Rows {
  int calls = 0, transfers = 0, totals = 0;
  int64_t bytes = 0, messages = 0;
};

Rows rowsOf(const std::string& file) {
  Rows out;
  std::string err;
  auto r = st::TraceReader::open(file, &err);
  EXPECT_TRUE(r) << err;
  if (!r) return out;
  EXPECT_TRUE(
      r->forEachCollective([&](const st::CollectiveRow&) { return ++out.calls > 0; }, &err));
  EXPECT_TRUE(r->forEachTransfer(
      [&](const st::TransferRow& t) {
        ++out.transfers;
        out.bytes += t.bytes;
        const bool total = t.chunk == -2;
        out.totals += total ? 1 : 0;
        out.messages += total ? t.slot : 1;
        return true;
      },
      &err));
  return out;
}

}  // namespace

// RINGSIDE_STEPS=2:4: the setup call and steps 2 and 3 are kept with their messages, steps 0, 1,
// 4 and 5 are left out and counted; the meta names the window and its changes.
TEST(Collector, StepWindowKeepsSetupAndItsSteps) {
  std::string dir = makeTempDir("collector");
  int rc = inChild(dir, {{"RINGSIDE_STEPS", "2:4"}}, [] {
    if (!col::activate()) return 2;
    col::setIdentity(0, 2, "test");
    callWithMessages(0, 2);  // setup
    for (int step = 0; step < 6; ++step) {
      col::markStep(100 + step);  // the job's numbers do not matter: markers are counted
      callWithMessages(1 + static_cast<uint64_t>(step), 3);
    }
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto files = rankFiles(dir);
  ASSERT_EQ(files.size(), 1u);
  Rows rows = rowsOf(files[0]);
  EXPECT_EQ(rows.calls, 3);
  EXPECT_EQ(rows.transfers, 2 + 3 + 3);
  auto meta = metaOf(files[0]);
  EXPECT_EQ(meta["left_out_calls"], "4");
  EXPECT_EQ(meta["left_out_messages"], "12");
  EXPECT_EQ(meta["transfers_unmatched"], "0");
  EXPECT_EQ(meta["recording_window"], "steps 2:4 (and the calls before the first step marker)");
  const std::string& changes = meta["recording_window_changes"];
  // The times are the rank's own clock since its start (0.001 s under a sanitizer's slowdown):
  // the order and the causes are what this test checks.
  EXPECT_EQ(changes.rfind("open at ", 0), 0u) << changes;
  EXPECT_NE(changes.find(" s (start); close at"), std::string::npos) << changes;
  EXPECT_NE(changes.find("(step 0); open at"), std::string::npos) << changes;
  EXPECT_NE(changes.find("(step 2); close at"), std::string::npos) << changes;
  EXPECT_NE(changes.find("(step 4)"), std::string::npos) << changes;
}

// RINGSIDE_DETAIL=links: one per-link total row per call (chunk -2, slot = messages), the same
// bytes; calls: no transfer rows at all.
TEST(Collector, DetailLevelsLinksAndCalls) {
  for (const char* level : {"links", "calls"}) {
    std::string dir = makeTempDir("collector");
    int rc = inChild(dir, {{"RINGSIDE_DETAIL", level}}, [] {
      if (!col::activate()) return 2;
      col::setIdentity(0, 2, "test");
      for (uint64_t seq = 0; seq < 4; ++seq) callWithMessages(seq, 5);
      return 0;
    });
    ASSERT_EQ(rc, 0);
    auto files = rankFiles(dir);
    ASSERT_EQ(files.size(), 1u);
    Rows rows = rowsOf(files[0]);
    auto meta = metaOf(files[0]);
    EXPECT_EQ(rows.calls, 4) << level;
    EXPECT_EQ(meta["recording_detail"], level);
    if (std::string(level) == "links") {
      EXPECT_EQ(rows.transfers, 4);
      EXPECT_EQ(rows.totals, 4);
      EXPECT_EQ(rows.messages, 20);
      EXPECT_EQ(rows.bytes, 2000);
      EXPECT_EQ(meta["messages_in_link_totals"], "20");
    } else {
      EXPECT_EQ(rows.transfers, 0);
      EXPECT_EQ(meta["left_out_messages"], "20");
    }
  }
}

// The first CPU sample holds the counters at activation, so the first call's step has CPU
// figures however long the writer thread takes to start and create its file (seen: 220 ms on
// a busy host, longer than a whole 6-step job, whose first samples came after its last call).
TEST(Collector, FirstCpuSampleIsTakenAtActivation) {
  std::string dir = makeTempDir("collector");
  int rc = inChild(dir, {}, [] {
    if (!col::activate()) return 2;
    col::setIdentity(0, 1, "test");
    col::emit(collective(0));  // at once: before the writer thread has opened its file
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto r = onlyRankFile(dir);
  ASSERT_TRUE(r);
  std::string err;
  int64_t call = -1, first = -1;
  ASSERT_TRUE(r->forEachCollective(
      [&](const st::CollectiveRow& c) {
        call = c.start_ns;
        return true;
      },
      &err))
      << err;
  ASSERT_TRUE(r->forEachCpuSample(
      [&](int32_t, const st::CpuSampleRow& s) {
        if (first < 0 || s.t_ns < first) first = s.t_ns;
        return true;
      },
      &err))
      << err;
  ASSERT_GE(call, 0);
  ASSERT_GE(first, 0);
  EXPECT_LE(first, call);
}
