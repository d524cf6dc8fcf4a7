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

#include "columns.h"
#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::CollectiveGpuTable;
using detail::CollectiveTable;
using detail::columns;
using detail::CommunicatorTable;
using detail::Db;
using detail::GpuActivityTable;
using detail::MetaTable;
using detail::RankTable;
using detail::ColumnSet;
using detail::selectSql;
using detail::Stmt;
using detail::StringTable;
using detail::TransferTable;

// A text column, cut at `limit` bytes (the cut ends in kCutMarker): a hostile trace's megabyte
// names would otherwise be copied into every row, report line and exported event.
std::string columnText(sqlite3_stmt* st, int index, size_t limit = kMaxTextBytes) {
  const unsigned char* text = sqlite3_column_text(st, index);
  if (text == nullptr) return {};
  const auto bytes = static_cast<size_t>(sqlite3_column_bytes(st, index));
  const char* chars = reinterpret_cast<const char*>(text);
  if (bytes <= limit) return std::string(chars, bytes);
  size_t keep = limit - kCutMarker.size();
  // Do not end inside a UTF-8 sequence: back up to the start of the character that was cut.
  while (keep > 0 && (static_cast<unsigned char>(chars[keep]) & 0xC0) == 0x80) --keep;
  return std::string(chars, keep) + std::string(kCutMarker);
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
  const ClockModel& clockModel() override { return model_; }
  bool timesAligned() const override { return false; }
  bool forEachClockAnchor(const std::function<bool(int32_t, const ClockAnchorRow&)>& fn,
                          std::string* error) override {
    (void)fn;
    (void)error;
    return true;
  }

 private:
  // The one read loop of every forEach*: runs `sql`, calls `row` on each result row until it
  // returns false; `what` names the rows in errors. A template, so the per-row call inlines.
  template <typename Row>
  bool visit(const std::string& sql, const char* what, Row&& row, std::string* error) {
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
  ClockModel model_;
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
    using T = RankTable;
    // RankInfo has no file.
    const std::string sql = selectSql(T::kDef, version_, " ORDER BY rank, start_unix_ns",
                                      detail::kAllColumns & ~columns({T::file}));
    Stmt st = detail::prepare(db_.get(), sql, nullptr);
    if (!st) return out;
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      sqlite3_stmt* s = st.get();
      RankInfo r;
      r.rank = toInt32(detail::columnNullable(s, T::rank));
      r.world_size = toInt32(detail::columnNullable(s, T::world_size));
      r.local_rank = toInt32(detail::columnNullable(s, T::local_rank));
      r.host = columnText(s, T::host);
      r.pid = sqlite3_column_int64(s, T::pid);
      r.launcher = columnText(s, T::launcher);
      r.clock = columnText(s, T::clock);
      r.start_ns = sqlite3_column_int64(s, T::start_ns);
      r.start_unix_ns = sqlite3_column_int64(s, T::start_unix_ns);
      r.command_line = columnText(s, T::command_line);
      r.identity_source = columnText(s, T::identity_source);
      out.push_back(std::move(r));
    }
  } catch (...) {
  }
  return out;
}

std::map<std::string, std::string> SqliteTraceReader::meta() {
  std::map<std::string, std::string> out;
  try {
    Stmt st = detail::prepare(db_.get(), selectSql(MetaTable::kDef, version_, ""), nullptr);
    if (!st) return out;
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      out[columnText(st.get(), MetaTable::key)] = columnText(st.get(), MetaTable::value);
    }
  } catch (...) {
  }
  return out;
}

