// Unit tests of align/: synthetic traces whose hosts' clocks are known (offsets of hours, a
// drift, a host with no calls), written as rank files and merged as `ringside merge` does.
#include "ringside/align/align.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringside/storage/merge.h"
#include "ringside/storage/rank_writer.h"
#include "ringside/storage/trace_reader.h"
#include "temp_dir.h"

namespace ringside::align {
namespace {

using storage::ClockModel;

constexpr int64_t kHourNs = 3'600'000'000'000;

// A host's clock: raw = offset + true * (1 + rate).
struct HostClock {
  std::string name;
  int64_t offset_ns;
  double rate = 0;
  int64_t starts_before_ns = 1'000'000'000;  // its ranks start this long before the first call
  int64_t raw(int64_t true_ns) const {
    return offset_ns + true_ns + static_cast<int64_t>(std::llround(static_cast<double>(true_ns) * rate));
  }
};

struct Rank {
  int rank;
  int host;
};

class AlignTest : public ::testing::Test {
 protected:
  test_support::TempDir dir_{"align-test"};

  // Writes one rank file per rank: `calls` all-reduces, the k-th at true time k * period, each
  // rank entering at a jitter of its own and all leaving 40 us after the last entry; a ring of
  // messages per call. Ranks listed in `silent` make no call. Returns the merged trace.
  std::string writeTrace(const std::vector<HostClock>& hosts, const std::vector<Rank>& ranks,
                         int calls, int64_t period_ns, const std::vector<int>& silent = {}) {
    const int n = static_cast<int>(ranks.size());
    std::vector<std::string> files;
    for (const Rank& r : ranks) {
      const HostClock& h = hosts[static_cast<size_t>(r.host)];
      auto w = startRank(h, r, n, &files);
      const bool is_silent = std::find(silent.begin(), silent.end(), r.rank) != silent.end();
      for (int k = 0; k < calls && !is_silent; ++k) {
        const int64_t base = kFirstCallNs + k * period_ns;
        const int64_t enter = base + ((r.rank * 7919 + k * 104729) % 200) * 1000;  // 0-199 us
        int64_t last = 0;
        for (const Rank& o : ranks) {
          if (std::find(silent.begin(), silent.end(), o.rank) != silent.end()) continue;
          last = std::max(last, base + ((o.rank * 7919 + k * 104729) % 200) * 1000);
        }
        addCall(w.get(), h, r.rank, k, enter, last + 40'000 + r.rank * 1000);
        // The ring: this rank sends to the next once all entered; the message lands 25 us later.
        const int next = (r.rank + 1) % n;
        const int prev = (r.rank + n - 1) % n;
        addMessage(w.get(), h, k, {r.rank, next, "send"}, last + 5'000, last + 10'000);
        addMessage(w.get(), h, k, {prev, r.rank, "recv"}, enter, last + 30'000);
      }
      finishRank(w.get());
    }
    return mergeAll(files);
  }

  // One rank per host, host i's rank i, in a binary tree (rank r's parent (r - 1) / 2), as a
  // tree all-reduce's messages go: `calls` all-reduces the k-th at true time k * period, each rank
  // entering at a jitter of its own and all leaving 5 ms after the last entry (the call's own
  // bounds are loose); per call every rank but the root sends up to its parent, the message
  // landing `up_ns` later, then every parent down to its children, landing `down_ns` later.
  // Unequal up and down latencies put each hop's midpoint (down - up) / 2 off the truth: the
  // errors add up along the tree, and the bounds must still hold.
  std::string writeTreeTrace(const std::vector<HostClock>& hosts, int calls, int64_t period_ns,
                             int64_t up_ns, int64_t down_ns) {
    const int n = static_cast<int>(hosts.size());
    std::vector<std::string> files;
    auto jitter = [](int r, int k) { return ((r * 7919 + k * 104729) % 200) * 1000; };
    for (int r = 0; r < n; ++r) {
      const HostClock& h = hosts[static_cast<size_t>(r)];
      auto w = startRank(h, {r, r}, n, &files);
      for (int k = 0; k < calls; ++k) {
        const int64_t base = kFirstCallNs + k * period_ns;
        int64_t last = 0;
        for (int o = 0; o < n; ++o) last = std::max(last, base + jitter(o, k));
        const int64_t enter = base + jitter(r, k);
        addCall(w.get(), h, r, k, enter, last + 5'000'000);
        const int64_t up = last + 10'000, down = last + 1'000'000;
        if (r > 0) {
          const int parent = (r - 1) / 2;
          addMessage(w.get(), h, k, {r, parent, "send"}, up, up + 1'000);
          addMessage(w.get(), h, k, {parent, r, "recv"}, enter, down + down_ns);
        }
        for (int child : {2 * r + 1, 2 * r + 2}) {
          if (child >= n) continue;
          addMessage(w.get(), h, k, {child, r, "recv"}, enter, up + up_ns);
          addMessage(w.get(), h, k, {r, child, "send"}, down, down + 1'000);
        }
      }
      finishRank(w.get());
    }
    return mergeAll(files);
  }

  static constexpr int64_t kFirstCallNs = 5'000'000'000;  // true time of the first call

  // Call k (an all-reduce of world) on `rank`, entered and left at true times.
  static void addCall(storage::RankWriter* w, const HostClock& h, int rank, int k, int64_t enter,
                      int64_t exit) {
    storage::CollectiveRow c;
    c.id = k + 1;
    c.rank = rank;
    c.comm = "world";
    c.seq = k;
    c.op = "allreduce";
    c.library = "gloo";
    c.bytes = 4096;
    c.count = 1024;
    c.start_ns = h.raw(enter);
    c.end_ns = h.raw(exit);
    EXPECT_TRUE(w->addCollective(c));
  }

  struct Way {
    int src, dst;
    const char* side;
  };
  // A message of call k, as `way.side` saw it: posted and completed at true times.
  static void addMessage(storage::RankWriter* w, const HostClock& h, int k, Way way,
                         int64_t posted, int64_t completed) {
    storage::TransferRow t;
    t.collective_id = k + 1;
    t.src_rank = way.src;
    t.dst_rank = way.dst;
    t.bytes = 4096;
    t.start_ns = h.raw(posted);
    t.end_ns = h.raw(completed);
    t.side = way.side;
    t.slot = k;
    EXPECT_TRUE(w->addTransfer(t));
  }

  // A rank file for rank `r` on host `h`, begun with its wall-clock anchor; its path is added
  // to *files.
  std::unique_ptr<storage::RankWriter> startRank(const HostClock& h, const Rank& r, int n,
                                                 std::vector<std::string>* files) {
    const std::string path = dir_.path() + "/rank" + std::to_string(r.rank) + ".sqlite";
    std::string error;
    auto w = storage::RankWriter::create(path, &error);
    EXPECT_TRUE(w) << error;
    storage::RankInfo info;
    info.rank = r.rank;
    info.world_size = n;
    info.host = h.name;
    info.boot_id = "boot-" + h.name;
    info.start_ns = h.raw(kFirstCallNs - h.starts_before_ns);
    // Wall clocks off by a few ms per host, as NTP leaves them.
    info.start_unix_ns = 1'700'000'000'000'000'000 + (kFirstCallNs - h.starts_before_ns) + 3'000'000 * r.host;
    EXPECT_TRUE(w->setRank(info));
    EXPECT_TRUE(w->begin());
    storage::ClockAnchorRow anchor{info.start_ns, info.start_unix_ns, 10};
    EXPECT_TRUE(w->addClockAnchor(anchor));
    files->push_back(path);
    return w;
  }

  static void finishRank(storage::RankWriter* w) {
    EXPECT_TRUE(w->commit());
    EXPECT_TRUE(w->setMeta("end_state", "clean"));
    EXPECT_TRUE(w->close());
  }

  std::string mergeAll(const std::vector<std::string>& files) {
    storage::MergeOptions m;
    m.inputs = files;
    m.output = dir_.path() + "/merged.sqlite";
    m.overwrite = true;
    const storage::MergeResult res = storage::mergeRankFiles(m);
    EXPECT_TRUE(res.ok) << res.error;
    return m.output;
  }

  ClockModel realign(const std::string& trace, const AlignOptions& options = {}) {
    ClockModel model;
    std::string error;
    EXPECT_TRUE(realignTrace(trace, options, &model, nullptr, &error)) << error;
    return model;
  }
};

// aligned - raw for `rank`'s raw time, as readers compute it.
int64_t mapped(const ClockModel& m, int rank, int64_t raw) {
  return storage::ClockMap(m).map(rank, raw) - raw;
}

// Every pair of domains: the mapped error of one against the other (the truth: each host's
// offset against host 0's, `first` and `ranks` naming each domain's host and a rank of it) lies
// within pairUncertaintyNs, which is at most the sum of their own uncertainties.
void expectPairsHold(const ClockModel& m, const std::vector<HostClock>& hosts,
                     const std::vector<Rank>& ranks, int64_t at_true_ns) {
  std::vector<double> err;
  for (const storage::ClockDomain& d : m.domains) {
    const Rank& r = ranks[static_cast<size_t>(d.ranks.front())];
    const HostClock& h = hosts[static_cast<size_t>(r.host)];
    const int64_t raw = h.raw(at_true_ns);
    err.push_back(static_cast<double>(storage::ClockMap(m).map(r.rank, raw)) -
                  static_cast<double>(hosts[0].raw(at_true_ns)));
  }
  for (size_t a = 0; a < m.domains.size(); ++a) {
    for (size_t b = 0; b < m.domains.size(); ++b) {
      const int64_t pair = m.pairUncertaintyNs(m.domains[a].id, m.domains[b].id);
      EXPECT_LE(std::fabs(err[a] - err[b]), static_cast<double>(pair)) << a << " vs " << b;
      EXPECT_LE(pair, m.domains[a].uncertainty_ns + m.domains[b].uncertainty_ns);
      EXPECT_EQ(pair, m.pairUncertaintyNs(m.domains[b].id, m.domains[a].id));
    }
  }
}

// A binary tree of 15 hosts (a tree all-reduce's messages): each host is bounded by its parent
// alone, so its uncertainty against the reference compounds per level, but two hosts that
// exchanged messages are bounded by those messages: the tree of domains keeps that.
TEST_F(AlignTest, PairBoundsFollowTheTreeOfMessages) {
  std::vector<HostClock> hosts;
  std::vector<Rank> ranks;
  for (int i = 0; i < 15; ++i) {
    hosts.push_back({"h" + std::to_string(i), (i * 7 + 1) * kHourNs + i * 123'457});
    ranks.push_back({i, i});
  }
  const std::string trace = writeTreeTrace(hosts, 30, 20'000'000, 20'000, 60'000);
  const ClockModel m = realign(trace);
  ASSERT_EQ(m.domains.size(), 15u);
  for (const storage::ClockDomain& d : m.domains) {
    EXPECT_EQ(d.violated, 0);
    if (d.id == 0) {
      EXPECT_EQ(d.parent, -1);
      continue;
    }
    EXPECT_EQ(d.method, "evidence");
    // Hung from its parent in the messages' tree, by the window its messages leave: 20 + 60 us,
    // +/-40 us about the midpoint.
    EXPECT_EQ(d.parent, (d.id - 1) / 2) << d.id;
    EXPECT_NEAR(static_cast<double>(d.parent_uncertainty_ns), 40'000.0, 1'000.0) << d.id;
  }
  // Three levels down the uncertainty against the reference is three hops; two leaves under one
  // parent are two hops apart, not six; a leaf and its parent one.
  EXPECT_NEAR(static_cast<double>(m.domains[7].uncertainty_ns), 120'000.0, 3'000.0);
  EXPECT_LE(m.pairUncertaintyNs(7, 8), 82'000);
  EXPECT_LE(m.pairUncertaintyNs(7, 3), 41'000);
  EXPECT_GE(m.domains[7].uncertainty_ns + m.domains[8].uncertainty_ns, 230'000);
  expectPairsHold(m, hosts, ranks, kFirstCallNs + 100'000'000);
  // The errors are real: the midpoints are 20 us off per hop, 60 us at the leaves.
  const int64_t leaf = mapped(m, 7, hosts[7].raw(kFirstCallNs)) - (hosts[0].offset_ns - hosts[7].offset_ns);
  EXPECT_GT(std::llabs(leaf - mapped(m, 0, 0)), 40'000);

  // Stored and read back as fitted.
  std::string error;
  auto reader = storage::TraceReader::open(trace, &error);
  ASSERT_TRUE(reader) << error;
  const ClockModel& read = reader->clockModel();
  ASSERT_EQ(read.domains.size(), m.domains.size());
  for (size_t d = 0; d < m.domains.size(); ++d) {
    EXPECT_EQ(read.domains[d].parent, m.domains[d].parent);
    EXPECT_EQ(read.domains[d].parent_uncertainty_ns, m.domains[d].parent_uncertainty_ns);
  }
  // A model without the tree (a version-6 trace): the sum, as before.
  ClockModel old = m;
  for (storage::ClockDomain& d : old.domains) d.parent = -1, d.parent_uncertainty_ns = -1;
  EXPECT_EQ(old.pairUncertaintyNs(7, 8), m.domains[7].uncertainty_ns + m.domains[8].uncertainty_ns);
  EXPECT_EQ(old.pairUncertaintyNs(7, 7), 0);
}

// A damaged tree (a loop, a parent that does not exist, absurd bounds) never hangs the walk, and
// pairs it does not connect keep the sum of their own uncertainties.
TEST(PairUncertaintyTest, DamagedTreesFallBackToTheSum) {
  ClockModel m;
  for (int i = 0; i < 4; ++i) {
    storage::ClockDomain d;
    d.id = i;
    d.uncertainty_ns = 1000 * i;
    m.domains.push_back(d);
  }
  m.domains[1].parent = 2, m.domains[1].parent_uncertainty_ns = 10;
  m.domains[2].parent = 1, m.domains[2].parent_uncertainty_ns = 10;  // a loop
  m.domains[3].parent = 99, m.domains[3].parent_uncertainty_ns = 1;  // no such domain
  EXPECT_EQ(m.pairUncertaintyNs(1, 2), 10);
  EXPECT_EQ(m.pairUncertaintyNs(1, 3), 4000);
  EXPECT_EQ(m.pairUncertaintyNs(3, 0), 3000);
  EXPECT_EQ(m.pairUncertaintyNs(-1, 1), 3000 + 1000);  // unknown: the least certain domain
  m.domains[3].uncertainty_ns = INT64_MAX;
  m.domains[3].parent = 0, m.domains[3].parent_uncertainty_ns = INT64_MAX;
  EXPECT_EQ(m.pairUncertaintyNs(3, 1), INT64_MAX);
}

TEST_F(AlignTest, HostsHoursApartLandOnOneTimeLine) {
  const std::vector<HostClock> hosts = {{"h0", 1 * kHourNs}, {"h1", 9 * kHourNs}, {"h2", 30 * kHourNs}};
  const std::vector<Rank> ranks = {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}};
  const std::string trace = writeTrace(hosts, ranks, 50, 10'000'000);
  const ClockModel m = realign(trace);
  ASSERT_EQ(m.domains.size(), 3u);
  EXPECT_EQ(m.domains[0].method, "reference");
  EXPECT_EQ(m.domains[1].ranks, (std::vector<int32_t>{2, 3}));
  for (int d = 1; d < 3; ++d) {
    const auto& dom = m.domains[static_cast<size_t>(d)];
    EXPECT_EQ(dom.method, "evidence");
    EXPECT_EQ(dom.violated, 0);
    const int rank = dom.ranks.front();
    const HostClock& h = hosts[static_cast<size_t>(d)];
    const int64_t truth = hosts[0].offset_ns - h.offset_ns;
    EXPECT_NEAR(static_cast<double>(mapped(m, rank, h.raw(6'000'000'000))), static_cast<double>(truth), 20'000)
        << "domain " << d;
    EXPECT_GT(dom.uncertainty_ns, 0);
    EXPECT_LT(dom.uncertainty_ns, 100'000);
  }
  EXPECT_EQ(m.messages_before_sent, 0);
  EXPECT_GT(m.messages_checked, 0);
  EXPECT_NE(describeModel(m).find("3 clock domains (h0, h1, h2)"), std::string::npos) << describeModel(m);
  // Calls with tight windows and a ring's messages: the pairs hold too.
  expectPairsHold(m, hosts, {{0, 0}, {1, 0}, {2, 1}, {3, 1}, {4, 2}}, 6'000'000'000);

  // Readers see aligned times: every call of one instance within 1 ms across hosts.
  std::string error;
  auto reader = storage::TraceReader::open(trace, &error);
  ASSERT_TRUE(reader) << error;
  EXPECT_TRUE(reader->timesAligned());
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  ASSERT_TRUE(reader->forEachCollective(
      [&](const storage::CollectiveRow& r) {
        if (r.seq == 0) {
          lo = std::min(lo, r.start_ns);
          hi = std::max(hi, r.start_ns);
        }
        return true;
      },
      &error));
  EXPECT_LT(hi - lo, 1'000'000);
  // Transfers come in aligned order.
  int64_t last = INT64_MIN;
  bool ordered = true;
  int64_t seen = 0;
  ASSERT_TRUE(reader->forEachTransfer(
      [&](const storage::TransferRow& r) {
        ordered = ordered && r.start_ns >= last;
        last = r.start_ns;
        ++seen;
        return true;
      },
      &error));
  EXPECT_TRUE(ordered);
  EXPECT_EQ(seen, reader->transferCount());
  // Raw reads stay as recorded.
  storage::TraceOpenOptions raw;
  raw.raw_times = true;
  auto raw_reader = storage::TraceReader::open(trace, raw, &error);
  ASSERT_TRUE(raw_reader);
  EXPECT_FALSE(raw_reader->timesAligned());
}

TEST_F(AlignTest, DriftIsFittedAtTheStartAndTheEnd) {
  // h1 runs 20 ppm fast: 1.2 ms over the 60 s run.
  const std::vector<HostClock> hosts = {{"h0", kHourNs}, {"h1", 2 * kHourNs, 20e-6}};
  const std::vector<Rank> ranks = {{0, 0}, {1, 1}};
  const std::string trace = writeTrace(hosts, ranks, 600, 100'000'000);
  const ClockModel m = realign(trace);
  ASSERT_EQ(m.domains.size(), 2u);
  EXPECT_NEAR(m.domains[1].drift_ppm, -20.0, 0.5);
  for (int64_t t : {5'000'000'000LL, 64'900'000'000LL}) {
    const int64_t raw = hosts[1].raw(t);
    const int64_t truth = (hosts[0].raw(t)) - raw;
    EXPECT_NEAR(static_cast<double>(mapped(m, 1, raw)), static_cast<double>(truth), 20'000) << t;
  }
}

TEST_F(AlignTest, CallsAloneAlsoAlign) {
  const std::vector<HostClock> hosts = {{"h0", kHourNs}, {"h1", 5 * kHourNs}};
  const std::string trace = writeTrace(hosts, {{0, 0}, {1, 1}}, 40, 10'000'000);
  AlignOptions calls_only;
  calls_only.use_messages = false;
  const ClockModel m = realign(trace, calls_only);
  EXPECT_EQ(m.messages_checked, 0);
  EXPECT_NEAR(static_cast<double>(mapped(m, 1, hosts[1].raw(6'000'000'000))),
              static_cast<double>(hosts[0].offset_ns - hosts[1].offset_ns), 100'000);
}

TEST_F(AlignTest, AHostWithoutCallsIsPlacedByItsWallClock) {
  const std::vector<HostClock> hosts = {{"h0", kHourNs}, {"h1", 3 * kHourNs}, {"h2", 7 * kHourNs}};
  const std::string trace = writeTrace(hosts, {{0, 0}, {1, 1}, {2, 2}}, 20, 10'000'000, {2});
  const ClockModel m = realign(trace);
  ASSERT_EQ(m.domains.size(), 3u);
  const storage::ClockDomain& silent = m.domains[2];
  EXPECT_EQ(silent.method, "wall-clock");
  EXPECT_EQ(silent.ranks, (std::vector<int32_t>{2}));
  EXPECT_EQ(silent.uncertainty_ns, AlignOptions{}.wall_clock_error_ns);
  EXPECT_EQ(m.method, "wall-clock");
  // The wall clocks put it 6 ms (2 x 3 ms of NTP error) from the truth: within its uncertainty.
  const int64_t err = mapped(m, 2, hosts[2].raw(6'000'000'000)) - (hosts[0].offset_ns - hosts[2].offset_ns);
  EXPECT_LE(std::llabs(err), silent.uncertainty_ns);
  EXPECT_NE(describeModel(m).find("wall clock only"), std::string::npos);
}

// The reference's clock read 0.3 s at its start; h1's ranks started 1 s before the first call,
// 0.5 s before the reference's clock read zero: the time line moves so that nothing of the
// trace maps below zero (a generated 128-host trace lost 41,295 rows there), and every domain
// moves by the same amount.
TEST_F(AlignTest, NothingMapsBeforeZero) {
  std::vector<HostClock> hosts = {{"h0", -4'500'000'000}, {"h1", 2 * kHourNs}};
  hosts[0].starts_before_ns = 200'000'000;
  const std::string trace = writeTrace(hosts, {{0, 0}, {1, 1}}, 20, 10'000'000);
  const ClockModel m = realign(trace);
  ASSERT_EQ(m.domains.size(), 2u);
  const int64_t h1_start = hosts[1].raw(4'000'000'000);
  EXPECT_NEAR(static_cast<double>(storage::ClockMap(m).map(1, h1_start)), 0.0, 20'000);
  const int64_t shift = mapped(m, 0, 0);
  EXPECT_NEAR(static_cast<double>(shift), 500'000'000.0, 20'000);
  EXPECT_EQ(m.domains[0].offset_ns, shift);
  // h1 against h0 as fitted, plus the same shift.
  EXPECT_NEAR(static_cast<double>(mapped(m, 1, hosts[1].raw(6'000'000'000))),
              static_cast<double>(hosts[0].offset_ns - hosts[1].offset_ns + shift), 20'000);
  std::string error;
  auto reader = storage::TraceReader::open(trace, &error);
  ASSERT_TRUE(reader) << error;
  int64_t lowest = INT64_MAX;
  reader->forEachCollective([&](const storage::CollectiveRow& r) { return lowest = std::min(lowest, r.start_ns), true; },
                            &error);
  EXPECT_GE(lowest, 0);
}

TEST_F(AlignTest, OneHostIsTheIdentity) {
  const std::vector<HostClock> hosts = {{"h0", kHourNs}};
  const std::string trace = writeTrace(hosts, {{0, 0}, {1, 0}, {2, 0}}, 10, 10'000'000);
  const ClockModel m = realign(trace);
  EXPECT_EQ(m.domains.size(), 1u);
  EXPECT_TRUE(m.identity());
  EXPECT_TRUE(m.segments.empty());
  EXPECT_EQ(describeModel(m), "");
  std::string error;
  auto reader = storage::TraceReader::open(trace, &error);
  storage::TraceOpenOptions raw_options;
  raw_options.raw_times = true;
  auto raw = storage::TraceReader::open(trace, raw_options, &error);
  ASSERT_TRUE(reader && raw) << error;
  EXPECT_FALSE(reader->timesAligned());
  std::vector<int64_t> a, b;
  reader->forEachTransfer([&](const storage::TransferRow& r) { return a.push_back(r.start_ns), true; }, &error);
  raw->forEachTransfer([&](const storage::TransferRow& r) { return b.push_back(r.start_ns), true; }, &error);
  EXPECT_EQ(a, b);  // to the nanosecond
}

}  // namespace
}  // namespace ringside::align
