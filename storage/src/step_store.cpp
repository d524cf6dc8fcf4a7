// storage/src/step_store.cpp — writes detected training steps into a merged trace (step_store.h).
#include "ringside/storage/step_store.h"

#include <sqlite3.h>

#include <string>

#include "columns.h"
#include "schema.h"
#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::Db;
using detail::param;
using detail::Stmt;
using T = detail::StepTable;

bool fail(std::string* error, const std::string& path, const std::string& what) {
  if (error) *error = detail::oneLine(path + ": cannot store the steps: " + what);
  return false;
}

// The string id of `value` in the trace, added when missing.
bool stringId(sqlite3* db, const std::string& value, int64_t* sid) {
  Stmt find = detail::prepare(db, "SELECT id FROM string WHERE value = ?1", nullptr);
  if (!find) return false;
  sqlite3_bind_text(find.get(), 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(find.get()) == SQLITE_ROW) {
    *sid = sqlite3_column_int64(find.get(), 0);
    return true;
  }
  Stmt add = detail::prepare(db, "INSERT INTO string(value) VALUES(?1)", nullptr);
  if (!add) return false;
  sqlite3_bind_text(add.get(), 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  if (sqlite3_step(add.get()) != SQLITE_DONE) return false;
  *sid = sqlite3_last_insert_rowid(db);
  return true;
}

bool writeRows(sqlite3* db, const std::vector<StepRow>& steps,
               const std::vector<std::pair<std::string, std::string>>& extra) {
  if (!detail::exec(db, "DELETE FROM step", nullptr)) return false;
  Stmt st = detail::prepare(db, detail::insertSql(T::kDef), nullptr);
  if (!st) return false;
  std::string last_comm;
  int64_t comm_sid = -1;
  for (const StepRow& row : steps) {
    if (comm_sid < 0 || row.comm != last_comm) {
      if (row.comm.empty() || !stringId(db, row.comm, &comm_sid)) return false;
      last_comm = row.comm;
    }
    sqlite3_stmt* s = st.get();
    sqlite3_bind_int64(s, param(T::step), row.step);
    sqlite3_bind_int64(s, param(T::comm_sid), comm_sid);
    sqlite3_bind_int64(s, param(T::first_seq), row.first_seq);
    sqlite3_bind_int64(s, param(T::last_seq), row.last_seq);
    sqlite3_bind_int64(s, param(T::complete), row.complete ? 1 : 0);
    const bool ok = sqlite3_step(s) == SQLITE_DONE;
    sqlite3_reset(s);
    if (!ok) return false;
  }
  Stmt meta = detail::prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", nullptr);
  if (!meta) return false;
  std::vector<std::pair<std::string, std::string>> rows = {
      {"steps_detected", std::to_string(steps.size())},
      {"steps_comm", steps.empty() ? std::string() : steps.front().comm},
  };
  rows.insert(rows.end(), extra.begin(), extra.end());
  for (const auto& [key, value] : rows) {
    sqlite3_bind_text(meta.get(), 1, key.c_str(), -1, SQLITE_TRANSIENT);
    if (value.empty()) sqlite3_bind_null(meta.get(), 2);
    else sqlite3_bind_text(meta.get(), 2, value.data(), static_cast<int>(value.size()),
                           SQLITE_TRANSIENT);
    const bool ok = sqlite3_step(meta.get()) == SQLITE_DONE;
    sqlite3_reset(meta.get());
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool storeSteps(const std::string& path, const std::vector<StepRow>& steps, std::string* error,
                const std::vector<std::pair<std::string, std::string>>& meta) {
  sqlite3* raw = nullptr;
  // Never through a link (a planted symlink would redirect the write).
  const int rc = detail::openForWriteNoFollow(path, &raw);
  Db db(raw);
  if (rc != SQLITE_OK) return fail(error, path, "cannot open: " + detail::lastError(raw));
  sqlite3_busy_timeout(raw, 5000);
  std::string why;
  if (!detail::hardenConnection(raw, &why)) return fail(error, path, why);
  int64_t app_id = 0;
  int64_t version = 0;
  if (!detail::queryInt(raw, "PRAGMA application_id", &app_id, nullptr) ||
      !detail::queryInt(raw, "PRAGMA user_version", &version, nullptr)) {
    return fail(error, path, "cannot read the header: " + detail::lastError(raw));
  }
  if (app_id != detail::kApplicationId || version < 1) return fail(error, path, "not a ringside trace");
  if (version > kSchemaVersion) {
    return fail(error, path,
                "trace schema version " + std::to_string(version) + " is newer than this ringside");
  }
  if (!detail::exec(raw, "BEGIN IMMEDIATE", nullptr)) {
    return fail(error, path, "cannot lock: " + detail::lastError(raw));
  }
  const bool ok =
      detail::upgradeSchema(raw, static_cast<int>(version), &why) && writeRows(raw, steps, meta);
  if (!ok) {
    const std::string what = why.empty() ? detail::lastError(raw) : why;
    detail::exec(raw, "ROLLBACK", nullptr);
    return fail(error, path, what);
  }
  if (!detail::exec(raw, "COMMIT", &why)) {
    detail::exec(raw, "ROLLBACK", nullptr);
    return fail(error, path, "cannot commit: " + why);
  }
  return true;
}

}  // namespace ringside::storage
