// transfer_data checked as it is read (TraceOpenOptions::transfers_checked_by_reading, what
// report, diff and simulate open with): one damaged page of the table at a time — a leaf zeroed,
// a leaf overwritten by another, an interior page's divider key or child pointer changed — and
// forEachTransfer either gives exactly the intact rows or fails with one "corrupt trace" line
// naming the file; never other rows. Damage only in an index the read does not use leaves the
// read as it was, and a read that uses it checks the table whole first. The open with the whole
// file's check refuses every one of these files.
#include <sqlite3.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ringside/storage/trace_reader.h"
#include "storage_test_util.h"

namespace ringside::storage::testing {
namespace {

uint32_t be32(const std::vector<char>& b, size_t at) {
  auto u = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(b[at + k])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}
uint16_t be16(const std::vector<char>& b, size_t at) {
  auto u = [&](size_t k) { return static_cast<uint16_t>(static_cast<unsigned char>(b[at + k])); };
  return static_cast<uint16_t>((u(0) << 8) | u(1));
}
void putBe32(std::vector<char>* b, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) (*b)[at + static_cast<size_t>(k)] = static_cast<char>(v >> (24 - 8 * k));
}

// A b-tree page's place in the file (page 1 is never a table's root here).
struct Page {
  size_t offset;
  unsigned char flag;  // 0x05 table interior, 0x0D table leaf, 0x02/0x0A index
};

class TransferCheckTest : public TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    good_ = path("good.sqlite");
    RankFileSpec spec;
    spec.collectives = 3000;  // 6,000 transfer rows: a few dozen leaves under one interior page
    writeRankFile(good_, spec);
    sqlExec(good_, "CREATE INDEX IF NOT EXISTS transfer_by_time ON transfer_data(start_ns)");
    page_size_ = static_cast<size_t>(sqlInt(good_, "PRAGMA page_size"));
    root_ = static_cast<uint32_t>(
        sqlInt(good_, "SELECT rootpage FROM sqlite_schema WHERE name = 'transfer_data'"));
    index_root_ = static_cast<uint32_t>(
        sqlInt(good_, "SELECT rootpage FROM sqlite_schema WHERE name = 'transfer_by_time'"));
    bytes_ = readBytes(good_);
    intact_ = read(good_);
    ASSERT_EQ(intact_.rfind("ok ", 0), 0u) << intact_;
    ASSERT_EQ(page(root_).flag, 0x05) << "the table's root is not an interior page";
  }

  Page page(uint32_t number) const {
    const size_t offset = (static_cast<size_t>(number) - 1) * page_size_;
    return {offset, static_cast<unsigned char>(bytes_[offset])};
  }
  // The root's cells: the offset of each in the file (child pointer, then the divider key).
  std::vector<size_t> rootCells() const {
    const Page root = page(root_);
    std::vector<size_t> cells;
    for (uint16_t i = 0; i < be16(bytes_, root.offset + 3); ++i)
      cells.push_back(root.offset + be16(bytes_, root.offset + 12 + 2 * static_cast<size_t>(i)));
    return cells;
  }
  // The root's children in order (the right-most last): here, the table's leaves.
  std::vector<uint32_t> leaves() const {
    std::vector<uint32_t> out;
    for (size_t cell : rootCells()) out.push_back(be32(bytes_, cell));
    out.push_back(be32(bytes_, page(root_).offset + 8));
    return out;
  }

  // "ok <ids> <sum>" or the error, after every transfer read through forEachTransfer with the
  // transfers checked by reading.
  static std::string read(const std::string& file) {
    TraceOpenOptions o;
    o.transfers_checked_by_reading = true;
    std::string err;
    auto r = TraceReader::open(file, o, &err);
    if (!r) return "open: " + err;
    std::string ids;
    int64_t sum = 0;
    if (!r->forEachTransfer(
            [&](const TransferRow& t) {
              ids += std::to_string(t.id) + ',';
              sum += t.bytes + t.start_ns + t.end_ns + t.src_rank + t.dst_rank;
              return true;
            },
            &err)) {
      return err;
    }
    return "ok " + ids + " " + std::to_string(sum);
  }

  // Writes `bytes` as a damaged copy and reads it: the intact rows, or one line naming the file
  // that says the trace is corrupt. Returns true for the error.
  bool readDamaged(const std::vector<char>& bytes, const std::string& label) {
    const std::string file = path("damaged.sqlite");
    writeBytes(file, bytes);
    std::string err;
    EXPECT_FALSE(TraceReader::open(file, &err)) << label << ": the whole check passed it";
    const std::string got = read(file);
    if (std::getenv("RINGSIDE_TEST_VERBOSE")) std::printf("%s: %s\n", label.c_str(), got.substr(0, 160).c_str());
    if (got == intact_) return false;
    EXPECT_TRUE(isOneLine(got)) << label << ": " << got;
    EXPECT_NE(got.find(file + ": corrupt trace: "), std::string::npos) << label << ": " << got;
    return true;
  }

  std::string good_, intact_;
  std::vector<char> bytes_;
  size_t page_size_ = 0;
  uint32_t root_ = 0, index_root_ = 0;
};

