// A sweep of damaged copies of a real trace: truncations and single-bit flips.
// Reader (opened with the whole file checked, and as report opens it) and merger must either succeed or fail with one clean line; they must
// never crash (this runs under ASan/UBSan too).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "ringside/storage/merge.h"
#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

class CorruptionTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    good_ = path("good.sqlite");
    RankFileSpec spec;
    spec.collectives = 300;  // a few dozen pages: table interiors, strings, meta
    writeRankFile(good_, spec);
    bytes_ = readBytes(good_);
    ASSERT_GT(bytes_.size(), 8192u);
    other_ = path("rank1.sqlite");
    spec.rank = 1;
    writeRankFile(other_, spec);
  }

  // Reads everything a client could; returns "ok" or the first error line. `by_reading`: open
  // as report, diff and simulate do (transfer_data checked as it is read).
  std::string readAll(const std::string& file, bool by_reading = false) {
    std::string err;
    TraceOpenOptions options;
    options.transfers_checked_by_reading = by_reading;
    auto r = TraceReader::open(file, options, &err);
    if (!r) return err;
    r->ranks();
    r->meta();
    r->collectiveCount();
    r->transferCount();
    int64_t sum = 0;
    if (!r->forEachCollective(
            [&](const CollectiveRow& c) {
              sum += c.bytes + static_cast<int64_t>(c.op.size() + c.comm.size() + c.dtype.size());
              return true;
            },
            &err)) {
      return err;
    }
    if (!r->forEachTransfer(
            [&](const TransferRow& t) {
              sum += t.bytes + static_cast<int64_t>(t.side.size() + t.phase.size());
              return true;
            },
            &err)) {
      return err;
    }
    return "ok";
  }

  void check(const std::string& variant, const std::string& label) {
    const std::string outcome = readAll(variant);
    if (std::getenv("RINGSIDE_TEST_VERBOSE")) std::printf("%s: %s\n", label.c_str(), outcome.c_str());
    if (outcome != "ok") {
      EXPECT_TRUE(isOneLine(outcome)) << label << ": " << outcome;
      EXPECT_NE(outcome.find(variant), std::string::npos) << label << ": " << outcome;
      ++refused_;
    }
    // Opened as report opens it: one line too, and never a refusal of what the whole check
    // passed.
    const std::string by_reading = readAll(variant, /*by_reading=*/true);
    if (by_reading != "ok") {
      EXPECT_NE(outcome, "ok") << label << ": " << by_reading;
      EXPECT_TRUE(isOneLine(by_reading)) << label << ": " << by_reading;
      EXPECT_NE(by_reading.find(variant), std::string::npos) << label << ": " << by_reading;
    }
    MergeOptions o;
    o.inputs = {variant, other_};
    o.output = path("merged.sqlite");
    o.overwrite = true;
    const MergeResult m = mergeRankFiles(o);
    // The intact input always survives; the damaged one is merged or skipped.
    EXPECT_TRUE(m.ok) << label << ": " << m.error;
    for (const auto& w : m.warnings) EXPECT_TRUE(isOneLine(w)) << label << ": " << w;
    if (m.ok) {
      std::string err;
      EXPECT_TRUE(TraceReader::open(o.output, &err)) << label << ": " << err;
    }
  }

  std::string good_, other_;
  std::vector<char> bytes_;
  int refused_ = 0;
};

TEST_F(CorruptionTest, Truncations) {
  const std::string variant = path("truncated.sqlite");
  const size_t n = bytes_.size();
  for (int i = 0; i < 100; ++i) {
    // Dense near the header and page 1, then spread over the file.
    const size_t cut = i < 20 ? static_cast<size_t>(i) * 7 : (n * static_cast<size_t>(i - 20)) / 80 + 13;
    std::vector<char> v(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(std::min(cut, n)));
    writeBytes(variant, v);
    check(variant, "truncated at " + std::to_string(cut));
  }
  EXPECT_GT(refused_, 20);
}

TEST_F(CorruptionTest, BitFlips) {
  const std::string variant = path("flipped.sqlite");
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < 100; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    // A third of the flips hit the 100-byte header and page 1 (schema).
    const size_t span = i % 3 == 0 ? std::min<size_t>(4096, bytes_.size()) : bytes_.size();
    const size_t at = static_cast<size_t>(x % span);
    std::vector<char> v = bytes_;
    v[at] = static_cast<char>(v[at] ^ (1 << ((x >> 32) % 8)));
    writeBytes(variant, v);
    check(variant, "bit flip at " + std::to_string(at));
  }
}

}  // namespace
}  // namespace ringside::storage::testing
