// storage/src/transfer_order.cpp — the reader's transfers in time order, (start_ns, id): the
// table read in storage order as lanes of stretches already in order and merged with a heap
// (forEachTransfer), or one cursor per recording rank where times are mapped and the lanes do
// not pay (forEachTransferAligned); the index otherwise.
#include "trace_reader_impl.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>
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
  // Leaves the new size in place (a connection of the caller's own).
  void keep() { set_ = false; }
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
  if (!checkTransfersWhole(error)) return false;
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
    int64_t rows = 0;
    StageTimer timer("transfer lanes");
    Db second = secondConnection();
    if (!transferLanes(second.get(), &lanes, &rows, error)) return false;
    timer.stop();
    if (!lanes.empty()) return mergeTransferLanes(lanes, rows, std::move(second), fn, error);
  } catch (const std::bad_alloc&) {
    if (error) *error = path_ + ": out of memory while reading transfers";
    return false;
  }
  // Through an index: checked whole first where it was not at open.
  if (!checkTransfersWhole(error)) return false;
  if (timesAligned()) return forEachTransferAligned(fn, error);
  return visit(detail::selectOnlySql(TransferTable::kDef, version_, " ORDER BY start_ns, id",
                                     kTransferPlain),
               "transfers", [&](sqlite3_stmt* s) { return fn(transferRow<kTransferPlain>(s)); },
               error);
}

Db SqliteTraceReader::secondConnection() const {
  int version = 0;
  std::string why;
  Db db = detail::openTraceReadOnly(path_, &version, &why, detail::OpenCheck::kNone);
  if (!db || version != version_) return nullptr;
  // The pages it reads are checked as the caller's connection checks them.
  if (transfers_unchecked_ && !detail::exec(db.get(), "PRAGMA cell_size_check=ON", nullptr))
    return nullptr;
  return db;
}

// Where a lane's reading stands: the stretch it reads and the next id in it.
struct LanePos {
  size_t run = 0;
  int64_t from = 0;
};

// How a lane's batch was read.
enum class LaneRead {
  kOk,
  kError,     // SQLite's error, on the statement's connection
  kMisplaced,  // a row outside the stretch or out of id order: a damaged table b-tree
  kNoMemory,
};

// Reads the next batch of a lane (its stretches `runs`, at *pos) into *rows through `st`, one
// statement for every lane (WHERE id >= ?1 AND id <= ?2 ORDER BY id): a batch seeks to the lane's
// next id and reads on from there. About `batch` rows, up to twice that where a stretch ends
// within that (a seek saved); none at the lane's end. Checks that the rows are the stretch's, in
// id order (SQLite checks the upper bound): a seek through a damaged interior page lands
// elsewhere.
template <typename Decode>
LaneRead readLaneBatch(sqlite3_stmt* st, const std::vector<IdRun>& runs, size_t batch,
                       const Decode& decode, LanePos* pos, std::vector<TransferRow>* rows) {
  rows->clear();
  while (pos->run < runs.size() && rows->size() < batch) {
    const IdRun& run = runs[pos->run];
    // A stretch's rows are at most its ids (they may have gaps); from <= last, and the distance
    // is taken unsigned (a damaged trace's ids may span the whole int64 range).
    const size_t room = batch - rows->size();
    const size_t whole = batch + room;
    const uint64_t left = static_cast<uint64_t>(run.last) - static_cast<uint64_t>(pos->from);
    const size_t want = left < whole ? whole : room;
    sqlite3_bind_int64(st, 1, pos->from);
    sqlite3_bind_int64(st, 2, run.last);
    const size_t before = rows->size();
    int rc = SQLITE_ROW;
    for (size_t n = 0; n < want && (rc = sqlite3_step(st)) == SQLITE_ROW; ++n) {
      rows->push_back(decode(st));
    }
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return LaneRead::kError;
    int64_t least = pos->from;  // the least id the next row may have
    for (size_t k = before; k < rows->size(); ++k) {
      const int64_t id = (*rows)[k].id;
      if (id < least) return LaneRead::kMisplaced;
      least = id + (id < INT64_MAX);  // id == INT64_MAX is the stretch's last
    }
    // rc is SQLITE_ROW only when this stretch gave rows: the last one is its own.
    if (rc == SQLITE_DONE || rows->back().id >= run.last) {
      if (++pos->run < runs.size()) pos->from = runs[pos->run].first;
    } else {
      pos->from = rows->back().id + 1;
    }
  }
  return LaneRead::kOk;
}

