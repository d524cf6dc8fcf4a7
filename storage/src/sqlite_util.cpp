// storage/src/sqlite_util.cpp — see sqlite_util.h.
#include "sqlite_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "columns.h"
#include "ringside/storage/records.h"
#include "schema.h"

namespace ringside::storage::detail {

std::string resolveFolders(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  // A bare name lives in the working folder (getcwd's path has no links); "dir/", "dir/." and
  // "dir/.." are not file names: left to SQLite as they are.
  if (slash == std::string::npos) return path;
  const std::string name = path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") return path;
  const std::string folder = slash == 0 ? "/" : path.substr(0, slash);
  char* real = ::realpath(folder.c_str(), nullptr);
  if (real == nullptr) return path;  // a missing folder: the open fails with its own error
  std::string out = real;
  std::free(real);
  if (out.empty() || out.back() != '/') out += '/';
  return out + name;
}

std::string fileUri(const std::string& given, std::string_view params) {
  static const char* const kHex = "0123456789ABCDEF";
  // SQLITE_OPEN_NOFOLLOW (outputs, files stored into in place, attached inputs) refuses a link
  // in any component of the name; the protection is meant for the file itself. The folders
  // above it are resolved here, so a link among them is followed and one at the file is still
  // refused.
  const std::string path = resolveFolders(given);
  std::string uri = "file:";
  for (unsigned char c : path) {
    const bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                       c == '/' || c == '.' || c == '_' || c == '~' || c == '-';
    if (plain) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 15];
    }
  }
  // "file:" followed by "//" would start an authority: keep such paths local.
  if (path.size() >= 2 && path[0] == '/' && path[1] == '/') uri.insert(5, "//");
  if (!params.empty()) {
    uri += '?';
    uri += params;
  }
  return uri;
}

int openForWriteNoFollow(const std::string& path, sqlite3** db) {
  return sqlite3_open_v2(fileUri(path, "").c_str(), db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
                             SQLITE_OPEN_NOFOLLOW,
                         nullptr);
}

std::string oneLine(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

std::string lastError(sqlite3* db) {
  if (db == nullptr) return "out of memory";
  std::string msg = sqlite3_errmsg(db);
  const int code = sqlite3_extended_errcode(db);
  const int sys = sqlite3_system_errno(db);
  const int primary = code & 0xff;
  if (sys != 0 && (primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CANTOPEN ||
                   primary == SQLITE_READONLY || primary == SQLITE_PERM)) {
    msg += " (";
    msg += std::strerror(sys);
    msg += ')';
  }
  return oneLine(msg);
}

Stmt prepare(sqlite3* db, std::string_view sql, std::string* error) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(raw);
    if (error) *error = lastError(db);
    return nullptr;
  }
  return Stmt(raw);
}

bool exec(sqlite3* db, const char* sql, std::string* error) {
  char* msg = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &msg);
  if (rc != SQLITE_OK) {
    if (error) *error = msg ? oneLine(msg) : lastError(db);
    sqlite3_free(msg);
    return false;
  }
  return true;
}

bool queryInt(sqlite3* db, const char* sql, int64_t* out, std::string* error) {
  Stmt st = prepare(db, sql, error);
  if (!st) return false;
  const int rc = sqlite3_step(st.get());
  if (rc != SQLITE_ROW) {
    if (error) *error = rc == SQLITE_DONE ? std::string("no result for: ") + sql : lastError(db);
    return false;
  }
  *out = sqlite3_column_int64(st.get(), 0);
  return true;
}

int bindNullable(sqlite3_stmt* st, int index, int64_t value) {
  return value == kNone ? sqlite3_bind_null(st, index) : sqlite3_bind_int64(st, index, value);
}

int64_t columnNullable(sqlite3_stmt* st, int index) {
  // NULL reads as 0 (sqlite3_column_int64 leaves its type alone): ask for the type only then.
  const int64_t v = sqlite3_column_int64(st, index);
  if (v != 0) return v;
  return sqlite3_column_type(st, index) == SQLITE_NULL ? kNone : 0;
}

std::string baseName(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool hardenConnection(sqlite3* db, std::string* error) {
  // Defensive mode: no writes to the schema or shadow tables through SQL,
  // whatever the file contains.
  // trusted_schema off: views/triggers in the file cannot call functions with
  // side effects. Extensions off: a trace can never load code.
  int on = -1;
  if (sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, &on) != SQLITE_OK ||
      sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &on) != SQLITE_OK ||
      sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &on) != SQLITE_OK ||
      sqlite3_enable_load_extension(db, 0) != SQLITE_OK) {
    if (error) *error = "cannot enable SQLite defensive settings: " + lastError(db);
    return false;
  }
  return true;
}

