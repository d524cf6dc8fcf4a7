// storage/src/clock_store.cpp — writes a clock model into a merged trace (clock_model.h).
#include <sqlite3.h>

#include <string>

#include "columns.h"
#include "ringside/storage/clock_model.h"
#include "ringside/storage/records.h"
#include "schema.h"
#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::ClockDomainTable;
using detail::ClockRankTable;
using detail::ClockSegmentTable;
using detail::Db;
using detail::param;
using detail::Stmt;

bool fail(std::string* error, const std::string& path, const std::string& what, sqlite3* db) {
  if (error) {
    *error = detail::oneLine(path + ": cannot store the clock model: " + what +
                             (db ? ": " + detail::lastError(db) : std::string()));
  }
  return false;
}

bool bindText(sqlite3_stmt* st, int index, const std::string& s) {
  if (s.empty()) return sqlite3_bind_null(st, index) == SQLITE_OK;
  return sqlite3_bind_text(st, index, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT) ==
         SQLITE_OK;
}

// A value or, when negative (unknown), NULL.
void bindKnown(sqlite3_stmt* st, int index, int64_t v) {
  if (v < 0) {
    sqlite3_bind_null(st, index);
  } else {
    sqlite3_bind_int64(st, index, v);
  }
}

bool stepReset(sqlite3_stmt* st) {
  const bool ok = sqlite3_step(st) == SQLITE_DONE;
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return ok;
}

bool writeRows(sqlite3* db, const ClockModel& model) {
  const char* clear = "DELETE FROM clock_domain; DELETE FROM clock_rank; DELETE FROM clock_segment;";
  if (!detail::exec(db, clear, nullptr)) return false;
  {
    using T = ClockDomainTable;
    Stmt st = detail::prepare(db, detail::insertSql(T::kDef), nullptr);
    if (!st) return false;
    for (const ClockDomain& d : model.domains) {
      sqlite3_stmt* s = st.get();
      sqlite3_bind_int64(s, param(T::id), d.id);
      bindText(s, param(T::host), d.host);
      bindText(s, param(T::boot_id), d.boot_id);
      bindText(s, param(T::method), d.method);
      sqlite3_bind_int64(s, param(T::offset_ns), d.offset_ns);
      sqlite3_bind_double(s, param(T::drift_ppm), d.drift_ppm);
      sqlite3_bind_int64(s, param(T::uncertainty_ns), d.uncertainty_ns);
      sqlite3_bind_int64(s, param(T::bounds), d.bounds);
      sqlite3_bind_int64(s, param(T::violated), d.violated);
      sqlite3_bind_int64(s, param(T::anchors), d.anchors);
      sqlite3_bind_int64(s, param(T::segments), d.segments);
      bindKnown(s, param(T::parent), d.parent);
      bindKnown(s, param(T::parent_uncertainty_ns), d.parent_uncertainty_ns);
      if (!stepReset(s)) return false;
    }
  }
  {
    using T = ClockRankTable;
    Stmt st = detail::prepare(db, detail::insertSql(T::kDef, "INSERT OR REPLACE"), nullptr);
    if (!st) return false;
    for (const auto& [rank, domain] : model.rank_domain) {
      sqlite3_bind_int64(st.get(), param(T::rank), rank);
      sqlite3_bind_int64(st.get(), param(T::domain), domain);
      if (!stepReset(st.get())) return false;
    }
  }
  using T = ClockSegmentTable;
  Stmt st = detail::prepare(db, detail::insertSql(T::kDef), nullptr);
  if (!st) return false;
  for (const ClockSegment& g : model.segments) {
    sqlite3_stmt* s = st.get();
    sqlite3_bind_int64(s, param(T::domain), g.domain);
    sqlite3_bind_int64(s, param(T::lo_ns), g.lo_ns);
    sqlite3_bind_int64(s, param(T::hi_ns), g.hi_ns);
    sqlite3_bind_int64(s, param(T::ref_ns), g.ref_ns);
    sqlite3_bind_int64(s, param(T::offset_ns), g.offset_ns);
    sqlite3_bind_double(s, param(T::rate), g.rate);
    if (!stepReset(s)) return false;
  }
  return true;
}

bool writeMeta(sqlite3* db, const ClockModel& model) {
  Stmt st = detail::prepare(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)", nullptr);
  if (!st) return false;
  const std::pair<const char*, std::string> rows[] = {
      {"clock_method", model.method},
      {"clock_domains", std::to_string(model.domains.size())},
      {"clock_bounds", std::to_string(model.bounds)},
      {"clock_bounds_violated", std::to_string(model.violated)},
      {"clock_messages_checked", std::to_string(model.messages_checked)},
      {"clock_messages_before_sent", std::to_string(model.messages_before_sent)},
      {"clock_uncertainty_ns", std::to_string(model.maxUncertaintyNs())},
  };
  for (const auto& [key, value] : rows) {
    sqlite3_bind_text(st.get(), 1, key, -1, SQLITE_STATIC);
    bindText(st.get(), 2, value);
    if (!stepReset(st.get())) return false;
  }
  return true;
}

}  // namespace

bool storeClockModel(const std::string& path, const ClockModel& model, std::string* error) {
  sqlite3* raw = nullptr;
  // Never through a link (a planted symlink would redirect the write).
  const int rc = detail::openForWriteNoFollow(path, &raw);
  Db db(raw);
  if (rc != SQLITE_OK) return fail(error, path, "cannot open", raw);
  sqlite3_busy_timeout(raw, 5000);
  std::string why;
  if (!detail::hardenConnection(raw, &why)) return fail(error, path, why, nullptr);
  int64_t app_id = 0;
  int64_t version = 0;
  if (!detail::queryInt(raw, "PRAGMA application_id", &app_id, nullptr) ||
      !detail::queryInt(raw, "PRAGMA user_version", &version, nullptr)) {
    return fail(error, path, "cannot read the header", raw);
  }
  if (app_id != detail::kApplicationId || version < 1) {
    return fail(error, path, "not a ringside trace", nullptr);
  }
  if (version > kSchemaVersion) {
    return fail(error, path, "trace schema version " + std::to_string(version) +
                                 " is newer than this ringside", nullptr);
  }
  if (!detail::exec(raw, "BEGIN IMMEDIATE", nullptr)) return fail(error, path, "cannot lock", raw);
  const bool ok =
      detail::upgradeSchema(raw, static_cast<int>(version), &why) &&
      detail::exec(raw,
                   "CREATE INDEX IF NOT EXISTS transfer_by_rank_time ON transfer_data(rank, start_ns);",
                   &why) &&
      writeRows(raw, model) && writeMeta(raw, model);
  if (!ok) {
    const std::string what = why.empty() ? detail::lastError(raw) : why;
    detail::exec(raw, "ROLLBACK", nullptr);
    return fail(error, path, what, nullptr);
  }
  if (!detail::exec(raw, "COMMIT", &why)) {
    detail::exec(raw, "ROLLBACK", nullptr);
    return fail(error, path, "cannot commit: " + why, nullptr);
  }
  return true;
}

}  // namespace ringside::storage
