// storage/src/trace_reader.cpp — streaming, defensive reader of a trace.
//
// Queries only the physical tables with SQL written here (never the views
// stored in the file, which a damaged or hostile file could redefine), and
// resolves string ids through an in-memory copy of the string table.
#include "ringside/storage/trace_reader.h"

#include <algorithm>
#include <new>
#include <string>
#include <unordered_map>

#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::Db;
using detail::Stmt;

std::string columnText(sqlite3_stmt* st, int index) {
  const unsigned char* text = sqlite3_column_text(st, index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(st, index)));
}

int32_t toInt32(int64_t v) {
  // Damaged files may hold anything; clamp rather than wrap.
  if (v > INT32_MAX) return INT32_MAX;
  if (v < INT32_MIN) return INT32_MIN;
  return static_cast<int32_t>(v);
}

class SqliteTraceReader final : public TraceReader {
 public:
  SqliteTraceReader(std::string path, Db db, int version)
      : path_(std::move(path)), db_(std::move(db)), version_(version) {}

  int schemaVersion() const override { return version_; }
  std::vector<RankInfo> ranks() override;
  std::map<std::string, std::string> meta() override;
  int64_t collectiveCount() override { return count("SELECT count(*) FROM collective_data"); }
  int64_t transferCount() override { return count("SELECT count(*) FROM transfer_data"); }
  bool forEachCollective(const std::function<bool(const CollectiveRow&)>& fn, std::string* error) override;
  bool forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn, std::string* error) override;
  bool forEachTransfer(const std::function<bool(const TransferRow&)>& fn, std::string* error) override;
  int64_t gpuActivityCount() override {
    return version_ >= 2 ? count("SELECT count(*) FROM gpu_activity_data") : 0;
  }
  bool forEachCollectiveGpu(const std::function<bool(const CollectiveGpuRow&)>& fn,
                            std::string* error) override;
  bool forEachGpuActivity(const std::function<bool(int32_t, const GpuActivityRow&)>& fn,
                          std::string* error) override;
  bool forEachCommunicator(const std::function<bool(int32_t, const CommunicatorRow&)>& fn,
                           std::string* error) override;

 private:
  // The one read loop of every forEach*: runs `sql`, calls `row` on each result row until it
  // returns false; `what` names the rows in errors. A template, so the per-row call inlines.
  template <typename Row>
  bool visit(const char* sql, const char* what, Row&& row, std::string* error) {
    try {
      if (!loadStrings(error)) return false;
      Stmt st = detail::prepare(db_.get(), sql, nullptr);
      if (!st) return readError(error, std::string("cannot read ") + what);
      int rc;
      while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
        if (!row(st.get())) return true;
      }
      if (rc != SQLITE_DONE) return readError(error, std::string("cannot read ") + what);
      return true;
    } catch (const std::bad_alloc&) {
      if (error) *error = path_ + ": out of memory while reading " + what;
      return false;
    }
  }
  int64_t count(const char* sql);
  bool loadStrings(std::string* error);
  std::string_view str(int64_t sid) const {
    if (sid == kNone) return {};
    // Writers number strings densely from 1: a flat table, the map only for stray ids.
    if (sid >= 0 && static_cast<uint64_t>(sid) < dense_strings_.size()) return dense_strings_[static_cast<size_t>(sid)];
    auto it = strings_.find(sid);
    return it == strings_.end() ? std::string_view() : std::string_view(it->second);
  }
  bool readError(std::string* error, std::string_view what) {
    if (error) *error = detail::oneLine(path_ + ": " + std::string(what) + ": " + detail::lastError(db_.get()));
    return false;
  }

  std::string path_;
  Db db_;
  int version_;
  bool strings_loaded_ = false;
  std::unordered_map<int64_t, std::string> strings_;
  std::vector<std::string_view> dense_strings_;  // [sid] -> strings_[sid] for sid < size
};

int64_t SqliteTraceReader::count(const char* sql) {
  int64_t n = 0;
  try {
    if (!detail::queryInt(db_.get(), sql, &n, nullptr)) return -1;
  } catch (...) {
    return -1;
  }
  return n;
}

std::vector<RankInfo> SqliteTraceReader::ranks() {
  std::vector<RankInfo> out;
  try {
    Stmt st = detail::prepare(db_.get(),
                              "SELECT rank, world_size, local_rank, host, pid, launcher, clock, start_ns,"
                              " start_unix_ns, command_line, identity_source FROM rank"
                              " ORDER BY rank, start_unix_ns",
                              nullptr);
    if (!st) return out;
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      RankInfo r;
      r.rank = toInt32(detail::columnNullable(s, 0));
      r.world_size = toInt32(detail::columnNullable(s, 1));
      r.local_rank = toInt32(detail::columnNullable(s, 2));
      r.host = columnText(s, 3);
      r.pid = sqlite3_column_int64(s, 4);
      r.launcher = columnText(s, 5);
      r.clock = columnText(s, 6);
      r.start_ns = sqlite3_column_int64(s, 7);
      r.start_unix_ns = sqlite3_column_int64(s, 8);
      r.command_line = columnText(s, 9);
      r.identity_source = columnText(s, 10);
      out.push_back(std::move(r));
    }
  } catch (...) {
  }
  return out;
}