namespace {

std::string notTrace(const std::string& path, std::string_view why) {
  return oneLine(path + ": not a ringside trace (" + std::string(why) + ")");
}

// Classifies an SQLite failure while first touching a file.
std::string openFailure(const std::string& path, sqlite3* db) {
  const int primary = db ? (sqlite3_extended_errcode(db) & 0xff) : SQLITE_NOMEM;
  if (primary == SQLITE_NOTADB) return notTrace(path, "file is not a database");
  if (primary == SQLITE_CORRUPT) return oneLine(path + ": corrupt trace: " + lastError(db));
  return oneLine(path + ": cannot read: " + lastError(db));
}

// Every table of the file's version is there (version 1's first, then each later one's) and,
// with kAllButTransfers, passes quick_check with its indexes, all but transfer_data. Tables the
// file holds beyond those are never read, so never checked.
bool checkTables(sqlite3* db, const std::string& path, int version, OpenCheck check,
                 std::string* error) {
  Stmt st = prepare(db, "SELECT name FROM sqlite_schema WHERE type='table'", nullptr);
  if (!st) {
    *error = openFailure(path, db);
    return false;
  }
  std::set<std::string> tables;
  int step;
  while ((step = sqlite3_step(st.get())) == SQLITE_ROW) {
    const unsigned char* name = sqlite3_column_text(st.get(), 0);
    if (name) tables.insert(reinterpret_cast<const char*>(name));
  }
  if (step != SQLITE_DONE) {
    *error = openFailure(path, db);
    return false;
  }
  for (int since = 1; since <= version; ++since) {
    for (const TableDef* t : kTables) {
      if (t->since == since && !tables.count(t->name)) {
        *error = notTrace(path, std::string("table '") + t->name + "' missing");
        return false;
      }
    }
  }
  if (check != OpenCheck::kAllButTransfers) return true;
  for (const TableDef* t : kTables) {
    if (t->since > version || t == &TransferTable::kDef) continue;
    if (!quickCheck(db, path, t->name, error)) return false;
  }
  return true;
}

}  // namespace

bool quickCheck(sqlite3* db, const std::string& path, const char* table, std::string* error) {
  // Names are our own tables' (columns.h): plain identifiers, quoted all the same.
  const std::string sql = *table ? std::string("PRAGMA quick_check(\"") + table + "\")"
                                 : std::string("PRAGMA quick_check(1)");
  Stmt st = prepare(db, sql, nullptr);
  if (!st || sqlite3_step(st.get()) != SQLITE_ROW) {
    *error = openFailure(path, db);
    return false;
  }
  const unsigned char* text = sqlite3_column_text(st.get(), 0);
  const std::string verdict = text ? reinterpret_cast<const char*>(text) : "";
  if (verdict != "ok") {
    *error = oneLine(path + ": corrupt trace: " + verdict);
    return false;
  }
  return true;
}

bool recoverHotJournal(const std::string& path, std::string* error) {
  struct stat jb {};
  const std::string journal = path + "-journal";
  if (::lstat(journal.c_str(), &jb) != 0 || !S_ISREG(jb.st_mode) || jb.st_size == 0) return true;
  // Only our own files: the header's application id (offset 68, big-endian) says ringside.
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return true;  // the caller's open says why
    unsigned char header[72] = {};
    const ssize_t got = ::pread(fd, header, sizeof header, 0);
    ::close(fd);
    if (got != static_cast<ssize_t>(sizeof header)) return true;
    const uint32_t app = (uint32_t{header[68]} << 24) | (uint32_t{header[69]} << 16) |
                         (uint32_t{header[70]} << 8) | uint32_t{header[71]};
    if (app != static_cast<uint32_t>(kApplicationId)) return true;
  }
  sqlite3* raw = nullptr;
  const int rc = openForWriteNoFollow(path, &raw);
  Db db(raw);
  std::string why;
  if (rc != SQLITE_OK || !hardenConnection(raw, &why)) {
    // No write permission: say what is wrong and how to fix it, not "readonly database".
    if (error) {
      *error = oneLine(path + ": an interrupted write left " + journal +
                       " (a hot journal) that must be rolled back, but the trace cannot be "
                       "opened for writing: " + (why.empty() ? lastError(raw) : why) +
                       "; open it once with write permission (e.g. ringside report as its owner)");
    }
    return false;
  }
  // A live writer's journal is not hot (it holds a lock): then this only waits and reads.
  sqlite3_busy_timeout(raw, 2000);
  int64_t version = 0;
  if (!queryInt(raw, "PRAGMA user_version", &version, &why)) {
    if (error) {
      *error = oneLine(path + ": cannot roll back the interrupted write in " + journal + ": " + why);
    }
    return false;
  }
  return true;
}

