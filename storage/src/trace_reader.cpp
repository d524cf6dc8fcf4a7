// storage/src/trace_reader.cpp — streaming, defensive reader of a trace.
//
// Queries only the physical tables with SQL written here (never the views
// stored in the file, which a damaged or hostile file could redefine), and
// resolves string ids through an in-memory copy of the string table.
#include "ringside/storage/trace_reader.h"

#include <algorithm>
#include <map>
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
  SqliteTraceReader(std::string path, Db db, int version, bool raw_times)
      : path_(std::move(path)), db_(std::move(db)), version_(version) {
    if (version_ >= 3) loadClockModel();
    if (!raw_times) map_ = ClockMap(model_);
  }

  int schemaVersion() const override { return version_; }
  std::vector<RankInfo> ranks() override;
  std::map<std::string, std::string> meta() override;
  int64_t collectiveCount() override { return count("SELECT count(*) FROM collective_data"); }
  int64_t transferCount() override { return count("SELECT count(*) FROM transfer_data"); }
  bool forEachCollective(const std::function<bool(const CollectiveRow&)>& fn, std::string* error) override;
  bool forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn, std::string* error) override;
  bool forEachTransfer(const std::function<bool(const TransferRow&)>& fn, std::string* error) override;
  bool forEachTransferUnordered(const std::function<bool(int32_t, const TransferRow&)>& fn,
                                std::string* error) override;
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
  bool timesAligned() const override { return !map_.identity(); }
  bool forEachClockAnchor(const std::function<bool(int32_t, const ClockAnchorRow&)>& fn,
                          std::string* error) override;
  bool forEachCpuSample(const std::function<bool(int32_t, const CpuSampleRow&)>& fn,
                        std::string* error) override;
  bool forEachStepMarker(const std::function<bool(int32_t, const StepMarkerRow&)>& fn,
                         std::string* error) override;
  bool forEachStep(const std::function<bool(const StepRow&)>& fn, std::string* error) override;

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
  void loadClockModel();
  // The aligned time of `rank`'s raw time t (kNone stays kNone).
  int64_t align(int32_t rank, int64_t t) const {
    return t == kNone ? t : map_.map(rank, t);
  }
  // One transfer row from a statement whose columns are kRead (kTransferRead or kTransferPlain).
  template <ColumnSet kRead>
  TransferRow transferRow(sqlite3_stmt* s) const;
  // The same with its times mapped onto the time line through its recording rank (*rank).
  TransferRow alignedTransferRow(sqlite3_stmt* s, int32_t* rank) const;
  bool forEachTransferAligned(const std::function<bool(const TransferRow&)>& fn,
                              std::string* error);
  // Time-ordered reads in storage order (forEachTransfer): stretches of ids already in order,
  // chained into lanes.
  struct IdRun {
    int64_t first, last;
  };
  // More stretches or lanes than these: the table is in no useful order, the index is read.
  static constexpr size_t kMaxRuns = size_t{1} << 22;
  static constexpr size_t kMaxLanes = size_t{1} << 14;
  bool transferLanes(std::vector<std::vector<IdRun>>* lanes, std::string* error);
  bool mergeTransferLanes(const std::vector<std::vector<IdRun>>& lanes,
                          const std::function<bool(const TransferRow&)>& fn, std::string* error);
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
  ClockMap map_;  // identity unless the trace's model moves some times
};

// Transfer columns read: all of them where times are mapped (the recording rank says how), all but
// that rank for the plain time-ordered read (TransferRow has no rank: side implies it).
constexpr ColumnSet kTransferRead = detail::kAllColumns;
constexpr ColumnSet kTransferPlain = kTransferRead & ~detail::columns({TransferTable::rank});
constexpr int transferAt(int column) { return detail::indexIn(kTransferRead, column); }

template <ColumnSet kRead>
TransferRow SqliteTraceReader::transferRow(sqlite3_stmt* s) const {
  using T = TransferTable;
  constexpr auto at = [](int column) { return detail::indexIn(kRead, column); };
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
  return r;
}

