// storage/src/sqlite_util.h — small RAII and error helpers around the SQLite C API.
//
// Internal to storage/. Nothing here throws; every helper reports failure by
// return value and a one-line message.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace ringside::storage::detail {

struct DbCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* st) const noexcept { sqlite3_finalize(st); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Builds a "file:" URI for `path` with every byte outside [A-Za-z0-9/._~-]
// percent-encoded, so that a path is never misread as a URI or as carrying
// query parameters (Debian's SQLite is built with USE_URI=1, which would make
// a plain "file:x?mode=memory" path mean something else). `params` is appended
// verbatim after '?', e.g. "mode=ro".
std::string fileUri(const std::string& path, std::string_view params);

// Opens an existing file (or an empty one this process made) for reading and writing by name,
// never through a link (a planted symlink would redirect the write); `*db` is set even on
// failure (sqlite3_open_v2's contract: close it). Returns SQLite's result code.
int openForWriteNoFollow(const std::string& path, sqlite3** db);
// `path` with the folders above its last component resolved (realpath: no symbolic links, no
// "." or ".."), the last component kept as it is, so SQLITE_OPEN_NOFOLLOW refuses a link only
// there. Unchanged when the folder cannot be resolved (it does not exist: the open then fails).
std::string resolveFolders(const std::string& path);

// Replaces control characters (newlines included) by spaces: errors are one line.
std::string oneLine(std::string_view text);

// "<sqlite message> (<errno text>)" for the last error on `db`.
std::string lastError(sqlite3* db);

// Prepares `sql`; on failure returns nullptr and sets *error.
Stmt prepare(sqlite3* db, std::string_view sql, std::string* error);

// Runs one or more statements without results.
bool exec(sqlite3* db, const char* sql, std::string* error);

// Runs a single-value query (e.g. a PRAGMA); returns false on error or no row.
bool queryInt(sqlite3* db, const char* sql, int64_t* out, std::string* error);

// Binds kNone as NULL, anything else as an integer.
int bindNullable(sqlite3_stmt* st, int index, int64_t value);
// Reads NULL as kNone.
int64_t columnNullable(sqlite3_stmt* st, int index);

// Last path component ("a/b/rank.sqlite" -> "rank.sqlite").
std::string baseName(const std::string& path);

// A hot rollback journal beside `path` (a writer killed mid-commit) is rolled back by opening a
// ringside trace read-write once, as SQLite intends; other files are left alone. True when there
// was nothing to do or the rollback worked; false with *error (one line naming the file) when the
// journal is hot but the file cannot be written. openTraceReadOnly calls it first.
bool recoverHotJournal(const std::string& path, std::string* error);

// What openTraceReadOnly checks of the file's structure (PRAGMA quick_check) before it returns.
enum class OpenCheck {
  kNone,   // nothing: SQLite still reports damage met while reading as SQLITE_CORRUPT
  kWhole,  // the whole file
  // The schema and every table of the trace's version but transfer_data, with their indexes
  // (milliseconds), and PRAGMA cell_size_check on: for a reader that checks transfer_data as it
  // reads it (TraceOpenOptions::transfers_checked_by_reading, docs/schema.md "Reading safely").
  kAllButTransfers,
};

// Opens an existing trace read-only, in defensive mode, with trusted_schema
// off and extensions off, and checks that it is a readable ringside trace of a
// schema version this build understands. On failure returns nullptr and sets
// *error to one line naming `path`. *user_version receives the schema version.
// `check` kNone skips PRAGMA quick_check: only for a file this process has just
// checked (the merger's second pass) or one whose rows are checked as they are read.
Db openTraceReadOnly(const std::string& path, int* user_version, std::string* error, OpenCheck check);
inline Db openTraceReadOnly(const std::string& path, int* user_version, std::string* error,
                            bool quick_check = true) {
  return openTraceReadOnly(path, user_version, error,
                           quick_check ? OpenCheck::kWhole : OpenCheck::kNone);
}

// PRAGMA quick_check of the whole file (`table` empty) or of one table and its indexes: true
// when it passed; else false and *error (one line naming `path`, "corrupt trace: ..." when the
// check found damage).
bool quickCheck(sqlite3* db, const std::string& path, const char* table, std::string* error);

// Applies the reader-side safety settings to an open connection.
bool hardenConnection(sqlite3* db, std::string* error);

}  // namespace ringside::storage::detail