Db openTraceReadOnly(const std::string& path, int* user_version, std::string* error, OpenCheck check) {
  std::string scratch;
  std::string& err = error ? *error : scratch;
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) {
    err = oneLine(path + ": cannot open: " + std::strerror(errno));
    return nullptr;
  }
  if (S_ISDIR(sb.st_mode)) {
    err = oneLine(path + ": cannot open: is a directory");
    return nullptr;
  }
  if (sb.st_size == 0) {
    err = oneLine(path + ": empty file");
    return nullptr;
  }
  // Cheap first check, before SQLite sees the bytes: the 16-byte magic.
  {
    // O_NONBLOCK: a FIFO put in the file's place since the stat() above must not block the
    // open; it is refused as not a regular file.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
      err = oneLine(path + ": cannot open: " + std::strerror(errno));
      return nullptr;
    }
    struct stat fsb {};
    if (::fstat(fd, &fsb) != 0 || !S_ISREG(fsb.st_mode)) {
      ::close(fd);
      err = oneLine(path + ": cannot open: not a regular file");
      return nullptr;
    }
    char magic[16] = {};
    size_t got = 0;
    while (got < sizeof magic) {
      const ssize_t n = ::read(fd, magic + got, sizeof magic - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    ::close(fd);
    if (got != sizeof magic || std::memcmp(magic, "SQLite format 3", 16) != 0) {
      err = notTrace(path, "file is not a database");
      return nullptr;
    }
  }

  // A rollback journal left by a writer killed mid-commit (`merge --realign`, a clock model or
  // steps being stored) is "hot": a read-only connection cannot roll it back and fails every
  // query with "attempt to write a readonly database". SQLite recovers it on the first read of
  // a read-write connection, as intended; do that once, for a ringside trace only.
  if (!recoverHotJournal(path, &err)) return nullptr;

  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(fileUri(path, "mode=ro").c_str(), &raw,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    err = oneLine(path + ": cannot open: " + lastError(raw));
    return nullptr;
  }
  sqlite3_extended_result_codes(raw, 1);
  std::string why;
  if (!hardenConnection(raw, &why)) {
    err = oneLine(path + ": " + why);
    return nullptr;
  }
  // A live rank file may be mid-checkpoint: wait a little rather than fail.
  sqlite3_busy_timeout(raw, 2000);

  // quick_check first: every later query may assume a structurally sound file (with
  // kAllButTransfers, the schema first and the tables once they are known, below).
  if (check == OpenCheck::kWhole && !quickCheck(raw, path, "", &err)) return nullptr;
  if (check == OpenCheck::kAllButTransfers) {
    if (!exec(raw, "PRAGMA cell_size_check=ON", nullptr)) {
      err = openFailure(path, raw);
      return nullptr;
    }
    if (!quickCheck(raw, path, "sqlite_master", &err)) return nullptr;
  }
  int64_t app_id = 0;
  int64_t version = 0;
  if (!queryInt(raw, "PRAGMA application_id", &app_id, nullptr) ||
      !queryInt(raw, "PRAGMA user_version", &version, nullptr)) {
    err = openFailure(path, raw);
    return nullptr;
  }
  if (app_id != kApplicationId) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "foreign SQLite database, application_id 0x%llx",
                  static_cast<unsigned long long>(static_cast<uint32_t>(app_id)));
    err = notTrace(path, buf);
    return nullptr;
  }
  if (version > kSchemaVersion) {
    err = oneLine(path + ": trace schema version " + std::to_string(version) +
                  " is newer than this ringside (" + std::to_string(kSchemaVersion) +
                  "); upgrade ringside");
    return nullptr;
  }
  if (version < 1) {
    err = notTrace(path, "schema version " + std::to_string(version));
    return nullptr;
  }
  if (!checkTables(raw, path, static_cast<int>(version), check, &err)) return nullptr;
  if (user_version) *user_version = static_cast<int>(version);
  return db;
}

}  // namespace ringside::storage::detail