TransferRow SqliteTraceReader::alignedTransferRow(sqlite3_stmt* s, int32_t* rank) const {
  TransferRow r = transferRow<kTransferRead>(s);
  *rank = toInt32(detail::columnNullable(s, transferAt(TransferTable::rank)));
  r.start_ns = align(*rank, r.start_ns);
  r.end_ns = align(*rank, r.end_ns);
  return r;
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
                 r.start_ns = align(r.rank, sqlite3_column_int64(s, at(T::start_ns)));
                 r.end_ns = align(r.rank, detail::columnNullable(s, at(T::end_ns)));
                 r.status = toInt32(sqlite3_column_int64(s, at(T::status)));
                 return fn(r);
               },
               error);
}

bool SqliteTraceReader::forEachTransferUnordered(
    const std::function<bool(int32_t, const TransferRow&)>& fn, std::string* error) {
  return visit(detail::selectOnlySql(TransferTable::kDef, version_, "", kTransferRead), "transfers",
               [&](sqlite3_stmt* s) {
                 int32_t rank = -1;
                 const TransferRow r = alignedTransferRow(s, &rank);
                 return fn(rank, r);
               },
               error);
}

bool SqliteTraceReader::forEachTransfer(const std::function<bool(const TransferRow&)>& fn, std::string* error) {
  try {
    // Merged traces hold each rank's rows together, mostly in time order: reading the table in
    // storage order, stretch by stretch, and merging the stretches in memory is several times
    // faster than the start_ns index (one table lookup per row, all over the file).
    std::vector<std::vector<IdRun>> lanes;
    if (!transferLanes(&lanes, error)) return false;
    if (!lanes.empty()) return mergeTransferLanes(lanes, fn, error);
  } catch (const std::bad_alloc&) {
    if (error) *error = path_ + ": out of memory while reading transfers";
    return false;
  }
  if (timesAligned()) return forEachTransferAligned(fn, error);
  return visit(detail::selectOnlySql(TransferTable::kDef, version_, " ORDER BY start_ns, id",
                                     kTransferPlain),
               "transfers", [&](sqlite3_stmt* s) { return fn(transferRow<kTransferPlain>(s)); },
               error);
}

// One pass over id and start_ns (and rank, where it maps times) finds the stretches of rows, in
// id order, whose (start_ns, id) ascend (aligned where times are mapped); stretches that follow
// each other in time are chained into one lane, read by one cursor (a merged trace: a rank's calls
// that overlap the next ones start a stretch each, but a few lanes per rank hold them all). Leaves
// *lanes empty when there would be more than kMaxRuns stretches or kMaxLanes lanes (a table in no
// useful order): the caller reads through the index instead.
bool SqliteTraceReader::transferLanes(std::vector<std::vector<IdRun>>* lanes, std::string* error) {
  const bool aligned = timesAligned();
  // The rank only where it maps the time.
  Stmt st = detail::prepare(db_.get(),
                            aligned ? "SELECT id, start_ns, rank FROM transfer_data ORDER BY id"
                                    : "SELECT id, start_ns FROM transfer_data ORDER BY id",
                            nullptr);
  if (!st) return readError(error, "cannot read transfers");
  // Lanes by the start of their last row: a stretch goes to the lane that ended latest before it.
  std::multimap<int64_t, size_t> lane_by_end;
  IdRun run{};
  int64_t first_start = 0, last_start = 0;
  size_t runs = 0;
  auto close = [&]() {
    if (++runs > kMaxRuns) return false;
    auto it = lane_by_end.upper_bound(first_start);
    size_t lane;
    if (it == lane_by_end.begin()) {
      if (lanes->size() == kMaxLanes) return false;
      lane = lanes->size();
      lanes->emplace_back();
    } else {
      lane = (--it)->second;
      lane_by_end.erase(it);
    }
    (*lanes)[lane].push_back(run);
    lane_by_end.emplace(last_start, lane);
    return true;
  };
  bool any = false;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const int64_t id = sqlite3_column_int64(st.get(), 0);
    int64_t start = sqlite3_column_int64(st.get(), 1);
    if (aligned) start = align(toInt32(detail::columnNullable(st.get(), 2)), start);
    if (!any || start < last_start) {
      if (any && !close()) {
        lanes->clear();
        return true;
      }
      any = true;
      run = {id, id};
      first_start = start;
    }
    run.last = id;
    last_start = start;
  }
  if (rc != SQLITE_DONE) return readError(error, "cannot read transfers");
  if (any && !close()) lanes->clear();
  return true;
}

