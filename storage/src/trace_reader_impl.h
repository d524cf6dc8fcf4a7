// storage/src/trace_reader_impl.h — the SQLite TraceReader, private to storage/.
//
// One class, its work in four files by what it reads:
//   trace_reader.cpp      opening, the string table, ranks, meta, calls, clock anchors, step
//                         markers and steps (a query per table)
//   trace_reader_gpu.cpp  the GPU tables and communicators (schema v2)
//   transfer_lanes.cpp    the lanes pass: stretches of transfer rows already in time order,
//                         found by one read in id order (split over two threads on a large table)
//   transfer_order.cpp    transfers in time order: the lanes read ahead a batch at a time on a
//                         thread with a connection of its own, merged on (start_ns, id); one
//                         cursor per rank where times are mapped
//   clock_model_reader.cpp  the clock model's tables (readClockModel); ClockMap (clock_model.cpp)
//                         maps every time a row returns
// Queries only the physical tables with SQL written here (never the views stored in the file,
// which a damaged or hostile file could redefine), and resolves string ids through an in-memory
// copy of the string table.
#pragma once

#include <sqlite3.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "columns.h"
#include "ringside/storage/clock_model.h"
#include "ringside/storage/trace_reader.h"
#include "sqlite_util.h"

namespace ringside::storage::reader {

// The table definitions, statements and SQL builders of storage's internals (columns.h,
// sqlite_util.h), by their short names.
using namespace ::ringside::storage::detail;  // NOLINT(google-build-using-namespace)

// A text column, cut at `limit` bytes (the cut ends in kCutMarker): a hostile trace's megabyte
// names would otherwise be copied into every row, report line and exported event.
inline std::string columnText(sqlite3_stmt* st, int index, size_t limit = kMaxTextBytes) {
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

inline int32_t toInt32(int64_t v) {
  // Damaged files may hold anything; clamp rather than wrap.
  if (v > INT32_MAX) return INT32_MAX;
  if (v < INT32_MIN) return INT32_MIN;
  return static_cast<int32_t>(v);
}

// The clock model stored in a merged trace (schema v3 tables clock_domain, clock_rank,
// clock_segment and meta clock_*), read by `meta` only when there is one. A damaged file's tables
// are cut at 2^20 rows each, and a model that does not hold together reads as none (identity).
ClockModel readClockModel(sqlite3* db, int version,
                          const std::function<std::map<std::string, std::string>()>& meta);

// A stretch of transfer rows, by id, already in (start_ns, id) order (transfer_lanes.cpp).
struct IdRun {
  int64_t first, last;
};
struct LanesPart;

// The rank rows of an open trace as TraceReader::ranks() gives them (the merge's probe reads them
// too, for the clock domains its caller finds before the copy: align/input_sides.h).
std::vector<RankInfo> rankInfos(sqlite3* db, int version);

class SqliteTraceReader final : public TraceReader {
 public:
  // `transfers_unchecked`: the file was opened with OpenCheck::kAllButTransfers.
  SqliteTraceReader(std::string path, Db db, int version, bool raw_times, bool transfers_unchecked)
      : path_(std::move(path)), db_(std::move(db)), version_(version),
        transfers_unchecked_(transfers_unchecked) {
    if (version_ >= 3) model_ = readClockModel(db_.get(), version_, [this] { return meta(); });
    if (!raw_times) map_ = ClockMap(model_);
  }

  int schemaVersion() const override { return version_; }
  std::vector<RankInfo> ranks() override;
  std::map<std::string, std::string> meta() override;
  int64_t collectiveCount() override { return count("SELECT count(*) FROM collective_data"); }
  int64_t transferCount() override { return count("SELECT count(*) FROM transfer_data"); }
  bool forEachCollective(const std::function<bool(const CollectiveRow&)>& fn, std::string* error) override;
  bool forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn, std::string* error) override;
  bool forEachCollectiveTotalsFields(const std::function<bool(const CollectiveRow&)>& fn,
                                     std::string* error) override;
  bool forEachTransfer(const std::function<bool(const TransferRow&)>& fn, std::string* error) override;
  bool forEachTransferUnordered(const std::function<bool(int32_t, const TransferRow&)>& fn,
                                std::string* error) override;
  bool forEachMessageSide(const std::function<bool(int32_t, const TransferRow&)>& fn,
                          std::string* error) override;
  bool forEachTransferTotalsFields(const std::function<bool(int32_t, const TransferRow&)>& fn,
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
  bool forEachFlightDump(const std::function<bool(const FlightDumpRow&)>& fn,
                         std::string* error) override;
  bool forEachFlightCall(const std::function<bool(const FlightCallRow&)>& fn,
                         std::string* error) override;
  bool forEachFlightMessage(const std::function<bool(const FlightMessageRow&)>& fn,
                            std::string* error) override;
  bool forEachRankExit(const std::function<bool(const RankExitRow&)>& fn,
                       std::string* error) override;

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
  // The aligned time of `rank`'s raw time t (kNone stays kNone).
  int64_t align(int32_t rank, int64_t t) const {
    return t == kNone ? t : map_.map(rank, t);
  }
  // One transfer row from a statement whose columns are kRead (kTransferRead or kTransferPlain).
  template <ColumnSet kRead>
  TransferRow transferRow(sqlite3_stmt* s) const;
  // The same with its times mapped onto the time line through its recording rank (*rank).
  TransferRow alignedTransferRow(sqlite3_stmt* s, int32_t* rank) const;
  // Calls in (rank, start_ns, id) order, only the columns of kRead filled (trace_reader.cpp).
  template <ColumnSet kRead>
  bool visitCollectiveFields(const std::function<bool(const CollectiveRow&)>& fn,
                             std::string* error);
  // Every transfer row in storage order, only the columns of kRead filled (trace_reader_sides.cpp).
  template <ColumnSet kRead>
  bool visitTransferFields(const std::function<bool(int32_t, const TransferRow&)>& fn,
                           std::string* error);
  // The ordered reads of transfers (transfer_order.cpp).
  bool forEachTransferAligned(const std::function<bool(const TransferRow&)>& fn,
                              std::string* error);
  // Time-ordered reads in storage order (forEachTransfer): stretches of ids already in order,
  // chained into lanes.
  // More stretches or lanes than these: the table is in no useful order, the index is read.
  static constexpr size_t kMaxRuns = size_t{1} << 22;
  static constexpr size_t kMaxLanes = size_t{1} << 17;
  bool transferLanes(sqlite3* second, std::vector<std::vector<IdRun>>* lanes, int64_t* rows,
                     std::string* error);
  int64_t transferSplitId();
  void scanStretches(sqlite3* db, bool from_start, int64_t after, int64_t upto,
                     std::atomic<size_t>* runs, LanesPart* out) const;
  // `rows`: how many the lanes pass found (all of them must be read back); `second`: the
  // read-ahead thread's connection (null: the caller reads every batch).
  bool mergeTransferLanes(const std::vector<std::vector<IdRun>>& lanes, int64_t rows, Db second,
                          const std::function<bool(const TransferRow&)>& fn, std::string* error);
  // A second connection to the file for reading transfers beside the caller's (the same checks
  // on the pages it reads); null when none can be opened (the file is gone).
  Db secondConnection() const;
  // With transfers_unchecked_, quick_check(transfer_data) (the table and its indexes), once: for
  // the reads of transfer_data that do not check what they read (all but the lanes' read).
  bool checkTransfersWhole(std::string* error);
  std::string_view str(int64_t sid) const {
    if (sid == kNone) return {};
    // Writers number strings densely from 1: a flat table, the map only for stray ids.
    if (sid >= 0 && static_cast<uint64_t>(sid) < dense_strings_.size()) return dense_strings_[static_cast<size_t>(sid)];
    auto it = strings_.find(sid);
    return it == strings_.end() ? std::string_view() : std::string_view(it->second);
  }
  // "<path>: <what>: <SQLite's error>", "<path>: corrupt trace: <what>: ..." when SQLite found
  // the file damaged.
  bool readError(std::string* error, std::string_view what) {
    if (error) *error = readErrorLine(db_.get(), what);
    return false;
  }
  std::string readErrorLine(sqlite3* db, std::string_view what) const;
  std::string transferReadError(sqlite3* db) const { return readErrorLine(db, "cannot read transfers"); }
  // "<path>: corrupt trace: <what>", one line.
  std::string corruptLine(std::string_view what) const {
    return detail::oneLine(path_ + ": corrupt trace: " + std::string(what));
  }

  std::string path_;
  Db db_;
  int version_;
  bool transfers_unchecked_;
  bool strings_loaded_ = false;
  std::unordered_map<int64_t, std::string> strings_;
  std::vector<std::string_view> dense_strings_;  // [sid] -> strings_[sid] for sid < size
  ClockModel model_;
  ClockMap map_;  // identity unless the trace's model moves some times
};

// Transfer columns read: all of them where times are mapped (the recording rank says how), all but
// that rank for the plain time-ordered read (TransferRow has no rank: side implies it).
inline constexpr ColumnSet kTransferRead = detail::kAllColumns;
inline constexpr ColumnSet kTransferPlain = kTransferRead & ~detail::columns({TransferTable::rank});
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

}  // namespace ringside::storage::reader