TEST_F(TransferCheckTest, DamagedLeavesFailTheRead) {
  const std::vector<uint32_t> leaves = this->leaves();
  ASSERT_GT(leaves.size(), 8u);
  for (size_t i = 0; i < leaves.size(); ++i) {
    const size_t at = page(leaves[i]).offset;
    std::vector<char> zeroed = bytes_;
    std::memset(zeroed.data() + at, 0, page_size_);
    EXPECT_TRUE(readDamaged(zeroed, "leaf " + std::to_string(i) + " zeroed"));
    // Another leaf's rows in its place: a well-formed page whose ids are out of order.
    std::vector<char> copied = bytes_;
    const size_t other = page(leaves[(i + 3) % leaves.size()]).offset;
    std::memcpy(copied.data() + at, bytes_.data() + other, page_size_);
    EXPECT_TRUE(readDamaged(copied, "leaf " + std::to_string(i) + " overwritten"));
  }
}

TEST_F(TransferCheckTest, DamagedInteriorPageNeverGivesOtherRows) {
  const std::vector<uint32_t> leaves = this->leaves();
  const std::vector<size_t> cells = rootCells();
  int refused = 0;
  for (size_t i = 0; i < cells.size(); ++i) {
    // A child pointer to another leaf: that leaf's rows twice, this one's never.
    std::vector<char> pointer = bytes_;
    putBe32(&pointer, cells[i], leaves[(i + 2) % leaves.size()]);
    refused += readDamaged(pointer, "child " + std::to_string(i) + " redirected");
    // The divider key (a 2-byte varint: ids of thousands) made larger or smaller: the scan does
    // not use it, the seeks of the second read do.
    for (unsigned char high : {0xFF, 0x81}) {
      std::vector<char> divider = bytes_;
      const size_t key = cells[i] + 4;
      if ((static_cast<unsigned char>(divider[key]) & 0x80) == 0) continue;  // 1 byte: skip
      divider[key] = static_cast<char>(high);
      const std::string label = "divider " + std::to_string(i) + " set high byte " +
                                std::to_string(high);
      const std::string file = path("damaged.sqlite");
      writeBytes(file, divider);
      const std::string got = read(file);
      if (std::getenv("RINGSIDE_TEST_VERBOSE")) std::printf("%s: %s\n", label.c_str(), got.substr(0, 160).c_str());
      if (got != intact_) {
        EXPECT_NE(got.find(file + ": corrupt trace: "), std::string::npos) << label << ": " << got;
        EXPECT_TRUE(isOneLine(got)) << label;
        ++refused;
      }
    }
  }
  EXPECT_GE(refused, static_cast<int>(cells.size()));
}

TEST_F(TransferCheckTest, DamagedIndexIsCheckedOnlyByTheReadsThatUseIt) {
  const Page index = page(index_root_);
  std::vector<char> bytes = bytes_;
  // The index's root page zeroed: the lanes read never touches it.
  std::memset(bytes.data() + index.offset, 0, page_size_);
  const std::string file = path("index.sqlite");
  writeBytes(file, bytes);
  std::string err;
  EXPECT_FALSE(TraceReader::open(file, &err));
  EXPECT_NE(err.find("corrupt trace"), std::string::npos) << err;
  EXPECT_EQ(read(file), intact_);
  // A read of transfer_data that does not check what it reads checks it whole first.
  TraceOpenOptions o;
  o.transfers_checked_by_reading = true;
  auto r = TraceReader::open(file, o, &err);
  ASSERT_TRUE(r) << err;
  err.clear();
  EXPECT_FALSE(r->forEachTransferUnordered([](int32_t, const TransferRow&) { return true; }, &err));
  EXPECT_NE(err.find(file + ": corrupt trace: "), std::string::npos) << err;
  EXPECT_TRUE(isOneLine(err)) << err;
}

TEST_F(TransferCheckTest, DamageOutsideTransfersFailsTheOpen) {
  // A leaf of collective_data zeroed: checked at open, as before.
  const auto root = static_cast<uint32_t>(
      sqlInt(good_, "SELECT rootpage FROM sqlite_schema WHERE name = 'collective_data'"));
  std::vector<char> bytes = bytes_;
  const Page p = page(root);
  const uint32_t victim = p.flag == 0x05 ? be32(bytes_, p.offset + 8) : root;
  std::memset(bytes.data() + page(victim).offset, 0, page_size_);
  const std::string file = path("calls.sqlite");
  writeBytes(file, bytes);
  const std::string got = read(file);
  EXPECT_EQ(got.rfind("open: " + file + ": corrupt trace: ", 0), 0u) << got;
  EXPECT_TRUE(isOneLine(got)) << got;
}

}  // namespace
}  // namespace ringside::storage::testing
