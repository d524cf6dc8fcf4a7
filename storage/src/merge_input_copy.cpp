// storage/src/merge_input_copy.cpp — pass 2 of a merge on one input: Merger::InputCopy (merge_internal.h).
#include "merge_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringside/storage/privacy.h"
#include "ringside/storage/records.h"
#include "schema.h"

namespace ringside::storage::merging {

bool Merger::InputCopy::run() {
  *input_failed_ = false;
  if (!attach() || !copyStrings() || !moveCollectiveIds() || !copyRankAndMeta() || !copyTables())
    return false;
  if (!exec("COMMIT", "the copy")) return false;
  detach();
  if (lo_ <= hi_) m_.next_collective_id_ += hi_ - lo_ + 1;
  m_.res_.collectives += collectives_;
  m_.res_.transfers += transfers_;
  return true;
}

bool Merger::InputCopy::failed(std::string_view what) {
  sqlite3* out = m_.out_.get();
  const int code = sqlite3_extended_errcode(out);
  const int primary = code & 0xff;
  const bool input = primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB ||
                     primary == SQLITE_BUSY || primary == SQLITE_LOCKED ||
                     primary == SQLITE_CANTOPEN || primary == SQLITE_CONSTRAINT ||
                     primary == SQLITE_MISMATCH || primary == SQLITE_ERROR ||
                     code == SQLITE_IOERR_READ || code == SQLITE_IOERR_SHORT_READ;
  if (input) {
    *why_ = detail::oneLine(in_.path + ": cannot copy " + std::string(what) + ": " +
                            detail::lastError(out));
    *input_failed_ = true;
  } else {
    m_.outFail("cannot write " + std::string(what));
  }
  detach();
  return false;
}

bool Merger::InputCopy::exec(const std::string& sql, const std::string& what,
                             const std::string* text) {
  Stmt st = detail::prepare(m_.out_.get(), sql, nullptr);
  if (!st) return failed(what);
  if (text) {
    sqlite3_bind_text(st.get(), 1, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT);
  }
  if (sqlite3_step(st.get()) != SQLITE_DONE) return failed(what);
  return true;
}

// Attaches the input read-only and begins the transaction.
bool Merger::InputCopy::attach() {
  sqlite3* out = m_.out_.get();
  const std::string uri = detail::fileUri(in_.path, "mode=ro");
  if (!exec("ATTACH DATABASE ?1 AS src", "the file", &uri)) return false;
  attached_ = true;
  // Pass 1 read this file moments ago; make sure it is still that file. Damage met now (pass 1
  // runs no quick_check: merge_probe.cpp) surfaces as a read error and rolls this input back.
  int64_t app_id = 0, version = 0;
  if (!detail::queryInt(out, "PRAGMA src.application_id", &app_id, nullptr) ||
      !detail::queryInt(out, "PRAGMA src.user_version", &version, nullptr)) {
    return failed("the file");
  }
  if (app_id != detail::kApplicationId || version != in_.version) {
    *why_ = detail::oneLine(in_.path + ": changed while merging");
    *input_failed_ = true;
    detach();
    return false;
  }
  return exec("BEGIN", "the file");
}

// Strings: this file's values new to the output are added (in the file's order); temp.sid_map
// then maps each of the file's sids to the output's.
bool Merger::InputCopy::copyStrings() {
  return exec("DELETE FROM temp.sid_map", "strings") &&
         exec("INSERT INTO main.string(value) SELECT s.value FROM src.string AS s"
              " WHERE s.value IS NOT NULL AND NOT EXISTS"
              " (SELECT 1 FROM main.string AS o WHERE o.value = s.value) ORDER BY s.id",
              "strings") &&
         exec("INSERT INTO temp.sid_map(s, o) SELECT s.id, o.id FROM src.string AS s"
              " JOIN main.string AS o ON o.value = s.value",
              "strings") &&
         checkIdentity();
}

// Rank files of one job mostly intern the same strings in the same order: when this file's sids
// 1..n are the output's, a sid column is copied with a range check instead of a lookup per row.
bool Merger::InputCopy::checkIdentity() {
  Stmt st = detail::prepare(m_.out_.get(),
                            "SELECT count(*), coalesce(min(s), 1), coalesce(max(s), 0),"
                            " coalesce(sum(s != o), 0) FROM temp.sid_map",
                            nullptr);
  if (!st || sqlite3_step(st.get()) != SQLITE_ROW) return failed("strings");
  const int64_t n = sqlite3_column_int64(st.get(), 0);
  identity_sids_ = sqlite3_column_int64(st.get(), 1) == 1 &&
                   sqlite3_column_int64(st.get(), 2) == n && sqlite3_column_int64(st.get(), 3) == 0;
  sids_ = n;
  return true;
}

// Collective ids: this input gets the block [next_collective_id_, ...) of the size of its id
// range; transfer.collective_id moves by the same delta, so a transfer of a call cut off before
// its row was written still stays in this block.
bool Merger::InputCopy::moveCollectiveIds() {
  {
    Stmt st = detail::prepare(m_.out_.get(),
                              "SELECT (SELECT min(id) FROM src.collective_data),"
                              " (SELECT max(id) FROM src.collective_data),"
                              " min(collective_id), max(collective_id) FROM src.transfer_data",
                              nullptr);
    if (!st || sqlite3_step(st.get()) != SQLITE_ROW) return failed("collective ids");
    for (int i = 0; i < 4; ++i) {
      if (sqlite3_column_type(st.get(), i) == SQLITE_NULL) continue;
      const int64_t x = sqlite3_column_int64(st.get(), i);
      lo_ = std::min(lo_, x);
      hi_ = std::max(hi_, x);
    }
  }
  if (lo_ > hi_) return true;  // no ids at all
  // Guard against ids that would overflow (only a damaged file has them).
  constexpr int64_t kLimit = int64_t{1} << 60;
  if (lo_ < -kLimit || hi_ > kLimit || hi_ - lo_ + 1 > kLimit ||
      m_.next_collective_id_ + (hi_ - lo_ + 1) > kLimit) {
    *why_ = detail::oneLine(in_.path + ": collective ids out of range (damaged file?)");
    *input_failed_ = true;
    detach();
    return false;
  }
  delta_ = m_.next_collective_id_ - lo_;
  return true;
}

// The SQL expression that fills one written column from the input's row `t`.
std::string Merger::InputCopy::fillExpr(const TableCopy& copy, const TableCopy::Step& step) const {
  const detail::Column& c = copy.def.columns[step.column];
  if (c.since > in_.version) return "NULL";  // the file predates the column
  const std::string col = std::string("t.") + c.name;
  const std::string rank = std::to_string(in_.rank);
  switch (step.fill) {
    case Fill::kCopy:
      return col;
    case Fill::kSid:
      // NULL stays NULL; a dangling sid (damaged file) reads as unknown.
      if (identity_sids_)
        return "CASE WHEN " + col + " BETWEEN 1 AND " + std::to_string(sids_) + " THEN " + col + " END";
      return "(SELECT o FROM temp.sid_map WHERE s = " + col + ")";
    case Fill::kCollectiveId:
      return col + " + " + std::to_string(delta_);  // NULL stays NULL
    case Fill::kFileRankIfNull:
      // A merged input's rows carry their ranks already.
      return in_.merged ? col : "coalesce(" + col + ", " + rank + ")";
    case Fill::kFileRankIfUnknown:
      return in_.merged ? col
                        : "CASE WHEN " + col + " IS NULL OR " + col + " < 0 THEN " + rank +
                              " ELSE " + col + " END";
    case Fill::kFileName:
      return in_.merged ? col : "?1";
    case Fill::kNewId:
      break;  // not written (no step has it)
  }
  return "NULL";
}

bool Merger::InputCopy::copyTable(const TableCopy& copy, const std::string& where,
                                  const std::string& order, std::string_view verb,
                                  const std::string& what, int64_t* rows) {
  std::string names, exprs;
  for (const TableCopy::Step& step : copy.steps) {
    if (!names.empty()) {
      names += ", ";
      exprs += ", ";
    }
    names += copy.def.columns[step.column].name;
    exprs += fillExpr(copy, step);
  }
  const std::string sql = std::string(verb) + " INTO main." + copy.def.name + "(" + names +
                          ") SELECT " + exprs + " FROM src." + copy.def.name + " AS t" + where +
                          order;
  if (!exec(sql, what, &file_)) return false;
  const int64_t n = sqlite3_changes64(m_.out_.get());
  if (rows) {
    *rows += n;
    m_.done_ += n;
  }
  m_.progress();
  return true;
}

// Rank row(s) and meta: a rank file's keys under rank.<r>[#n]., a merged input's rank.* keys as
// they are (its own merge keys are written anew by this merge).
bool Merger::InputCopy::copyRankAndMeta() {
  if (!copyTable(m_.copies_.rank, "", in_.merged ? " ORDER BY rowid" : "", "INSERT", "the rank row",
                 nullptr)) {
    return false;
  }
  if (in_.merged) {
    return exec("INSERT OR REPLACE INTO main.meta(key, value) SELECT key, value FROM src.meta"
                " WHERE key GLOB 'rank.*' ORDER BY rowid",
                "meta");
  }
  std::string prefix = "rank." + std::to_string(in_.rank);
  if (in_.copy_index > 0) prefix += "#" + std::to_string(in_.copy_index + 1);
  prefix += '.';
  return exec("INSERT OR REPLACE INTO main.meta(key, value) SELECT ?1 || key, value FROM src.meta",
              "meta", &prefix);
}

// The calls and their messages (the rows the merge result counts), then the tables of later
// schema versions. A merged input keeps its row order (rank by rank, as a one-step merge wrote
// it), so that merging merged traces gives the one-step merge's rows in the same order.
bool Merger::InputCopy::copyTables() {
  const TableCopies& c = m_.copies_;
  const std::string by_rowid = in_.merged ? " ORDER BY rowid" : "";
  if (!copyTable(c.collective, "", " ORDER BY id", "INSERT", "collectives", &collectives_) ||
      !copyTable(c.transfer, "", " ORDER BY id", "INSERT", "transfers", &transfers_)) {
    return false;
  }
  if (in_.version >= 2) {
    if (!copyTable(c.collective_gpu, "", " ORDER BY collective_id", "INSERT OR REPLACE",
                   "collective GPU rows", nullptr) ||
        !copyTable(c.gpu_activity, "", " ORDER BY id", "INSERT", "GPU activity", nullptr) ||
        // damaged: no communicator id
        !copyTable(c.communicator, " WHERE t.comm_sid IN (SELECT s FROM temp.sid_map)", by_rowid,
                   "INSERT OR REPLACE", "communicators", nullptr)) {
      return false;
    }
  }
  if (in_.version >= 3 &&
      !copyTable(c.anchor, "", in_.merged ? by_rowid : " ORDER BY clock_ns", "INSERT",
                 "clock anchors", nullptr)) {
    return false;
  }
  if (in_.version >= 4 &&
      !copyTable(c.marker, "", in_.merged ? by_rowid : " ORDER BY start_ns", "INSERT",
                 "step markers", nullptr)) {
    return false;
  }
  bool flight = in_.version < 5 ||
         (copyTable(c.flight_dump, "", " ORDER BY rowid", "INSERT", "flight dumps", nullptr) &&
          copyTable(c.flight_call, "", " ORDER BY rowid", "INSERT", "flight calls", nullptr) &&
          copyTable(c.flight_message, "", " ORDER BY rowid", "INSERT", "flight messages",
                    nullptr) &&
          copyTable(c.rank_exit, "", " ORDER BY rowid", "INSERT", "rank exits", nullptr));
  return flight && (in_.version < 6 || copyTable(c.cpu, "", in_.merged ? by_rowid : " ORDER BY t_ns",
                                      "INSERT", "CPU samples", nullptr));
}


}  // namespace ringside::storage::merging
