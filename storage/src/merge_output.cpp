// storage/src/merge_output.cpp — the merge's output file: created, set up, given its meta and indexes, published (merge_internal.h).
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
#include "ringside/storage/stage_timings.h"
#include "schema.h"

namespace ringside::storage::merging {

// Temporary files beside `output` (`<output>.tmp-XXXXXXXX` and their -journal) that a merge
// killed before it could remove them left behind: a regular file of ours, empty or a ringside
// trace, untouched for a minute and locked by no merge (each live merge holds an flock on its
// own). Removed; returns their names.
std::vector<std::string> removeStaleTemporaries(const std::string& output) {
  std::vector<std::string> removed;
  const size_t slash = output.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : output.substr(0, slash + 1);
  const std::string prefix = detail::baseName(output) + ".tmp-";
  DIR* dir = ::opendir(folder.c_str());
  if (dir == nullptr) return removed;
  std::vector<std::string> candidates, journals;
  constexpr std::string_view kJournal = "-journal";
  while (const dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    const bool journal = name.size() == prefix.size() + 8 + kJournal.size() &&
                         name.compare(prefix.size() + 8, kJournal.size(), kJournal) == 0;
    const std::string base = journal ? name.substr(0, prefix.size() + 8) : name;
    if (base.size() == prefix.size() + 8 && base.compare(0, prefix.size(), prefix) == 0 &&
        base.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789", prefix.size()) ==
            std::string::npos)
      (journal ? journals : candidates).push_back(std::move(name));
  }
  ::closedir(dir);
  const int64_t now = static_cast<int64_t>(::time(nullptr));
  const std::string at = slash == std::string::npos ? "" : folder;
  // A journal whose file is gone (removed before it): ours, a minute old, nothing to roll back.
  for (const std::string& name : journals) {
    struct stat sb {}, main_sb {};
    const std::string path = at + name;
    if (::lstat(path.c_str(), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == ::geteuid() &&
        now - static_cast<int64_t>(sb.st_mtime) >= 60 &&
        ::lstat(path.substr(0, path.size() - kJournal.size()).c_str(), &main_sb) != 0 &&
        errno == ENOENT && ::unlink(path.c_str()) == 0)
      removed.push_back(name);
  }
  for (const std::string& name : candidates) {
    const std::string path = at + name;
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) continue;
    struct stat sb {};
    bool stale = ::fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == ::geteuid() &&
                 now - static_cast<int64_t>(sb.st_mtime) >= 60 &&
                 ::flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (stale && sb.st_size > 0) {
      unsigned char header[72] = {};
      stale = ::pread(fd, header, sizeof header, 0) == static_cast<ssize_t>(sizeof header) &&
              std::memcmp(header, "SQLite format 3", 16) == 0 &&
              ((uint32_t{header[68]} << 24) | (uint32_t{header[69]} << 16) |
               (uint32_t{header[70]} << 8) | uint32_t{header[71]}) ==
                  static_cast<uint32_t>(detail::kApplicationId);
    }
    if (stale) {
      ::unlink((path + "-journal").c_str());
      if (::unlink(path.c_str()) == 0) removed.push_back(name);
    }
    ::close(fd);  // never had a SQLite connection in this process: no lock of ours to drop
  }
  return removed;
}


bool Merger::openOutput() {
  std::string error;
  // Created private (privacy.h: 0600 unless RINGSIDE_SHARE); the mode is set exactly below.
  if (!file_.create(opt_.output, opt_.overwrite, &error, outputFileMode())) {
    res_.error = detail::oneLine(error);
    return false;
  }
  tmp_ = file_.tempPath();
  if (opt_.on_temp_file) opt_.on_temp_file(tmp_);
  // Our own open file description, locked for as long as this merge may write the file.
  temp_lock_fd_ = ::fcntl(file_.fd(), F_DUPFD_CLOEXEC, 0);
  if (temp_lock_fd_ >= 0) ::flock(temp_lock_fd_, LOCK_EX | LOCK_NB);
  // SQLite opens the (empty) file by name, never through a link; our own descriptor is closed
  // first, since closing it later would drop SQLite's locks on the file.
  file_.closeDescriptor();
  sqlite3* raw = nullptr;
  const int rc = detail::openForWriteNoFollow(tmp_, &raw);
  out_.reset(raw);
  if (rc != SQLITE_OK) return outFail("cannot create");
  // Privacy (privacy.h): 0600 unless RINGSIDE_SHARE, set before anything is written
  // (the -wal and -shm files SQLite makes later copy this mode).
  if (!applyOutputFileMode(tmp_)) {
    res_.error = detail::oneLine(tmp_ + ": cannot set the file mode: " + std::strerror(errno));
    return false;
  }
  sqlite3_extended_result_codes(raw, 1);
  std::string why;
  // The same defensive settings as the reader's: they cover the attached inputs too.
  if (!detail::hardenConnection(raw, &why)) {
    res_.error = tmp_ + ": " + why;
    return false;
  }
  // A live rank file may be mid-checkpoint: wait a little rather than fail (as the reader does).
  sqlite3_busy_timeout(raw, 2000);
  const char* pragmas =
      // Same page size as rank files (fewer, larger pages for bulk appends).
      "PRAGMA main.page_size=16384;"
      // The file is private until renamed: no other connection, no shared lock. main only: an
      // attached live rank file keeps its writer's locking.
      "PRAGMA main.locking_mode=EXCLUSIVE;"
      // A crash leaves only a temporary file, which is thrown away, so no
      // per-commit fsync: the file is fsynced once before the rename.
      "PRAGMA main.synchronous=OFF;"
      // The journal is only needed to roll back one failed input: keep it in memory.
      "PRAGMA main.journal_mode=MEMORY;"
      // 64 MiB page cache: table appends and index builds stay in memory longer.
      "PRAGMA main.cache_size=-65536;"
      // The index sorts run on this thread alone: with a helper thread (threads=2) the time
      // index of 8.4 M transfers took 3.9 instead of 2.7 CPU-s, 5.4-6.7 instead of 4.2 s wall
      // on 2 shared cores, and twice the memory. (temp_store stays a file: with it in memory
      // the index sorts would hold every row in RAM.)
      "PRAGMA threads=0;";
  if (!detail::exec(raw, pragmas, &why) || !detail::exec(raw, "BEGIN", &why) ||
      !detail::createSchema(raw, &why) ||
      !detail::exec(raw, detail::kMergedInOrderIndexSql, &why) ||
      !detail::exec(raw, "COMMIT", &why) ||
      // An input's string ids -> the output's (refilled per input).
      !detail::exec(raw, "CREATE TEMP TABLE sid_map(s INTEGER PRIMARY KEY, o INTEGER NOT NULL)",
                    &why)) {
    res_.error = detail::oneLine(tmp_ + ": cannot create the schema: " + why);
    return false;
  }
  if (!file_.tempIsOurs(&error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  return true;
}


// Writes the merged meta (the caller's extra keys first: ours describe this merge and win) and
// builds the indexes. False (res_.error set) if the output failed.
bool Merger::writeMergeMeta(const std::vector<std::pair<std::string, std::string>>& skipped) {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string skipped_list, skipped_reasons;
  for (size_t i = 0; i < skipped.size(); ++i) {
    skipped_list += (i ? "," : "") + skipped[i].first;
    skipped_reasons += (i ? "\n" : "") + skipped[i].first + ": " + skipped[i].second;
  }
  std::vector<std::pair<std::string, std::string>> kv = opt_.extra_meta;
  kv.emplace_back("schema_version", std::to_string(kSchemaVersion));
  kv.emplace_back("merged_at_unix_ns", std::to_string(now));
  kv.emplace_back("ranks", std::to_string(res_.ranks));
  kv.emplace_back("world_size", std::to_string(res_.world_size));
  kv.emplace_back("cut_off_ranks", joinInts(res_.cut_off_ranks));
  kv.emplace_back("missing_ranks", joinInts(res_.missing_ranks));
  // Ranks whose writer was still running (docs/schema.md): their rows end where the merge read.
  kv.emplace_back("live_ranks", joinInts(res_.live_ranks));
  kv.emplace_back("skipped_inputs", skipped_list);
  kv.emplace_back("skipped_input_reasons", skipped_reasons);
  sqlite3* out = out_.get();
  std::string why;
  if (!detail::exec(out, "BEGIN", &why)) return outFail("cannot begin");
  Stmt ins = detail::prepare(out, detail::insertSql(detail::MetaTable::kDef, "INSERT OR REPLACE"),
                             nullptr);
  if (!ins) return outFail("cannot write meta");
  for (const auto& [k, v] : kv) {
    using Meta = detail::MetaTable;
    sqlite3_bind_text(ins.get(), param(Meta::key), k.data(), static_cast<int>(k.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(ins.get(), param(Meta::value), v.data(), static_cast<int>(v.size()),
                      SQLITE_TRANSIENT);
    const int rc = sqlite3_step(ins.get());
    sqlite3_reset(ins.get());
    if (rc != SQLITE_DONE) return outFail("cannot write meta");
  }
  ins.reset();
  if (!detail::exec(out, detail::kMergedIndexSql, &why) || !detail::exec(out, "COMMIT", &why)) {
    res_.error = detail::oneLine(tmp_ + ": cannot build indexes: " + why);
    return false;
  }
  return true;
}

// Closes, fsyncs and moves the temporary file into place (fileio's rules: a regular file is
// replaced only with overwrite, anything else never).
bool Merger::finish() {
  {
    StageTimer timer("close");
    if (sqlite3_close(out_.release()) != SQLITE_OK) {
      res_.error = tmp_ + ": cannot close";
      return false;
    }
  }
  std::string error;
  // What makes the trace correct (its clock model, its steps) goes in before it is published.
  if (opt_.before_publish && !opt_.before_publish(tmp_, &error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  StageTimer timer("sync+rename");
  if (!file_.commit(&error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  releaseTempLock();
  if (opt_.on_temp_file) opt_.on_temp_file("");
  return true;
}


}  // namespace ringside::storage::merging