std::map<std::string, std::string> SqliteTraceReader::meta() {
  std::map<std::string, std::string> out;
  try {
    Stmt st = detail::prepare(db_.get(), "SELECT key, value FROM meta", nullptr);
    if (!st) return out;
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      out[columnText(st.get(), 0)] = columnText(st.get(), 1);
    }
  } catch (...) {
  }
  return out;
}

bool SqliteTraceReader::loadStrings(std::string* error) {
  if (strings_loaded_) return true;
  Stmt st = detail::prepare(db_.get(), "SELECT id, value FROM string", nullptr);
  if (!st) return readError(error, "cannot read strings");
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    strings_[sqlite3_column_int64(st.get(), 0)] = columnText(st.get(), 1);
  }
  if (rc != SQLITE_DONE) return readError(error, "cannot read strings");
  // Ids up to 4x the count (and at least 4096) go into the flat table; unknown ones stay "".
  const int64_t limit = std::max<int64_t>(4096, 4 * static_cast<int64_t>(strings_.size()));
  int64_t top = -1;
  for (const auto& [sid, value] : strings_) {
    if (sid >= 0 && sid < limit) top = std::max(top, sid);
  }
  dense_strings_.assign(static_cast<size_t>(top + 1), std::string_view());
  for (const auto& [sid, value] : strings_) {
    if (sid >= 0 && sid <= top) dense_strings_[static_cast<size_t>(sid)] = value;
  }
  strings_loaded_ = true;
  return true;
}