bool SqliteTraceReader::loadStrings(std::string* error) {
  if (strings_loaded_) return true;
  Stmt st = detail::prepare(db_.get(), selectSql(StringTable::kDef, version_, ""), nullptr);
  if (!st) return readError(error, "cannot read strings");
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    strings_[sqlite3_column_int64(st.get(), StringTable::id)] =
        columnText(st.get(), StringTable::value, kMaxNameBytes);
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
  using T = CollectiveTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, start_ns, id"), "collectives",
               [&](sqlite3_stmt* s) {
                 CollectiveRow r;
                 r.id = sqlite3_column_int64(s, T::id);
                 r.rank = toInt32(detail::columnNullable(s, T::rank));
                 r.comm = str(detail::columnNullable(s, T::comm_sid));
                 r.seq = sqlite3_column_int64(s, T::seq);
                 r.op = str(detail::columnNullable(s, T::op_sid));
                 r.library = str(detail::columnNullable(s, T::library_sid));
                 r.bytes = sqlite3_column_int64(s, T::bytes);
                 r.count = sqlite3_column_int64(s, T::count);
                 r.dtype = str(detail::columnNullable(s, T::dtype_sid));
                 r.reduce_op = str(detail::columnNullable(s, T::reduce_op_sid));
                 r.algorithm = str(detail::columnNullable(s, T::algorithm_sid));
                 r.start_ns = sqlite3_column_int64(s, T::start_ns);
                 r.end_ns = detail::columnNullable(s, T::end_ns);
                 r.root = toInt32(detail::columnNullable(s, T::root));
                 r.tid = toInt32(sqlite3_column_int64(s, T::tid));
                 r.status = toInt32(sqlite3_column_int64(s, T::status));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn,
                                                std::string* error) {
  using T = CollectiveTable;
  // Only the columns the timeline needs: about half the work per row of forEachCollective.
  static constexpr ColumnSet kRead = columns({T::id, T::rank, T::comm_sid, T::seq, T::op_sid,
                                              T::start_ns, T::end_ns, T::status});
  constexpr auto at = [](int column) { return detail::indexIn(kRead, column); };
  return visit(detail::selectOnlySql(T::kDef, version_, " ORDER BY rank, start_ns, id", kRead),
               "collectives",
               [&](sqlite3_stmt* s) {
                 CollectiveRow r;
                 r.id = sqlite3_column_int64(s, at(T::id));
                 r.rank = toInt32(detail::columnNullable(s, at(T::rank)));
                 r.comm = str(detail::columnNullable(s, at(T::comm_sid)));
                 r.seq = sqlite3_column_int64(s, at(T::seq));
                 r.op = str(detail::columnNullable(s, at(T::op_sid)));
                 r.start_ns = sqlite3_column_int64(s, at(T::start_ns));
                 r.end_ns = detail::columnNullable(s, at(T::end_ns));
                 r.status = toInt32(sqlite3_column_int64(s, at(T::status)));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachTransfer(const std::function<bool(const TransferRow&)>& fn, std::string* error) {
  using T = TransferTable;
  // TransferRow has no rank (the recording rank is implied by side).
  static constexpr ColumnSet kRead = detail::kAllColumns & ~columns({T::rank});
  constexpr auto at = [](int column) { return detail::indexIn(kRead, column); };
  return visit(detail::selectOnlySql(T::kDef, version_, " ORDER BY start_ns, id", kRead),
               "transfers",
               [&](sqlite3_stmt* s) {
                 TransferRow r;
                 r.id = sqlite3_column_int64(s, at(T::id));
                 r.collective_id = detail::columnNullable(s, at(T::collective_id));
                 r.src_rank = toInt32(detail::columnNullable(s, at(T::src_rank)));
                 r.dst_rank = toInt32(detail::columnNullable(s, at(T::dst_rank)));
                 r.bytes = sqlite3_column_int64(s, at(T::bytes));
                 r.start_ns = sqlite3_column_int64(s, at(T::start_ns));
                 r.end_ns = detail::columnNullable(s, at(T::end_ns));
                 r.side = str(detail::columnNullable(s, at(T::side_sid)));
                 r.phase = str(detail::columnNullable(s, at(T::phase_sid)));
                 r.step = toInt32(detail::columnNullable(s, at(T::step)));
                 r.chunk = toInt32(detail::columnNullable(s, at(T::chunk)));
                 r.slot = detail::columnNullable(s, at(T::slot));
                 r.channel = toInt32(detail::columnNullable(s, at(T::channel)));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachCollectiveGpu(const std::function<bool(const CollectiveGpuRow&)>& fn,
                                             std::string* error) {
  if (version_ < 2) return true;
  using T = CollectiveGpuTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY collective_id"), "collective GPU rows",
               [&](sqlite3_stmt* s) {
                 CollectiveGpuRow r;
                 r.collective_id = sqlite3_column_int64(s, T::collective_id);
                 r.gpu_start_ns = detail::columnNullable(s, T::gpu_start_ns);
                 r.gpu_end_ns = detail::columnNullable(s, T::gpu_end_ns);
                 r.algorithm = str(detail::columnNullable(s, T::algorithm_sid));
                 r.protocol = str(detail::columnNullable(s, T::protocol_sid));
                 r.channels = toInt32(detail::columnNullable(s, T::channels));
                 r.group_id = detail::columnNullable(s, T::group_id);
                 r.stream = detail::columnNullable(s, T::stream);
                 r.device = toInt32(detail::columnNullable(s, T::device));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachGpuActivity(const std::function<bool(int32_t, const GpuActivityRow&)>& fn,
                                           std::string* error) {
  if (version_ < 2) return true;
  using T = GpuActivityTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, start_ns, id"), "GPU activity",
               [&](sqlite3_stmt* s) {
                 GpuActivityRow r;
                 r.id = sqlite3_column_int64(s, T::id);
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.kind = str(detail::columnNullable(s, T::kind_sid));
                 r.name = str(detail::columnNullable(s, T::name_sid));
                 r.start_ns = sqlite3_column_int64(s, T::start_ns);
                 r.end_ns = detail::columnNullable(s, T::end_ns);
                 r.device = toInt32(detail::columnNullable(s, T::device));
                 r.stream = detail::columnNullable(s, T::stream);
                 r.bytes = detail::columnNullable(s, T::bytes);
                 r.copy_kind = str(detail::columnNullable(s, T::copy_kind_sid));
                 r.correlation_id = detail::columnNullable(s, T::correlation_id);
                 r.collective_id = detail::columnNullable(s, T::collective_id);
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachCommunicator(const std::function<bool(int32_t, const CommunicatorRow&)>& fn,
                                            std::string* error) {
  if (version_ < 2) return true;
  using T = CommunicatorTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, created_ns, comm_sid"),
               "communicators",
               [&](sqlite3_stmt* s) {
                 CommunicatorRow r;
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.comm = str(detail::columnNullable(s, T::comm_sid));
                 r.library = str(detail::columnNullable(s, T::library_sid));
                 r.comm_rank = toInt32(detail::columnNullable(s, T::comm_rank));
                 r.comm_size = toInt32(detail::columnNullable(s, T::comm_size));
                 r.parent = str(detail::columnNullable(s, T::parent_sid));
                 r.created_ns = detail::columnNullable(s, T::created_ns);
                 r.ended_ns = detail::columnNullable(s, T::ended_ns);
                 r.end_state = str(detail::columnNullable(s, T::end_state_sid));
                 const std::string topology = columnText(s, T::topology, kMaxTopologyBytes);
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
