// storage/src/schema.h — the one definition of the trace schema (DDL), shared by
// the rank writer and the merger, plus the identifiers a reader checks. The tables'
// columns are listed in columns.h.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace ringside::storage::detail {

// PRAGMA application_id of every ringside trace: ASCII "RnGs" (0x526E4773).
// Lets a reader tell a ringside trace from any other SQLite file.
inline constexpr int32_t kApplicationId = 0x526E4773;

// The merged trace's indexes (schema.cpp): those whose keys follow the copy order, created
// before the copy, and the others, built once all rows are in (rank files have none:
// they would slow down the writer inside the traced process).
extern const char* const kMergedInOrderIndexSql;
extern const char* const kMergedIndexSql;

// Creates tables (columns.h) and views and stamps application_id and user_version. Run inside a
// transaction on an empty database.
bool createSchema(sqlite3* db, std::string* error);

// Creates the views (after the tables they read exist).
bool createViews(sqlite3* db, std::string* error);

// Brings a trace of an older version up to kSchemaVersion in place: missing tables created,
// missing columns added, views recreated, user_version stamped. Run inside a transaction.
bool upgradeSchema(sqlite3* db, int from_version, std::string* error);

}  // namespace ringside::storage::detail