bool SqliteTraceReader::forEachCollective(const std::function<bool(const CollectiveRow&)>& fn,
                                          std::string* error) {
  // id breaks ties so the order is total; the merged index covers it.
  return visit("SELECT id, rank, comm_sid, seq, op_sid, library_sid, bytes, count, dtype_sid,"
               " reduce_op_sid, algorithm_sid, start_ns, end_ns, root, tid, status"
               " FROM collective_data ORDER BY rank, start_ns, id",
               "collectives",
               [&](sqlite3_stmt* s) {
                 CollectiveRow r;
                 r.id = sqlite3_column_int64(s, 0);
                 r.rank = toInt32(detail::columnNullable(s, 1));
                 r.comm = str(detail::columnNullable(s, 2));
                 r.seq = sqlite3_column_int64(s, 3);
                 r.op = str(detail::columnNullable(s, 4));
                 r.library = str(detail::columnNullable(s, 5));
                 r.bytes = sqlite3_column_int64(s, 6);
                 r.count = sqlite3_column_int64(s, 7);
                 r.dtype = str(detail::columnNullable(s, 8));
                 r.reduce_op = str(detail::columnNullable(s, 9));
                 r.algorithm = str(detail::columnNullable(s, 10));
                 r.start_ns = sqlite3_column_int64(s, 11);
                 r.end_ns = detail::columnNullable(s, 12);
                 r.root = toInt32(detail::columnNullable(s, 13));
                 r.tid = toInt32(sqlite3_column_int64(s, 14));
                 r.status = toInt32(sqlite3_column_int64(s, 15));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn,
                                                std::string* error) {
  return visit("SELECT id, rank, comm_sid, seq, op_sid, start_ns, end_ns, status"
               " FROM collective_data ORDER BY rank, start_ns, id",
               "collectives",
               [&](sqlite3_stmt* s) {
                 CollectiveRow r;
                 r.id = sqlite3_column_int64(s, 0);
                 r.rank = toInt32(detail::columnNullable(s, 1));
                 r.comm = str(detail::columnNullable(s, 2));
                 r.seq = sqlite3_column_int64(s, 3);
                 r.op = str(detail::columnNullable(s, 4));
                 r.start_ns = sqlite3_column_int64(s, 5);
                 r.end_ns = detail::columnNullable(s, 6);
                 r.status = toInt32(sqlite3_column_int64(s, 7));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachTransfer(const std::function<bool(const TransferRow&)>& fn, std::string* error) {
  const std::string sql = std::string("SELECT id, collective_id, src_rank, dst_rank, bytes, start_ns, end_ns,"
                                      " side_sid, phase_sid, step, chunk, slot, ") +
                          (version_ >= 2 ? "channel" : "NULL") + " FROM transfer_data ORDER BY start_ns, id";
  return visit(sql.c_str(), "transfers",
               [&](sqlite3_stmt* s) {
                 TransferRow r;
                 r.id = sqlite3_column_int64(s, 0);
                 r.collective_id = detail::columnNullable(s, 1);
                 r.src_rank = toInt32(detail::columnNullable(s, 2));
                 r.dst_rank = toInt32(detail::columnNullable(s, 3));
                 r.bytes = sqlite3_column_int64(s, 4);
                 r.start_ns = sqlite3_column_int64(s, 5);
                 r.end_ns = detail::columnNullable(s, 6);
                 r.side = str(detail::columnNullable(s, 7));
                 r.phase = str(detail::columnNullable(s, 8));
                 r.step = toInt32(detail::columnNullable(s, 9));
                 r.chunk = toInt32(detail::columnNullable(s, 10));
                 r.slot = detail::columnNullable(s, 11);
                 r.channel = toInt32(detail::columnNullable(s, 12));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachCollectiveGpu(const std::function<bool(const CollectiveGpuRow&)>& fn,
                                             std::string* error) {
  if (version_ < 2) return true;
  return visit("SELECT collective_id, gpu_start_ns, gpu_end_ns, algorithm_sid, protocol_sid, channels,"
               " group_id, stream, device FROM collective_gpu_data ORDER BY collective_id",
               "collective GPU rows",
               [&](sqlite3_stmt* s) {
                 CollectiveGpuRow r;
                 r.collective_id = sqlite3_column_int64(s, 0);
                 r.gpu_start_ns = detail::columnNullable(s, 1);
                 r.gpu_end_ns = detail::columnNullable(s, 2);
                 r.algorithm = str(detail::columnNullable(s, 3));
                 r.protocol = str(detail::columnNullable(s, 4));
                 r.channels = toInt32(detail::columnNullable(s, 5));
                 r.group_id = detail::columnNullable(s, 6);
                 r.stream = detail::columnNullable(s, 7);
                 r.device = toInt32(detail::columnNullable(s, 8));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachGpuActivity(const std::function<bool(int32_t, const GpuActivityRow&)>& fn,
                                           std::string* error) {
  if (version_ < 2) return true;
  return visit("SELECT id, rank, kind_sid, name_sid, start_ns, end_ns, device, stream, bytes, copy_kind_sid,"
               " correlation_id, collective_id FROM gpu_activity_data ORDER BY rank, start_ns, id",
               "GPU activity",
               [&](sqlite3_stmt* s) {
                 GpuActivityRow r;
                 r.id = sqlite3_column_int64(s, 0);
                 const int32_t rank = toInt32(detail::columnNullable(s, 1));
                 r.kind = str(detail::columnNullable(s, 2));
                 r.name = str(detail::columnNullable(s, 3));
                 r.start_ns = sqlite3_column_int64(s, 4);
                 r.end_ns = detail::columnNullable(s, 5);
                 r.device = toInt32(detail::columnNullable(s, 6));
                 r.stream = detail::columnNullable(s, 7);
                 r.bytes = detail::columnNullable(s, 8);
                 r.copy_kind = str(detail::columnNullable(s, 9));
                 r.correlation_id = detail::columnNullable(s, 10);
                 r.collective_id = detail::columnNullable(s, 11);
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachCommunicator(const std::function<bool(int32_t, const CommunicatorRow&)>& fn,
                                            std::string* error) {
  if (version_ < 2) return true;
  return visit("SELECT rank, comm_sid, library_sid, comm_rank, comm_size, parent_sid, created_ns, ended_ns,"
               " end_state_sid, topology FROM communicator_data ORDER BY rank, created_ns, comm_sid",
               "communicators",
               [&](sqlite3_stmt* s) {
                 CommunicatorRow r;
                 const int32_t rank = toInt32(detail::columnNullable(s, 0));
                 r.comm = str(detail::columnNullable(s, 1));
                 r.library = str(detail::columnNullable(s, 2));
                 r.comm_rank = toInt32(detail::columnNullable(s, 3));
                 r.comm_size = toInt32(detail::columnNullable(s, 4));
                 r.parent = str(detail::columnNullable(s, 5));
                 r.created_ns = detail::columnNullable(s, 6);
                 r.ended_ns = detail::columnNullable(s, 7);
                 r.end_state = str(detail::columnNullable(s, 8));
                 const std::string topology = columnText(s, 9);
                 r.topology = topology;
                 return fn(rank, r);
               },
               error);
}

}  // namespace

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path, std::string* error) {
  return open(path, TraceOpenOptions{}, error);
}

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path, const TraceOpenOptions& options,
                                               std::string* error) {
  try {
    int version = 0;
    Db db = detail::openTraceReadOnly(path, &version, error, options.quick_check);
    if (!db) return nullptr;
    return std::make_unique<SqliteTraceReader>(path, std::move(db), version);
  } catch (...) {
    if (error) *error = path + ": out of memory";
    return nullptr;
  }
}

}  // namespace ringside::storage
