#include "storage_test_util.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>

#include "temp_dir.h"

namespace ringside::storage::testing {

void TempDirTest::SetUp() {
  dir_ = test_support::makeTempDir("storage-test");
  ASSERT_FALSE(dir_.empty());
}

void TempDirTest::TearDown() { test_support::removeTempDir(dir_); }

std::unique_ptr<RankWriter> writeRankFile(const std::string& path, const RankFileSpec& spec) {
  std::string err;
  auto w = RankWriter::create(path, &err);
  EXPECT_TRUE(w) << err;
  if (!w) return nullptr;
  RankInfo info;
  info.rank = spec.rank;
  info.world_size = spec.world_size;
  info.local_rank = spec.rank;
  info.host = spec.host;
  info.pid = spec.pid >= 0 ? spec.pid : 1000 + spec.rank;
  info.launcher = "torchrun";
  info.start_ns = 5'000;
  info.start_unix_ns = spec.start_unix_ns;
  info.command_line = "python train.py";
  info.identity_source = "env";
  EXPECT_TRUE(w->setRank(info)) << w->error();
  EXPECT_TRUE(w->setMeta("tool_version", "0.1.0")) << w->error();
  EXPECT_TRUE(w->begin()) << w->error();
  // Odd ranks see 'broadcast' first so their string ids differ from even ranks'.
  const char* ops[2] = {"allreduce", "broadcast"};
  for (int i = 0; i < spec.collectives; ++i) {
    CollectiveRow c;
    c.id = spec.first_id + i;
    c.rank = spec.rank;
    c.comm = "world";
    c.seq = i;
    c.op = ops[(i + spec.rank) % 2];
    c.library = "gloo";
    c.bytes = 1024 * (i + 1);
    c.count = 256 * (i + 1);
    c.dtype = "f32";
    c.reduce_op = c.op == std::string_view("allreduce") ? "sum" : "";
    c.start_ns = 10'000 + 1'000 * i + spec.rank;
    c.end_ns = c.start_ns + 500;
    c.root = c.op == std::string_view("broadcast") ? 0 : -1;
    c.tid = 42;
    EXPECT_TRUE(w->addCollective(c)) << w->error();
    for (int k = 0; k < spec.transfers_per_call; ++k) {
      TransferRow t;
      t.collective_id = c.id;
      const bool send = k % 2 == 0;
      t.src_rank = send ? spec.rank : (spec.rank + spec.world_size - 1) % spec.world_size;
      t.dst_rank = send ? (spec.rank + 1) % spec.world_size : spec.rank;
      t.bytes = 512;
      t.start_ns = c.start_ns + 10 * k;
      t.end_ns = t.start_ns + 5;
      t.side = send ? "send" : "recv";
      t.phase = "reduce-scatter";
      t.step = k;
      t.chunk = 0;
      EXPECT_TRUE(w->addTransfer(t)) << w->error();
    }
  }
  EXPECT_TRUE(w->commit()) << w->error();
  if (spec.clean) {
    EXPECT_TRUE(w->setMeta("end_state", "clean")) << w->error();
  }
  if (spec.close) {
    EXPECT_TRUE(w->close()) << w->error();
    return nullptr;
  }
  return w;
}

namespace {
sqlite3* openRaw(const std::string& db_path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path << ": " << sqlite3_errmsg(db);
  }
  return db;
}
}  // namespace

int64_t sqlInt(const std::string& db_path, const std::string& sql) {
  sqlite3* db = openRaw(db_path);
  sqlite3_stmt* st = nullptr;
  int64_t v = -12345;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    v = sqlite3_column_int64(st, 0);
  } else {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

std::string sqlText(const std::string& db_path, const std::string& sql) {
  sqlite3* db = openRaw(db_path);
  sqlite3_stmt* st = nullptr;
  std::string v = "<none>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
    const unsigned char* t = sqlite3_column_text(st, 0);
    v = t ? reinterpret_cast<const char*>(t) : "<null>";
  } else {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

void sqlExec(const std::string& db_path, const std::string& sql) {
  sqlite3* db = openRaw(db_path);
  char* msg = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg) != SQLITE_OK) ADD_FAILURE() << sql << ": " << msg;
  sqlite3_free(msg);
  sqlite3_close(db);
}

std::vector<char> readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

void writeBytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool fileExists(const std::string& path) {
  struct stat sb {};
  return ::lstat(path.c_str(), &sb) == 0;
}

bool isOneLine(const std::string& s) { return !s.empty() && s.find('\n') == std::string::npos; }

}  // namespace ringside::storage::testing
