// storage/src/transfer_order.cpp — the reader's transfers in time order, (start_ns, id): the
// table read in storage order as lanes of stretches already in order and merged with a heap
// (forEachTransfer), or one cursor per recording rank where times are mapped and the lanes do
// not pay (forEachTransferAligned); the index otherwise.
#include "trace_reader_impl.h"

#include <algorithm>
#include <map>
#include <utility>

#include "ringside/storage/stage_timings.h"

namespace ringside::storage::reader {
namespace {

// The connection's page cache set to `kib` KiB for a scope, then back to what it was.
class CacheSize {
 public:
  CacheSize(sqlite3* db, int64_t kib) : db_(db) {
    if (!detail::queryInt(db_, "PRAGMA cache_size", &old_, nullptr)) return;
    set_ = -kib < old_;  // only ever larger (negative values are KiB)
    if (set_) set(-kib);
  }
  ~CacheSize() {
    if (set_) set(old_);
  }
  CacheSize(const CacheSize&) = delete;
  CacheSize& operator=(const CacheSize&) = delete;

 private:
  void set(int64_t value) {
    const std::string sql = "PRAGMA cache_size=" + std::to_string(value);
    sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  sqlite3* db_;
  int64_t old_ = 0;
  bool set_ = false;
};

}  // namespace

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
    StageTimer timer("transfer lanes");
    if (!transferLanes(&lanes, error)) return false;
    timer.stop();
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
// min-heap of the lanes' heads, each lane reading its stretches of the table in storage order a
// batch at a time.
bool SqliteTraceReader::mergeTransferLanes(const std::vector<std::vector<IdRun>>& lanes,
                                           const std::function<bool(const TransferRow&)>& fn,
                                           std::string* error) {
  const bool aligned = timesAligned();
  if (!loadStrings(error)) return false;
  // One statement serves every lane: a batch seeks to the lane's next id and reads on from
  // there. A statement per lane would hold a cursor, its pages and its memory per lane (at
  // 16,384 ranks, 32 k lanes), and switching between thousands of statements row by row keeps
  // none of them in the processor's caches.
  Stmt st = detail::prepare(
      db_.get(),
      detail::selectOnlySql(TransferTable::kDef, version_, " WHERE id >= ?1 AND id <= ?2 ORDER BY id",
                            aligned ? kTransferRead : kTransferPlain),
      nullptr);
  if (!st) return readError(error, "cannot read transfers");
  // Memory: batches of kBufferedRows rows (about 55 MiB) in all, whatever the number of lanes
  // (kMaxLanes at most), at most 256 and at least 4 rows a lane, up to twice that where a
  // batch goes on to the end of a stretch that ends within it (a seek saved).
  constexpr size_t kBufferedRows = size_t{1} << 19;
  static_assert(kBufferedRows / kMaxLanes >= 4);
  const size_t batch = std::clamp<size_t>(kBufferedRows / lanes.size(), 4, 256);
  // The pages a lane reads next stay cached between its batches while that fits in 64 MiB.
  const int64_t cache_kib = std::min<int64_t>(64 << 10, static_cast<int64_t>(lanes.size()) * 32);
  CacheSize cache(db_.get(), cache_kib);
  struct Cursor {
    size_t run = 0;     // the stretch of its lane it reads
    int64_t from = 0;   // the next id to read in that stretch
    size_t next = 0;    // rows[next] is its head
    std::vector<TransferRow> rows;
  };
  std::vector<Cursor> cursors(lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) cursors[i].from = lanes[i][0].first;
  // Refills cursor i's batch; false when its lane has no more rows (or on error: *failed).
  bool failed = false;
  auto refill = [&](uint32_t i) {
    Cursor& c = cursors[i];
    c.rows.clear();
    c.next = 0;
    while (c.run < lanes[i].size() && c.rows.size() < batch) {
      const IdRun& run = lanes[i][c.run];
      // A stretch's rows are at most its ids (they may have gaps).
      const auto room = static_cast<int64_t>(batch - c.rows.size());
      const auto whole = static_cast<int64_t>(batch) + room;
      const int64_t want = run.last - c.from < whole ? whole : room;
      sqlite3_bind_int64(st.get(), 1, c.from);
      sqlite3_bind_int64(st.get(), 2, run.last);
      int rc = SQLITE_ROW;
      for (int64_t n = 0; n < want && (rc = sqlite3_step(st.get())) == SQLITE_ROW; ++n) {
        int32_t rank = -1;
        c.rows.push_back(aligned ? alignedTransferRow(st.get(), &rank)
                                 : transferRow<kTransferPlain>(st.get()));
      }
      sqlite3_reset(st.get());
      if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        failed = true;
        return false;
      }
      // rc is SQLITE_ROW only when this stretch gave rows: the last one is its own.
      if (rc == SQLITE_DONE || c.rows.back().id >= run.last) {
        if (++c.run < lanes[i].size()) c.from = lanes[i][c.run].first;
      } else {
        c.from = c.rows.back().id + 1;
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

}  // namespace ringside::storage::reader
