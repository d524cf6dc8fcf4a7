// storage/src/rank_file_status.cpp — what `record` and `merge` ask of a rank file before merging
// it: its status (host, pid, end state, run id), whether it is another program's SQLite file, and
// whether its writer may still be running (merge.h).
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

namespace ringside::storage {

using merging::textOf;
using detail::Db;
using detail::Stmt;

bool readRankFileStatus(const std::string& path, RankFileStatus* out, std::string* error) {
  *out = RankFileStatus{};
  int version = 0;
  Db db = detail::openTraceReadOnly(path, &version, error, /*quick_check=*/false);
  if (!db) return false;
  sqlite3* raw = db.get();
  {
    using T = detail::RankTable;
    const std::string sql = detail::selectSql(
        T::kDef, version, " LIMIT 1", detail::columns({T::host, T::pid, T::start_unix_ns}));
    Stmt st = detail::prepare(raw, sql, nullptr);
    if (!st) {
      *error = detail::oneLine(path + ": cannot read the rank table: " + detail::lastError(raw));
      return false;
    }
    if (sqlite3_step(st.get()) == SQLITE_ROW) {
      out->host = textOf(st.get(), T::host);
      out->pid = detail::columnNullable(st.get(), T::pid);
      out->start_unix_ns = sqlite3_column_int64(st.get(), T::start_unix_ns);
    }
  }
  using T = detail::MetaTable;
  const std::string sql = detail::selectSql(
      T::kDef, version, " WHERE key IN ('end_state', 'merged_at_unix_ns', 'run_id')");
  Stmt st = detail::prepare(raw, sql, nullptr);
  if (!st) {
    *error = detail::oneLine(path + ": cannot read the meta table: " + detail::lastError(raw));
    return false;
  }
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const std::string key = textOf(st.get(), T::key);
    const std::string value = textOf(st.get(), T::value);
    if (key == "end_state") out->clean = value == "clean";
    if (key == "merged_at_unix_ns") out->merged = true;
    if (key == "run_id") out->run_id = value;
  }
  if (rc != SQLITE_DONE) {
    *error = detail::oneLine(path + ": cannot read the meta table: " + detail::lastError(raw));
    return false;
  }
  return true;
}

namespace {

// The first `size` - 1 bytes of a small file, or "".
std::string readSmallFile(const std::string& path, size_t size) {
  std::string text;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  text.resize(size);
  size_t have = 0;
  while (have + 1 < size) {  // /proc files come in pieces
    const ssize_t got = ::read(fd, text.data() + have, size - 1 - have);
    if (got <= 0) break;
    have += static_cast<size_t>(got);
  }
  ::close(fd);
  text.resize(have);
  return text;
}

// When process `pid` started, in ns since 1970 (from /proc; whole seconds of boot time), or -1;
// *zombie: it has exited and waits to be reaped.
int64_t processStartUnixNs(int64_t pid, bool* zombie) {
  *zombie = false;
  const std::string text = readSmallFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  const size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return -1;
  *zombie = text.size() > close + 2 && (text[close + 2] == 'Z' || text[close + 2] == 'X');
  // Fields after the name: state is field 3, starttime field 22.
  size_t at = close + 1;
  unsigned long long ticks = 0;
  for (int field = 3; field <= 22; ++field) {
    at = text.find_first_not_of(' ', at);
    if (at == std::string::npos) return -1;
    const size_t end = text.find(' ', at);
    if (field == 22) ticks = std::strtoull(text.substr(at, end - at).c_str(), nullptr, 10);
    if (end == std::string::npos) break;
    at = end;
  }
  const std::string stat = readSmallFile("/proc/stat", 1 << 20);
  const size_t btime = stat.find("\nbtime ");
  if (btime == std::string::npos) return -1;
  const long long boot = std::atoll(stat.c_str() + btime + 7);
  const long hz = sysconf(_SC_CLK_TCK);
  if (boot <= 0 || ticks == 0 || hz <= 0) return -1;
  return boot * 1000000000LL +
         static_cast<int64_t>(ticks * (1000000000ULL / static_cast<unsigned long long>(hz)));
}

}  // namespace

bool isForeignFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  unsigned char header[72] = {};
  const ssize_t got = ::pread(fd, header, sizeof header, 0);
  ::close(fd);
  if (got != static_cast<ssize_t>(sizeof header)) return false;
  if (std::memcmp(header, "SQLite format 3", 16) != 0) return false;  // damaged, maybe ours
  const uint32_t app = (uint32_t{header[68]} << 24) | (uint32_t{header[69]} << 16) |
                       (uint32_t{header[70]} << 8) | uint32_t{header[71]};
  return app != static_cast<uint32_t>(detail::kApplicationId);
}

bool writerMayBeAlive(const RankFileStatus& status) {
  if (status.clean || status.merged || status.pid <= 0 || status.pid > INT32_MAX) return false;
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0 || status.host != host) return false;
  if (::kill(static_cast<pid_t>(status.pid), 0) != 0 && errno != EPERM) return false;
  // A process with that pid that started after the file did (plus /proc's whole-second boot
  // time) is another process: the writer is gone.
  bool zombie = false;
  const int64_t started = processStartUnixNs(status.pid, &zombie);
  if (zombie) return false;  // exited; a parent that does not reap it keeps the pid
  return started < 0 || status.start_unix_ns <= 0 ||
         started <= status.start_unix_ns + 2'000'000'000LL;
}


}  // namespace ringside::storage