// The rows of `lanes`, each already in (start_ns, id) order, merged on (start_ns, id): a
// min-heap of one cursor per lane, each reading its stretches of the table in storage order.
bool SqliteTraceReader::mergeTransferLanes(const std::vector<std::vector<IdRun>>& lanes,
                                           const std::function<bool(const TransferRow&)>& fn,
                                           std::string* error) {
  const bool aligned = timesAligned();
  if (!loadStrings(error)) return false;
  const std::string sql = detail::selectOnlySql(
      TransferTable::kDef, version_, " WHERE id >= ?1 AND id <= ?2 ORDER BY id",
      aligned ? kTransferRead : kTransferPlain);
  // Each cursor decodes a batch of rows at a time: switching between thousands of statements
  // row by row would keep none of them in the processor's caches. A batch goes on to the end of
  // a stretch that ends within max_batch rows: its statement is then reset while its cursor is
  // the newest open one (SQLite finds a closing cursor in a list of all open ones, newest first;
  // with thousands open, resets deep in that list cost more than reading the rows).
  // Memory: at most 256 rows (about 26 KiB) a lane, 64 beyond 4,096 lanes.
  constexpr size_t kBatch = 64;
  const size_t max_batch = lanes.size() > 4096 ? kBatch : 4 * kBatch;
  struct Cursor {
    Stmt st;
    size_t run = 0;  // the stretch of its lane it reads
    bool done = false;
    size_t next = 0;  // rows[next] is its head
    std::vector<TransferRow> rows;
  };
  std::vector<Cursor> cursors(lanes.size());
  auto bind = [&](uint32_t i) {
    Cursor& c = cursors[i];
    const IdRun& run = lanes[i][c.run];
    sqlite3_reset(c.st.get());
    sqlite3_bind_int64(c.st.get(), 1, run.first);
    sqlite3_bind_int64(c.st.get(), 2, run.last);
  };
  for (uint32_t i = 0; i < cursors.size(); ++i) {
    cursors[i].st = detail::prepare(db_.get(), sql, nullptr);
    if (!cursors[i].st) return readError(error, "cannot read transfers");
    bind(i);
  }
  // Refills cursor i's batch; false when its lane has no more rows (or on error: *failed).
  bool failed = false;
  auto refill = [&](uint32_t i) {
    Cursor& c = cursors[i];
    c.rows.clear();
    c.next = 0;
    while (!c.done) {
      if (c.rows.size() >= kBatch) {
        const auto room = static_cast<int64_t>(max_batch) - static_cast<int64_t>(c.rows.size());
        if (room <= 0 || lanes[i][c.run].last - c.rows.back().id > room) break;
      }
      const int rc = sqlite3_step(c.st.get());
      if (rc == SQLITE_ROW) {
        int32_t rank = -1;
        c.rows.push_back(aligned ? alignedTransferRow(c.st.get(), &rank)
                                 : transferRow<kTransferPlain>(c.st.get()));
        continue;
      }
      if (rc != SQLITE_DONE) failed = true;
      if (failed || ++c.run == lanes[i].size()) {
        c.done = true;
        sqlite3_reset(c.st.get());
      } else {
        bind(i);
      }
    }
    return !c.rows.empty();
  };
  // Advances cursor i to its next row; false at its lane's end.
  auto advance = [&](uint32_t i) {
    Cursor& c = cursors[i];
    return ++c.next < c.rows.size() || refill(i);
  };
  // The heap holds each cursor's key beside it: comparisons stay within the heap's memory.
  struct Head {
    int64_t start, id;
    uint32_t cursor;
  };
  auto later = [](const Head& x, const Head& y) {
    return x.start != y.start ? x.start > y.start : x.id > y.id;
  };
  auto head = [&](uint32_t i) {
    const TransferRow& r = cursors[i].rows[cursors[i].next];
    return Head{r.start_ns, r.id, i};
  };
  std::vector<Head> heap;
  heap.reserve(cursors.size());
  for (uint32_t i = 0; i < cursors.size(); ++i) {
    if (refill(i)) heap.push_back(head(i));
    if (failed) return readError(error, "cannot read transfers");
  }
  std::make_heap(heap.begin(), heap.end(), later);
  // The earliest head is replaced by its cursor's next row and sifted down in place: one pass,
  // and none when the same cursor still holds the earliest row.
  auto siftDown = [&]() {
    const Head h = heap[0];
    size_t k = 0;
    for (;;) {
      size_t child = 2 * k + 1;
      if (child >= heap.size()) break;
      if (child + 1 < heap.size() && later(heap[child], heap[child + 1])) ++child;
      if (!later(h, heap[child])) break;
      heap[k] = heap[child];
      k = child;
    }
    heap[k] = h;
  };
  while (!heap.empty()) {
    const uint32_t i = heap[0].cursor;
    if (!fn(cursors[i].rows[cursors[i].next])) return true;
    if (advance(i)) {
      heap[0] = head(i);
    } else {
      if (failed) return readError(error, "cannot read transfers");
      heap[0] = heap.back();
      heap.pop_back();
      if (heap.empty()) break;
    }
    siftDown();
  }
  return true;
}