// The lanes' batches, read ahead on a thread of its own through a connection of its own while
// the caller merges the rows it has (decoding the rows is most of the reader's time: the two
// then share it). Each lane holds the batch it is merged from and, at most, the next one. A
// batch is asked for as soon as the one before it is taken, in the order the merge takes them,
// so the thread is mostly a batch ahead. A batch the caller needs that the thread has not begun
// the caller reads itself, through its own statement, instead of waiting; while the thread reads
// the very batch the caller needs, the caller reads the one wanted last (when the decoding is the
// slower side, the two threads share it from both ends of the queue). Without a thread or a
// second connection, next() reads every batch itself.
class LaneReadAhead {
 public:
  using Runs = std::vector<std::vector<IdRun>>;
  using DecodeFn = std::function<TransferRow(sqlite3_stmt*)>;
  // The one line for a batch that could not be read (on the statement's connection).
  using ExplainFn = std::function<std::string(sqlite3_stmt*, LaneRead)>;
  LaneReadAhead(const Runs& lanes, size_t batch, DecodeFn decode, ExplainFn explain)
      : lanes_(lanes), batch_(batch), decode_(std::move(decode)), explain_(std::move(explain)),
        pos_(lanes.size()), slots_(lanes.size()) {
    for (size_t i = 0; i < lanes.size(); ++i) pos_[i].from = lanes[i][0].first;
  }
  ~LaneReadAhead() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wanted_.notify_one();
    if (thread_.joinable()) thread_.join();
  }
  LaneReadAhead(const LaneReadAhead&) = delete;
  LaneReadAhead& operator=(const LaneReadAhead&) = delete;

  // Starts the thread on `db` (its own connection, `st` a statement of it); false: no thread,
  // next() reads inline.
  bool start(Db db, Stmt st) {
    own_db_ = std::move(db);
    own_st_ = std::move(st);
    for (uint32_t i = 0; i < lanes_.size(); ++i) {
      todo_.push_back(i);
      slots_[i].state = State::kWanted;
    }
    try {
      thread_ = std::thread([this] { run(); });
      return true;
    } catch (const std::system_error&) {
      todo_.clear();
      return false;
    }
  }
  // Lane i's next batch into *rows (empty at the lane's end); false on a read error, *error
  // saying it. `st` is the caller's statement: for every batch without the thread, else for a
  // batch the thread has not begun.
  bool next(uint32_t i, sqlite3_stmt* st, std::vector<TransferRow>* rows, std::string* error) {
    if (!thread_.joinable()) return readHere(i, st, rows, error);
    Slot& slot = slots_[i];
    std::unique_lock<std::mutex> lock(mu_);
    if (slot.state == State::kEnded) {
      rows->clear();
      return true;
    }
    if (slot.state == State::kWanted && !failed_) {
      // Not begun: read here (the thread skips the lane's place in todo_). Lane i's position is
      // this thread's until the lane is wanted again.
      slot.state = State::kReadHere;
      lock.unlock();
      const bool ok = readHere(i, st, rows, error);
      lock.lock();
      if (!ok) return false;
      want(i, rows->empty() || pos_[i].run == lanes_[i].size());
      return true;
    }
    // The thread reads this very batch: rather than wait for it, read the batch wanted last
    // (the back of todo_) meanwhile, so that the two threads share the decoding instead of the
    // caller idling (on a 1,024-rank trace of 20 M transfers it had waited a third of its time).
    while (slot.state == State::kReading && !failed_) {
      const uint32_t j = lastWanted();
      if (j == kNoLane) break;
      slots_[j].state = State::kReadHere;
      lock.unlock();
      std::vector<TransferRow>& into = slots_[j].rows;
      const bool ok = readHere(j, st, &into, error);
      lock.lock();
      if (!ok) return false;
      slots_[j].state = State::kFull;
      slots_[j].last = into.empty() || pos_[j].run == lanes_[j].size();
    }
    ready_.wait(lock, [&] { return slot.state == State::kFull || failed_; });
    if (failed_) {
      *error = error_;
      return false;
    }
    rows->swap(slot.rows);
    want(i, slot.last);
    return true;
  }

 private:
  enum class State {
    kWanted,    // the lane's next batch is wanted (the lane is in todo_)
    kReading,   // the thread reads it
    kReadHere,  // the caller reads it
    kFull,      // the thread has read it: slot.rows
    kEnded,     // the caller took the lane's last batch
  };
  struct Slot {
    std::vector<TransferRow> rows;
    State state = State::kWanted;
    bool last = false;  // kFull: the lane has no rows after these
  };
  bool readHere(uint32_t i, sqlite3_stmt* st, std::vector<TransferRow>* rows, std::string* error) {
    const LaneRead read = readLaneBatch(st, lanes_[i], batch_, decode_, &pos_[i], rows);
    if (read != LaneRead::kOk) *error = explain_(st, read);
    return read == LaneRead::kOk;
  }
  static constexpr uint32_t kNoLane = UINT32_MAX;
  // Under mu_: the lane wanted last that nobody reads yet (dropping the entries behind it that
  // are no longer wanted), or kNoLane.
  uint32_t lastWanted() {
    while (!todo_.empty()) {
      const uint32_t j = todo_.back();
      if (slots_[j].state == State::kWanted) return j;
      todo_.pop_back();
    }
    return kNoLane;
  }
  // Under mu_: the caller has lane i's batch; the next one is wanted unless that was the last.
  void want(uint32_t i, bool last) {
    if (last) {
      slots_[i].state = State::kEnded;
      return;
    }
    slots_[i].state = State::kWanted;
    todo_.push_back(i);
    wanted_.notify_one();
  }
  void run() {
    std::vector<TransferRow> rows;
    for (;;) {
      uint32_t i = 0;
      {
        std::unique_lock<std::mutex> lock(mu_);
        // A lane the caller read itself may be in todo_ more than once: only a wanted one counts.
        wanted_.wait(lock, [&] {
          while (!todo_.empty() && slots_[todo_.front()].state != State::kWanted) todo_.pop_front();
          return stop_ || !todo_.empty();
        });
        if (stop_) return;
        i = todo_.front();
        todo_.pop_front();
        slots_[i].state = State::kReading;
      }
      LaneRead read = LaneRead::kOk;
      try {
        read = readLaneBatch(own_st_.get(), lanes_[i], batch_, decode_, &pos_[i], &rows);
      } catch (const std::bad_alloc&) {
        read = LaneRead::kNoMemory;
      }
      const bool ok = read == LaneRead::kOk;
      std::string why = ok ? std::string() : explain_(own_st_.get(), read);
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!ok) {
          failed_ = true;
          error_ = std::move(why);
        } else {
          rows.swap(slots_[i].rows);
          slots_[i].state = State::kFull;
          slots_[i].last = slots_[i].rows.empty() || pos_[i].run == lanes_[i].size();
        }
      }
      ready_.notify_one();
      if (!ok) return;
    }
  }

  const Runs& lanes_;
  const size_t batch_;
  const DecodeFn decode_;
  const ExplainFn explain_;
  std::vector<LanePos> pos_;  // lane i's: the reader's of its batch (Slot::state says which)
  Db own_db_;
  Stmt own_st_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable wanted_, ready_;
  std::deque<uint32_t> todo_;  // lanes whose next batch is wanted, in the order they were
  std::vector<Slot> slots_;
  bool stop_ = false, failed_ = false;
  std::string error_;  // failed_: why
};

