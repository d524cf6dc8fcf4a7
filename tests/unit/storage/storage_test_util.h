// Helpers shared by the storage unit tests: a scratch folder per test and a
// small synthetic rank file with closed-form contents.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ringside/storage/rank_writer.h"
#include "ringside/storage/records.h"

namespace ringside::storage::testing {

// A fresh folder under /tmp, removed with its contents at teardown.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string dir_;
};

struct RankFileSpec {
  int rank = 0;
  int world_size = 4;
  int collectives = 10;        // ids first_id .. first_id+collectives-1
  int transfers_per_call = 2;  // each call: one send to rank+1, one recv from rank-1
  int64_t first_id = 1;
  bool clean = true;           // meta end_state='clean'
  bool close = true;           // close the writer (else it is left open: a live file)
  int64_t start_unix_ns = 1'700'000'000'000'000'000;
  std::string host = "host-a";
  int64_t pid = -1;  // -1: 1000 + rank
};

// Writes a rank file; returns the writer when spec.close is false (kept open).
std::unique_ptr<RankWriter> writeRankFile(const std::string& path, const RankFileSpec& spec);

// Raw SQL helpers on any SQLite file (tests only).
int64_t sqlInt(const std::string& db_path, const std::string& sql);
std::string sqlText(const std::string& db_path, const std::string& sql);
void sqlExec(const std::string& db_path, const std::string& sql);

std::vector<char> readBytes(const std::string& path);
void writeBytes(const std::string& path, const std::vector<char>& bytes);
bool fileExists(const std::string& path);
bool isOneLine(const std::string& s);

}  // namespace ringside::storage::testing