// Aligned order: one cursor per recording rank (the merged index transfer_by_rank_time gives
// each its rows in raw order, which the rank's monotone mapping keeps), merged on aligned
// (start_ns, id).
bool SqliteTraceReader::forEachTransferAligned(const std::function<bool(const TransferRow&)>& fn,
                                               std::string* error) {
  try {
    if (!loadStrings(error)) return false;
    std::vector<int64_t> ranks;
    bool null_rank = false;
    {
      Stmt st = detail::prepare(db_.get(), "SELECT DISTINCT rank FROM transfer_data", nullptr);
      if (!st) return readError(error, "cannot read transfers");
      int rc;
      while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
        if (sqlite3_column_type(st.get(), 0) == SQLITE_NULL) {
          null_rank = true;
        } else {
          ranks.push_back(sqlite3_column_int64(st.get(), 0));
        }
      }
      if (rc != SQLITE_DONE) return readError(error, "cannot read transfers");
    }
    // A damaged trace naming more recording ranks than any real job has: one cursor each would
    // cost memory per rank, so its rows come in recorded order, mapped (nearly aligned order).
    constexpr size_t kMaxCursors = 1 << 15;
    if (ranks.size() > kMaxCursors) {
      return visit(detail::selectOnlySql(TransferTable::kDef, version_, " ORDER BY start_ns, id",
                                         kTransferRead),
                   "transfers",
                   [&](sqlite3_stmt* s) {
                     int32_t rank = -1;
                     return fn(alignedTransferRow(s, &rank));
                   },
                   error);
    }
    struct Cursor {
      Stmt st;
      TransferRow row;
    };
    std::vector<Cursor> cursors;
    cursors.reserve(ranks.size() + 1);
    const std::string by_rank =
        detail::selectOnlySql(TransferTable::kDef, version_, " WHERE rank = ?1 ORDER BY start_ns, id",
                              kTransferRead);
    auto addCursor = [&](Stmt st) { cursors.push_back({std::move(st), {}}); };
    for (int64_t rank : ranks) {
      Stmt st = detail::prepare(db_.get(), by_rank, nullptr);
      if (!st) return readError(error, "cannot read transfers");
      sqlite3_bind_int64(st.get(), 1, rank);
      addCursor(std::move(st));
    }
    if (null_rank) {
      Stmt st = detail::prepare(
          db_.get(),
          detail::selectOnlySql(TransferTable::kDef, version_,
                                " WHERE rank IS NULL ORDER BY start_ns, id", kTransferRead),
          nullptr);
      if (!st) return readError(error, "cannot read transfers");
      addCursor(std::move(st));
    }
    // Advances cursor i; false at its end (or on error, which *failed says).
    bool failed = false;
    auto advance = [&](size_t i) {
      Cursor& c = cursors[i];
      const int rc = sqlite3_step(c.st.get());
      if (rc == SQLITE_ROW) {
        int32_t rank = -1;
        c.row = alignedTransferRow(c.st.get(), &rank);
        return true;
      }
      if (rc != SQLITE_DONE) failed = true;
      return false;
    };
    // Min-heap of cursor indexes on (start_ns, id).
    auto later = [&](size_t a, size_t b) {
      const TransferRow& x = cursors[a].row;
      const TransferRow& y = cursors[b].row;
      return x.start_ns != y.start_ns ? x.start_ns > y.start_ns : x.id > y.id;
    };
    std::vector<size_t> heap;
    for (size_t i = 0; i < cursors.size(); ++i) {
      if (advance(i)) heap.push_back(i);
      if (failed) return readError(error, "cannot read transfers");
    }
    std::make_heap(heap.begin(), heap.end(), later);
    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), later);
      const size_t i = heap.back();
      if (!fn(cursors[i].row)) return true;
      if (advance(i)) {
        std::push_heap(heap.begin(), heap.end(), later);
      } else {
        heap.pop_back();
        if (failed) return readError(error, "cannot read transfers");
      }
    }
    return true;
  } catch (const std::bad_alloc&) {
    if (error) *error = path_ + ": out of memory while reading transfers";
    return false;
  }
}

