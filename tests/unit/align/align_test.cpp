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
    const int64_t t0 = 5'000'000'000;  // true time of the first call
    for (const Rank& r : ranks) {
      const HostClock& h = hosts[static_cast<size_t>(r.host)];
      const std::string path = dir_.path() + "/rank" + std::to_string(r.rank) + ".sqlite";
      std::string error;
      auto w = storage::RankWriter::create(path, &error);
      EXPECT_TRUE(w) << error;
      storage::RankInfo info;
      info.rank = r.rank;
      info.world_size = n;
      info.host = h.name;
      info.boot_id = "boot-" + h.name;
      info.start_ns = h.raw(t0 - h.starts_before_ns);
      // Wall clocks off by a few ms per host, as NTP leaves them.
      info.start_unix_ns = 1'700'000'000'000'000'000 + (t0 - h.starts_before_ns) + 3'000'000 * r.host;
      EXPECT_TRUE(w->setRank(info));
      EXPECT_TRUE(w->begin());
      storage::ClockAnchorRow anchor{info.start_ns, info.start_unix_ns, 10};
      EXPECT_TRUE(w->addClockAnchor(anchor));
      const bool is_silent = std::find(silent.begin(), silent.end(), r.rank) != silent.end();
      for (int k = 0; k < calls && !is_silent; ++k) {
        const int64_t base = t0 + k * period_ns;
        const int64_t enter = base + ((r.rank * 7919 + k * 104729) % 200) * 1000;  // 0-199 us
        int64_t last = 0;
        for (const Rank& o : ranks) {
          if (std::find(silent.begin(), silent.end(), o.rank) != silent.end()) continue;
          last = std::max(last, base + ((o.rank * 7919 + k * 104729) % 200) * 1000);
        }
        const int64_t exit = last + 40'000 + r.rank * 1000;
        storage::CollectiveRow c;
        c.id = k + 1;
        c.rank = r.rank;
        c.comm = "world";
        c.seq = k;
        c.op = "allreduce";
        c.library = "gloo";
        c.bytes = 4096;
        c.count = 1024;
        c.start_ns = h.raw(enter);
        c.end_ns = h.raw(exit);
        EXPECT_TRUE(w->addCollective(c));
        // The ring: this rank sends to the next once all entered; the message lands 25 us later.
        const int next = (r.rank + 1) % n;
        const int prev = (r.rank + n - 1) % n;
        storage::TransferRow s;
        s.collective_id = c.id;
        s.src_rank = r.rank;
        s.dst_rank = next;
        s.bytes = 4096;
        s.start_ns = h.raw(last + 5'000);
        s.end_ns = h.raw(last + 10'000);
        s.side = "send";
        s.slot = k;
        EXPECT_TRUE(w->addTransfer(s));
        storage::TransferRow v = s;
        v.src_rank = prev;
        v.dst_rank = r.rank;
        v.start_ns = h.raw(enter);
        v.end_ns = h.raw(last + 30'000);
        v.side = "recv";
        EXPECT_TRUE(w->addTransfer(v));
      }
      EXPECT_TRUE(w->commit());
      EXPECT_TRUE(w->setMeta("end_state", "clean"));
      EXPECT_TRUE(w->close());
      files.push_back(path);
    }
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
