// storage/src/transfer_lanes.cpp — the lanes pass of forEachTransfer (transfer_order.cpp): one
// read of id and start_ns (and rank, where it maps times) over transfer_data in id order finds
// the stretches of rows whose (start_ns, id) already ascend, and chains the stretches that follow
// each other in time into lanes. On a large table the read is split at an id between the caller's
// connection and the read-ahead's, on two threads; the stretches come out as one read finds them.
// The read also checks the table b-tree it walks: ids strictly ascending, the two halves meeting
// where one read would pass (TraceOpenOptions::transfers_checked_by_reading).
#include "trace_reader_impl.h"

#include <atomic>
#include <map>
#include <system_error>
#include <thread>
#include <utility>

namespace ringside::storage::reader {

// A stretch with the (aligned) start of its first and last rows.
struct Stretch {
  IdRun ids;
  int64_t first_start, last_start;
};

// What a part of the pass found, in id order.
struct LanesPart {
  std::vector<Stretch> stretches;
  int64_t rows = 0;
  int64_t first_id = 0;  // its first row's id (rows > 0)
  // The first part of a split read: the id of the first row past its end, if any (where the
  // second part must start).
  bool has_next = false;
  int64_t next_id = 0;
  bool cut = false;  // stopped at kMaxRuns stretches (both parts together)
  bool failed = false;
  std::string error;  // one line naming the file, "corrupt trace: ..." on damage
};

namespace {

// Fewer ids than this: one read (the second thread and connection would not pay).
constexpr int64_t kMinSplitIds = int64_t{1} << 16;

// Chains `stretches` (in id order) into lanes: each goes to the lane that ended latest before it
// starts, a new lane where none did. *lanes left empty past `max_lanes` lanes.
void chainLanes(const std::vector<Stretch>& stretches, size_t max_lanes,
                std::vector<std::vector<IdRun>>* lanes) {
  // Lanes by the start of their last row.
  std::multimap<int64_t, size_t> lane_by_end;
  for (const Stretch& s : stretches) {
    auto it = lane_by_end.upper_bound(s.first_start);
    size_t lane;
    if (it == lane_by_end.begin()) {
      if (lanes->size() == max_lanes) {
        lanes->clear();
        return;
      }
      lane = lanes->size();
      lanes->emplace_back();
    } else {
      lane = (--it)->second;
      lane_by_end.erase(it);
    }
    (*lanes)[lane].push_back(s.ids);
    lane_by_end.emplace(s.last_start, lane);
  }
}

}  // namespace

// The stretches of the rows with ids after `after` (all of them when `from_start`) up to `upto`
// (inclusive) into *out, read through `db`. Stops with out->failed on a read error or on ids
// that do not ascend (a damaged table b-tree), with out->cut when the stretches of both parts
// (`runs`) pass kMaxRuns.
void SqliteTraceReader::scanStretches(sqlite3* db, bool from_start, int64_t after, int64_t upto,
                                      std::atomic<size_t>* runs, LanesPart* out) const {
  const bool aligned = timesAligned();
  std::string sql = aligned ? "SELECT id, start_ns, rank FROM transfer_data"
                            : "SELECT id, start_ns FROM transfer_data";
  sql += from_start ? " ORDER BY id" : " WHERE id > ?1 ORDER BY id";
  Stmt st = detail::prepare(db, sql, nullptr);
  auto fail = [&](std::string why) {
    out->failed = true;
    out->error = std::move(why);
  };
  if (!st) return fail(transferReadError(db));
  if (!from_start) sqlite3_bind_int64(st.get(), 1, after);
  // A stretch is closed (and counted) when the next one starts, and at the end.
  auto close = [&](const Stretch& run) {
    if (runs->fetch_add(1) >= kMaxRuns) {
      out->cut = true;
      return false;
    }
    out->stretches.push_back(run);
    return true;
  };
  Stretch run{};
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const int64_t id = sqlite3_column_int64(st.get(), 0);
    if (id > upto) {  // the first part's end: the row the second part must start with
      out->has_next = true;
      out->next_id = id;
      break;
    }
    // Ids strictly ascend in a sound table b-tree (and the second part's start after `after`).
    const bool any = out->rows > 0;
    if (any ? id <= run.ids.last : !from_start && id <= after) {
      return fail(corruptLine("transfer_data's ids out of order: " + std::to_string(id) +
                              " after " + std::to_string(any ? run.ids.last : after)));
    }
    int64_t start = sqlite3_column_int64(st.get(), 1);
    if (aligned) start = align(toInt32(detail::columnNullable(st.get(), 2)), start);
    if (!any) {
      out->first_id = id;
      run = {{id, id}, start, start};
    } else if (start < run.last_start) {
      if (!close(run)) return;
      run = {{id, id}, start, start};
    }
    run.ids.last = id;
    run.last_start = start;
    ++out->rows;
  }
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(transferReadError(db));
  if (out->rows > 0) close(run);
}

