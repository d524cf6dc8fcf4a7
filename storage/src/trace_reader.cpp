// storage/src/trace_reader.cpp — opening a trace, and the queries of the tables every trace has
// (trace_reader_impl.h says where the rest is).
#include "trace_reader_impl.h"

#include "ringside/storage/stage_timings.h"

#include <algorithm>
#include <utility>

namespace ringside::storage {
namespace reader {

TransferRow SqliteTraceReader::alignedTransferRow(sqlite3_stmt* s, int32_t* rank) const {
  TransferRow r = transferRow<kTransferRead>(s);
  *rank = toInt32(detail::columnNullable(s, transferAt(TransferTable::rank)));
  r.start_ns = align(*rank, r.start_ns);
  r.end_ns = align(*rank, r.end_ns);
  return r;
}

std::string SqliteTraceReader::readErrorLine(sqlite3* db, std::string_view what) const {
  const bool corrupt = (sqlite3_extended_errcode(db) & 0xff) == SQLITE_CORRUPT;
  return detail::oneLine(path_ + (corrupt ? ": corrupt trace: " : ": ") + std::string(what) + ": " +
                         detail::lastError(db));
}

bool SqliteTraceReader::checkTransfersWhole(std::string* error) {
  if (!transfers_unchecked_) return true;
  std::string why;
  if (!detail::quickCheck(db_.get(), path_, TransferTable::kDef.name, &why)) {
    if (error) *error = why;
    return false;
  }
  transfers_unchecked_ = false;
  return true;
}

int64_t SqliteTraceReader::count(const char* sql) {
  int64_t n = 0;
  try {
    if (!detail::queryInt(db_.get(), sql, &n, nullptr)) return -1;
  } catch (...) {
    return -1;
  }
  return n;
}

std::vector<RankInfo> SqliteTraceReader::ranks() { return rankInfos(db_.get(), version_); }

std::vector<RankInfo> rankInfos(sqlite3* db, int version) {
  std::vector<RankInfo> out;
  try {
    using T = RankTable;
    // RankInfo has no file.
    const std::string sql = selectSql(T::kDef, version, " ORDER BY rank, start_unix_ns",
                                      detail::kAllColumns & ~columns({T::file}));
    Stmt st = detail::prepare(db, sql, nullptr);
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
      r.boot_id = columnText(s, T::boot_id, kMaxNameBytes);
      r.timens_offset_ns = sqlite3_column_int64(s, T::timens_offset_ns);
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
                 r.start_ns = align(r.rank, sqlite3_column_int64(s, T::start_ns));
                 r.end_ns = align(r.rank, detail::columnNullable(s, T::end_ns));
                 r.root = toInt32(detail::columnNullable(s, T::root));
                 r.tid = toInt32(sqlite3_column_int64(s, T::tid));
                 r.status = toInt32(sqlite3_column_int64(s, T::status));
                 return fn(r);
               },
               error);
}

// Calls ordered by (rank, start_ns, id) with only the columns of kRead filled (id, rank, comm,
// seq, start_ns and end_ns always among them): SQLite decodes a record's columns up to the last
// one asked for, and each column returned costs an API call.
template <ColumnSet kRead>
bool SqliteTraceReader::visitCollectiveFields(const std::function<bool(const CollectiveRow&)>& fn,
                                              std::string* error) {
  using T = CollectiveTable;
  constexpr auto at = [](int column) { return detail::indexIn(kRead, column); };
  constexpr auto has = [](int column) { return ((kRead >> column) & 1) != 0; };
  static_assert(has(T::id) && has(T::rank) && has(T::comm_sid) && has(T::seq) && has(T::start_ns) &&
                has(T::end_ns));
  return visit(detail::selectOnlySql(T::kDef, version_, " ORDER BY rank, start_ns, id", kRead),
               "collectives",
               [&](sqlite3_stmt* s) {
                 CollectiveRow r;
                 r.id = sqlite3_column_int64(s, at(T::id));
                 r.rank = toInt32(detail::columnNullable(s, at(T::rank)));
                 r.comm = str(detail::columnNullable(s, at(T::comm_sid)));
                 r.seq = sqlite3_column_int64(s, at(T::seq));
                 if constexpr (has(T::op_sid)) r.op = str(detail::columnNullable(s, at(T::op_sid)));
                 if constexpr (has(T::library_sid))
                   r.library = str(detail::columnNullable(s, at(T::library_sid)));
                 if constexpr (has(T::bytes)) r.bytes = sqlite3_column_int64(s, at(T::bytes));
                 r.start_ns = align(r.rank, sqlite3_column_int64(s, at(T::start_ns)));
                 r.end_ns = align(r.rank, detail::columnNullable(s, at(T::end_ns)));
                 if constexpr (has(T::status))
                   r.status = toInt32(sqlite3_column_int64(s, at(T::status)));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn,
                                                std::string* error) {
  using T = CollectiveTable;
  // Only the columns the timeline needs: about half the work per row of forEachCollective.
  return visitCollectiveFields<columns({T::id, T::rank, T::comm_sid, T::seq, T::op_sid, T::start_ns,
                                        T::end_ns, T::status})>(fn, error);
}

bool SqliteTraceReader::forEachCollectiveTotalsFields(
    const std::function<bool(const CollectiveRow&)>& fn, std::string* error) {
  using T = CollectiveTable;
  return visitCollectiveFields<columns({T::id, T::rank, T::comm_sid, T::seq, T::op_sid,
                                        T::library_sid, T::bytes, T::start_ns, T::end_ns})>(fn,
                                                                                            error);
}

bool SqliteTraceReader::forEachClockAnchor(
    const std::function<bool(int32_t, const ClockAnchorRow&)>& fn, std::string* error) {
  if (version_ < 3) return true;
  using T = detail::ClockAnchorTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, clock_ns"), "clock anchors",
               [&](sqlite3_stmt* s) {
                 ClockAnchorRow r;
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.clock_ns = sqlite3_column_int64(s, T::clock_ns);
                 r.unix_ns = sqlite3_column_int64(s, T::unix_ns);
                 r.spread_ns = sqlite3_column_int64(s, T::spread_ns);
                 return fn(rank, r);
               },
               nullptr) ||
         readError(error, "cannot read clock anchors");
}

bool SqliteTraceReader::forEachStepMarker(
    const std::function<bool(int32_t, const StepMarkerRow&)>& fn, std::string* error) {
  if (version_ < 4) return true;
  using T = detail::StepMarkerTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, start_ns"), "step markers",
               [&](sqlite3_stmt* s) {
                 StepMarkerRow r;
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.step = sqlite3_column_int64(s, T::step);
                 r.start_ns = align(rank, sqlite3_column_int64(s, T::start_ns));
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachCpuSample(
    const std::function<bool(int32_t, const CpuSampleRow&)>& fn, std::string* error) {
  if (version_ < 6) return true;
  using T = detail::CpuSampleTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY rank, t_ns"), "CPU samples",
               [&](sqlite3_stmt* s) {
                 CpuSampleRow r;
                 const int32_t rank = toInt32(detail::columnNullable(s, T::rank));
                 r.t_ns = align(rank, sqlite3_column_int64(s, T::t_ns));
                 r.cpu_ns = sqlite3_column_int64(s, T::cpu_ns);
                 r.voluntary = sqlite3_column_int64(s, T::voluntary);
                 r.involuntary = sqlite3_column_int64(s, T::involuntary);
                 r.run_delay_ns = detail::columnNullable(s, T::run_delay_ns);
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachStep(const std::function<bool(const StepRow&)>& fn,
                                    std::string* error) {
  if (version_ < 4) return true;
  using T = detail::StepTable;
  return visit(selectSql(T::kDef, version_, " ORDER BY step"), "steps",
               [&](sqlite3_stmt* s) {
                 StepRow r;
                 r.step = sqlite3_column_int64(s, T::step);
                 r.comm = std::string(str(detail::columnNullable(s, T::comm_sid)));
                 r.first_seq = sqlite3_column_int64(s, T::first_seq);
                 r.last_seq = sqlite3_column_int64(s, T::last_seq);
                 r.complete = sqlite3_column_int64(s, T::complete) != 0;
                 return fn(r);
               },
               error);
}

}  // namespace reader

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path, std::string* error) {
  return open(path, TraceOpenOptions{}, error);
}

std::unique_ptr<TraceReader> TraceReader::open(const std::string& path, const TraceOpenOptions& options,
                                               std::string* error) {
  try {
    int version = 0;
    StageTimer timer("open");
    const bool by_reading = options.quick_check && options.transfers_checked_by_reading;
    const detail::OpenCheck check = by_reading           ? detail::OpenCheck::kAllButTransfers
                                    : options.quick_check ? detail::OpenCheck::kWhole
                                                          : detail::OpenCheck::kNone;
    detail::Db db = detail::openTraceReadOnly(path, &version, error, check);
    timer.stop();
    if (!db) return nullptr;
    return std::make_unique<reader::SqliteTraceReader>(path, std::move(db), version,
                                                       options.raw_times, by_reading);
  } catch (...) {
    if (error) *error = path + ": out of memory";
    return nullptr;
  }
}

}  // namespace ringside::storage
