// storage/src/schema.h — the one definition of the trace schema (DDL), shared by
// the rank writer and the merger, plus the identifiers a reader checks.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

namespace ringside::storage::detail {

// PRAGMA application_id of every ringside trace: ASCII "RnGs" (0x526E4773).
// Lets a reader tell a ringside trace from any other SQLite file.
inline constexpr int32_t kApplicationId = 0x526E4773;

// Tables, then views. Run inside a transaction on an empty database.
extern const char* const kSchemaSql;

// Indexes built by the merger once all rows are in (rank files have none:
// they would slow down the writer inside the traced process).
extern const char* const kMergedIndexSql;

// Physical tables a reader requires.
inline constexpr const char* kRequiredTables[] = {"string", "rank", "collective_data",
                                                  "transfer_data", "meta"};
// Added by version 2 (required in files that say they are version 2 or later).
inline constexpr const char* kRequiredTablesV2[] = {"collective_gpu_data", "gpu_activity_data",
                                                    "communicator_data"};

// Creates tables and views and stamps application_id and user_version.
bool createSchema(sqlite3* db, std::string* error);

}  // namespace ringside::storage::detail