// The id where a read of transfer_data in two parts splits (the first part up to it), or
// INT64_MAX for one read: a table of fewer than kMinSplitIds ids.
int64_t SqliteTraceReader::transferSplitId() {
  // Two subqueries: SQLite finds a lone min() or max() of the rowid at an end of the b-tree,
  // but both in one SELECT scan the whole table.
  Stmt st = detail::prepare(
      db_.get(),
      "SELECT (SELECT min(id) FROM transfer_data), (SELECT max(id) FROM transfer_data)", nullptr);
  if (!st || sqlite3_step(st.get()) != SQLITE_ROW ||
      sqlite3_column_type(st.get(), 0) == SQLITE_NULL) {
    return INT64_MAX;  // the read says what is wrong
  }
  // Unsigned: a damaged trace's ids may span the whole int64 range.
  const auto lo = static_cast<uint64_t>(sqlite3_column_int64(st.get(), 0));
  const auto hi = static_cast<uint64_t>(sqlite3_column_int64(st.get(), 1));
  if (hi - lo < static_cast<uint64_t>(kMinSplitIds) || hi - lo > (uint64_t{1} << 62))
    return INT64_MAX;
  return static_cast<int64_t>(lo + (hi - lo) / 2);
}

// Finds the lanes (a lane: stretches that follow each other in time, in id order) into *lanes
// and the number of rows into *rows; `second` (may be null) is a second connection to the file
// that reads the second half of a large table on a thread of its own. Leaves *lanes empty when
// there would be more than kMaxRuns stretches or kMaxLanes lanes (a table in no useful order):
// the caller reads through the index instead.
bool SqliteTraceReader::transferLanes(sqlite3* second, std::vector<std::vector<IdRun>>* lanes,
                                      int64_t* rows, std::string* error) {
  lanes->clear();
  const int64_t mid = second != nullptr ? transferSplitId() : INT64_MAX;
  bool split = mid != INT64_MAX;
  std::atomic<size_t> runs{0};
  LanesPart first, rest;
  {
    std::jthread thread;
    if (split) {
      try {
        thread = std::jthread([&] {
          try {
            scanStretches(second, false, mid, INT64_MAX, &runs, &rest);
          } catch (const std::bad_alloc&) {
            rest.failed = true;
            rest.error = path_ + ": out of memory while reading transfers";
          }
        });
      } catch (const std::system_error&) {
        split = false;  // no thread: one read, on this one
      }
    }
    scanStretches(db_.get(), true, 0, split ? mid : INT64_MAX, &runs, &first);
  }  // joined
  for (const LanesPart* part : {&first, &rest}) {
    if (part->failed) {
      if (error) *error = part->error;
      return false;
    }
  }
  *rows = first.rows + rest.rows;
  if (first.cut || rest.cut) return true;  // the index then
  std::vector<Stretch>& all = first.stretches;
  if (split) {
    // The second part must start at the row where the first read stopped: a seek that lands
    // elsewhere (a damaged interior page) would skip or repeat rows.
    if (first.has_next != (rest.rows > 0) || (first.has_next && rest.first_id != first.next_id)) {
      if (error) *error = corruptLine("transfer_data's two reads do not meet after id " +
                                      std::to_string(mid));
      return false;
    }
    // The first stretch of the second part continues the last of the first where one read
    // would not have closed it.
    auto next = rest.stretches.begin();
    if (!all.empty() && next != rest.stretches.end() &&
        !(next->first_start < all.back().last_start)) {
      all.back().ids.last = next->ids.last;
      all.back().last_start = next->last_start;
      ++next;
    }
    all.insert(all.end(), next, rest.stretches.end());
  }
  chainLanes(all, kMaxLanes, lanes);
  return true;
}

}  // namespace ringside::storage::reader