bool SqliteTraceReader::forEachCollectiveGpu(const std::function<bool(const CollectiveGpuRow&)>& fn,
                                             std::string* error) {
  if (version_ < 2) return true;
  using T = CollectiveGpuTable;
  // GPU rows name no rank: aligned reads take it from the call they belong to.
  std::unordered_map<int64_t, int32_t> rank_of;
  if (timesAligned()) {
    Stmt st = detail::prepare(db_.get(),
                              "SELECT c.id, c.rank FROM collective_gpu_data AS g"
                              " JOIN collective_data AS c ON c.id = g.collective_id",
                              nullptr);
    if (!st) return readError(error, "cannot read collective GPU rows");
    while (sqlite3_step(st.get()) == SQLITE_ROW) {
      rank_of[sqlite3_column_int64(st.get(), 0)] =
          toInt32(detail::columnNullable(st.get(), 1));
    }
  }
  auto rankOf = [&](int64_t id) {
    auto it = rank_of.find(id);
    return it == rank_of.end() ? -1 : it->second;
  };
  return visit(selectSql(T::kDef, version_, " ORDER BY collective_id"), "collective GPU rows",
               [&](sqlite3_stmt* s) {
                 CollectiveGpuRow r;
                 r.collective_id = sqlite3_column_int64(s, T::collective_id);
                 const int32_t rank = rank_of.empty() ? -1 : rankOf(r.collective_id);
                 r.gpu_start_ns = align(rank, detail::columnNullable(s, T::gpu_start_ns));
                 r.gpu_end_ns = align(rank, detail::columnNullable(s, T::gpu_end_ns));
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
                 r.start_ns = align(rank, sqlite3_column_int64(s, T::start_ns));
                 r.end_ns = align(rank, detail::columnNullable(s, T::end_ns));
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
                 r.created_ns = align(rank, detail::columnNullable(s, T::created_ns));
                 r.ended_ns = align(rank, detail::columnNullable(s, T::ended_ns));
                 r.end_state = str(detail::columnNullable(s, T::end_state_sid));
                 const std::string topology = columnText(s, T::topology, kMaxTopologyBytes);
                 r.topology = topology;
                 return fn(rank, r);
               },
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
  if (version_ < 5) return true;
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

// The model tables are small (a row per domain, rank and piece); a damaged file's are cut at
// kMaxModelRows rows each, and a model that does not hold together reads as none (identity).
void SqliteTraceReader::loadClockModel() {
  constexpr int64_t kMaxModelRows = 1 << 20;
  try {
    using D = detail::ClockDomainTable;
    using R = detail::ClockRankTable;
    using S = detail::ClockSegmentTable;
    ClockModel m;
    const std::string limit = " LIMIT " + std::to_string(kMaxModelRows);
    {
      Stmt st = detail::prepare(db_.get(), selectSql(D::kDef, version_, " ORDER BY id" + limit),
                                nullptr);
      if (!st) return;
      while (sqlite3_step(st.get()) == SQLITE_ROW) {
        sqlite3_stmt* s = st.get();
        ClockDomain d;
        d.id = toInt32(sqlite3_column_int64(s, D::id));
        d.host = columnText(s, D::host, kMaxNameBytes);
        d.boot_id = columnText(s, D::boot_id, kMaxNameBytes);
        d.method = columnText(s, D::method, kMaxNameBytes);
        d.offset_ns = sqlite3_column_int64(s, D::offset_ns);
        d.drift_ppm = sqlite3_column_double(s, D::drift_ppm);
        d.uncertainty_ns = sqlite3_column_int64(s, D::uncertainty_ns);
        d.bounds = sqlite3_column_int64(s, D::bounds);
        d.violated = sqlite3_column_int64(s, D::violated);
        d.anchors = sqlite3_column_int64(s, D::anchors);
        d.segments = toInt32(sqlite3_column_int64(s, D::segments));
        m.domains.push_back(std::move(d));
      }
    }
    if (m.domains.empty()) return;
    {
      Stmt st = detail::prepare(db_.get(), selectSql(R::kDef, version_, " ORDER BY rank" + limit),
                                nullptr);
      if (!st) return;
      while (sqlite3_step(st.get()) == SQLITE_ROW) {
        const int32_t rank = toInt32(sqlite3_column_int64(st.get(), R::rank));
        const int32_t domain = toInt32(sqlite3_column_int64(st.get(), R::domain));
        m.rank_domain.emplace_back(rank, domain);
      }
    }
    {
      std::unordered_map<int32_t, size_t> index;
      for (size_t i = 0; i < m.domains.size(); ++i) index.emplace(m.domains[i].id, i);
      for (const auto& [rank, domain] : m.rank_domain) {
        auto it = index.find(domain);
        if (it != index.end()) m.domains[it->second].ranks.push_back(rank);
      }
    }
    {
      Stmt st = detail::prepare(
          db_.get(), selectSql(S::kDef, version_, " ORDER BY domain, lo_ns" + limit), nullptr);
      if (!st) return;
      while (sqlite3_step(st.get()) == SQLITE_ROW) {
        sqlite3_stmt* s = st.get();
        ClockSegment g;
        g.domain = toInt32(sqlite3_column_int64(s, S::domain));
        g.lo_ns = sqlite3_column_int64(s, S::lo_ns);
        g.hi_ns = sqlite3_column_int64(s, S::hi_ns);
        g.ref_ns = sqlite3_column_int64(s, S::ref_ns);
        g.offset_ns = sqlite3_column_int64(s, S::offset_ns);
        g.rate = sqlite3_column_double(s, S::rate);
        // A rate beyond 1 % is no clock (a damaged file): drop the piece.
        if (!(g.rate > -0.01 && g.rate < 0.01)) continue;
        m.segments.push_back(g);
      }
    }
    const auto meta_map = meta();
    auto metaInt = [&](const char* key) -> int64_t {
      auto it = meta_map.find(key);
      if (it == meta_map.end()) return 0;
      try {
        return std::stoll(it->second);
      } catch (...) {
        return 0;
      }
    };
    auto mit = meta_map.find("clock_method");
    m.method = mit != meta_map.end() ? mit->second : "evidence";
    m.bounds = metaInt("clock_bounds");
    m.violated = metaInt("clock_bounds_violated");
    m.messages_checked = metaInt("clock_messages_checked");
    m.messages_before_sent = metaInt("clock_messages_before_sent");
    model_ = std::move(m);
  } catch (...) {
    model_ = ClockModel{};
  }
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
    return std::make_unique<SqliteTraceReader>(path, std::move(db), version, options.raw_times);
  } catch (...) {
    if (error) *error = path + ": out of memory";
    return nullptr;
  }
}

}  // namespace ringside::storage