// The rows of `lanes`, each already in (start_ns, id) order, merged on (start_ns, id): a
// min-heap of the lanes' heads, each lane reading its stretches of the table in storage order a
// batch at a time (LaneReadAhead). All `rows` rows the lanes pass found must come back.
bool SqliteTraceReader::mergeTransferLanes(const std::vector<std::vector<IdRun>>& lanes,
                                           int64_t rows, Db second,
                                           const std::function<bool(const TransferRow&)>& fn,
                                           std::string* error) {
  const bool aligned = timesAligned();
  if (!loadStrings(error)) return false;
  const std::string sql = detail::selectOnlySql(
      TransferTable::kDef, version_, " WHERE id >= ?1 AND id <= ?2 ORDER BY id",
      aligned ? kTransferRead : kTransferPlain);
  Stmt st = detail::prepare(db_.get(), sql, nullptr);
  if (!st) return readError(error, "cannot read transfers");
  // Memory: the batches of all lanes, two a lane (the one merged, the one read ahead), hold at
  // most 2 x kBufferedRows rows (about 110 MiB) whatever the number of lanes (kMaxLanes at most):
  // at most 2,048 and at least 2 rows a batch, up to twice that where a batch goes on to the end
  // of a stretch that ends within it. (At most 128 made 1,024 lanes hand a batch between the
  // threads every 128 rows: 5 % more CPU and half again as many context switches on the
  // 8.4 M-row trace.)
  constexpr size_t kBufferedRows = size_t{1} << 19;
  static_assert(kBufferedRows / kMaxLanes / 2 >= 2);
  const size_t batch = std::clamp<size_t>(kBufferedRows / lanes.size() / 2, 2, 2048);
  // The page a lane reads next stays cached between its batches while that fits in 32 MiB (on
  // the connection that reads them).
  const int64_t cache_kib = std::min<int64_t>(32 << 10, static_cast<int64_t>(lanes.size()) * 16);
  LaneReadAhead ahead(
      lanes, batch,
      [this, aligned](sqlite3_stmt* s) {
        int32_t rank = -1;
        return aligned ? alignedTransferRow(s, &rank) : transferRow<kTransferPlain>(s);
      },
      [this](sqlite3_stmt* s, LaneRead read) {
        if (read == LaneRead::kNoMemory) return path_ + ": out of memory while reading transfers";
        return read == LaneRead::kError
                   ? transferReadError(sqlite3_db_handle(s))
                   : corruptLine("transfer_data's rows are not where its first read found them");
      });
  bool ahead_started = false;
  {
    // The reading thread's own connection: this one stays the caller's (fn may use the reader).
    Stmt own = second ? detail::prepare(second.get(), sql, nullptr) : Stmt();
    if (own) {
      CacheSize(second.get(), cache_kib).keep();
      ahead_started = ahead.start(std::move(second), std::move(own));
    }
  }
  CacheSize cache(db_.get(), ahead_started ? 0 : cache_kib);
  struct Cursor {
    size_t next = 0;  // rows[next] is its head
    std::vector<TransferRow> rows;
  };
  std::vector<Cursor> cursors(lanes.size());
  // Refills cursor i's batch; false when its lane has no more rows (or on error: *failed).
  bool failed = false;
  std::string why;  // failed: the one line
  int64_t read = 0;  // rows the lanes gave
  auto refill = [&](uint32_t i) {
    Cursor& c = cursors[i];
    c.next = 0;
    if (!ahead.next(i, st.get(), &c.rows, &why)) {
      failed = true;
      if (error) *error = why;
      c.rows.clear();
    }
    read += static_cast<int64_t>(c.rows.size());
    return !c.rows.empty();
  };
  // Asks for a row's first and last cache lines.
  auto prefetch = [](const TransferRow& r) {
    const char* at = reinterpret_cast<const char*>(&r);
    __builtin_prefetch(at);
    __builtin_prefetch(at + sizeof(TransferRow) - 1);
  };
  // Advances cursor i to its next row; false at its lane's end. The row after the new head is
  // asked for now: the lane comes up again only after the other lanes' heads (1,024 of them on a
  // 1,024-rank trace), its row filled long before on the other thread, a cache and TLB miss each
  // when first touched; asked for a lane's turn ahead, it waits in the cache instead.
  auto advance = [&](uint32_t i) {
    Cursor& c = cursors[i];
    if (++c.next >= c.rows.size() && !refill(i)) return false;
    if (c.next + 1 < c.rows.size()) prefetch(c.rows[c.next + 1]);
    return true;
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
    if (failed) return false;
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
  // The earliest row is copied out and the heap moves on before fn sees it, so that the next
  // row is known while fn works and is asked for then: with thousands of lanes a lane's row
  // (read long before, on the other thread) is no longer cached when its turn comes, and fn's
  // first touch of it waited for memory (the copy's place: its lane may move on meanwhile).
  TransferRow current;
  while (!heap.empty()) {
    const uint32_t i = heap[0].cursor;
    current = cursors[i].rows[cursors[i].next];
    if (advance(i)) {
      heap[0] = head(i);
      siftDown();
    } else {
      if (failed) return false;
      heap[0] = heap.back();
      heap.pop_back();
      if (!heap.empty()) siftDown();
    }
    if (!heap.empty()) {
      const Cursor& c = cursors[heap[0].cursor];
      prefetch(c.rows[c.next]);
    }
    if (!fn(current)) return true;
  }
  // Each stretch's rows came back in id order and within its ids: as many as the first read
  // found means the same rows (a seek that skipped some would give fewer).
  if (read != rows) {
    if (error) {
      *error = corruptLine("transfer_data gave " + std::to_string(read) + " rows on its second read, " +
                           std::to_string(rows) + " on its first");
    }
    return false;
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
