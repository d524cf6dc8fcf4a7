// storage/src/merge.cpp — merges rank files into one trace.
//
// Two passes over the inputs:
//  1. validate and probe every input through the defensive read-only opener (rank row(s),
//     end_state, row counts); unusable inputs are skipped with a warning naming the file;
//  2. copy each usable input (sorted by rank, then start time): the input is attached read-only
//     to the output connection and each table copied by one INSERT ... SELECT inside one
//     transaction (one read snapshot of the input), string ids remapped through a temporary
//     table, collective ids moved by a delta. No row passes through this process: memory does
//     not grow with the number of inputs or rows. The indexes are built once, at the end.
// A merged trace may be an input too (MergeOptions::merged_inputs): its rows already carry their
// ranks and their files' names, and it is copied like a rank file otherwise. The output is built in a temporary file created exclusively
// beside <output> (ringside/fileio/output_file.h), indexed, fsynced and only then
// moved to <output>; nothing but a regular file there is ever replaced.
#include "ringside/storage/merge.h"
#include "ringside/storage/privacy.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "columns.h"
#include "ringside/fileio/output_file.h"
#include "ringside/storage/records.h"
#include "schema.h"
#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::Db;
using detail::param;
using detail::Stmt;

// Ranks beyond this are treated as damage, not as a world to enumerate.
constexpr int64_t kMaxPlausibleWorld = 1 << 20;

struct Input {
  std::string path;
  int32_t rank = -1;
  int32_t world_size = -1;
  int64_t start_unix_ns = 0;
  bool clean = false;
  std::string host;   // rank.host (rank files)
  int64_t pid = -1;   // rank.pid (rank files)
  bool live = false;  // not closed, and its writer still runs on this host
  int64_t rows = 0;  // collectives + transfers at probe time
  int copy_index = 0;  // 0 for the first file of a rank, 1.. for duplicates
  int version = 0;     // schema version
  // A merged trace (MergeOptions::merged_inputs): its ranks (sorted; one per rank row, so a rank
  // of several files is there several times), those cut off,
  // and the inputs its own merge skipped, as (basename, why). `rank` is its lowest rank.
  bool merged = false;
  std::vector<int> ranks;
  std::vector<int> cut_off;
  std::vector<std::pair<std::string, std::string>> skipped;
};

std::string textOf(sqlite3_stmt* st, int index) {
  const unsigned char* t = sqlite3_column_text(st, index);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(st, index)))
           : std::string();
}

// "1,2,5-999999" from sorted ranks: runs of three or more as ranges, so that a world of a
// million with four rank files writes a short list, not megabytes (docs/schema.md, meta).
std::string joinInts(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (i) out += ',';
    out += std::to_string(v[i]);
    if (j >= i + 2) {
      out += '-' + std::to_string(v[j]);
    } else {
      j = i;
    }
    i = j + 1;
  }
  return out;
}

// Pass 1 on one file: returns false with *why (one line, naming the file).
// Why `path` was skipped, without the path the message starts with (meta names it already).
std::string skipReason(const std::string& path, const std::string& why) {
  std::string_view text = why;
  if (text.starts_with(path) && text.substr(path.size()).starts_with(": "))
    text.remove_prefix(path.size() + 2);
  return detail::oneLine(text.empty() ? "unreadable" : text);
}

// "1,2,5-9" (joinInts) back into ranks; anything else in the list is ignored.
std::vector<int> parseInts(const std::string& text) {
  std::vector<int> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    char* rest = nullptr;
    const long lo = std::strtol(item.c_str(), &rest, 10);
    long hi = lo;
    if (rest && *rest == '-') hi = std::strtol(rest + 1, &rest, 10);
    if (rest == item.c_str() || lo < 0 || hi < lo || hi >= kMaxPlausibleWorld) continue;
    for (long r = lo; r <= hi; ++r) out.push_back(static_cast<int>(r));
  }
  return out;
}

// A merged input's facts from its meta: world size, cut-off ranks, inputs its merge skipped.
bool probeMergedMeta(sqlite3* raw, Input* in) {
  using T = detail::MetaTable;
  Stmt st = detail::prepare(raw,
                            "SELECT key, value FROM meta WHERE key IN ('world_size', "
                            "'cut_off_ranks', 'skipped_input_reasons')",
                            nullptr);
  if (!st) return false;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const std::string key = textOf(st.get(), T::key);
    const std::string value = textOf(st.get(), T::value);
    if (key == "world_size") {
      const long w = std::strtol(value.c_str(), nullptr, 10);
      if (w > 0 && w <= kMaxPlausibleWorld) in->world_size = static_cast<int32_t>(w);
    } else if (key == "cut_off_ranks") {
      in->cut_off = parseInts(value);
    } else {
      // "name: why" per line (writeMergeMeta)
      for (size_t at = 0; at < value.size();) {
        size_t end = value.find('\n', at);
        if (end == std::string::npos) end = value.size();
        const std::string line = value.substr(at, end - at);
        at = end + 1;
        const size_t colon = line.find(": ");
        if (colon != std::string::npos && colon > 0)
          in->skipped.emplace_back(line.substr(0, colon), line.substr(colon + 2));
      }
    }
  }
  return rc == SQLITE_DONE;
}

bool probe(const std::string& path, bool accept_merged, Input* in, std::string* why) {
  int version = 0;
  Db db = detail::openTraceReadOnly(path, &version, why);
  if (!db) return false;
  sqlite3* raw = db.get();
  auto fail = [&](std::string_view what) {
    *why = detail::oneLine(path + ": " + std::string(what) + ": " + detail::lastError(raw));
    return false;
  };
  in->path = path;
  in->version = version;
  int rank_rows = 0;
  {
    using T = detail::RankTable;
    const std::string sql = detail::selectSql(
        T::kDef, version, "",
        detail::columns({T::rank, T::world_size, T::start_unix_ns, T::host, T::pid}));
    Stmt st = detail::prepare(raw, sql, nullptr);
    if (!st) return fail("cannot read the rank table");
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      if (++rank_rows > 1 && !accept_merged) {
        *why = detail::oneLine(path + ": has several rank rows (a merged trace?), not a rank file");
        return false;
      }
      const int64_t r = detail::columnNullable(st.get(), T::rank);
      const int64_t w = detail::columnNullable(st.get(), T::world_size);
      const int64_t start = sqlite3_column_int64(st.get(), T::start_unix_ns);
      const bool known = r >= 0 && r < kMaxPlausibleWorld;
      if (known) in->ranks.push_back(static_cast<int>(r));
      // A merged input sorts by its first rank and start.
      if (rank_rows == 1 || (known && (in->rank < 0 || r < in->rank))) {
        in->rank = known ? static_cast<int32_t>(r) : -1;
        in->start_unix_ns = start;
      }
      if (rank_rows == 1) {
        in->host = textOf(st.get(), T::host);
        in->pid = detail::columnNullable(st.get(), T::pid);
      }
      if (w > 0 && w <= kMaxPlausibleWorld) in->world_size = std::max<int32_t>(in->world_size, static_cast<int32_t>(w));
    }
    if (rc != SQLITE_DONE) return fail("cannot read the rank table");
  }
  {
    using T = detail::MetaTable;
    const std::string sql =
        detail::selectSql(T::kDef, version, " WHERE key IN ('end_state', 'merged_at_unix_ns')");
    Stmt st = detail::prepare(raw, sql, nullptr);
    if (!st) return fail("cannot read the meta table");
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      const std::string key = textOf(st.get(), T::key);
      if (key == "merged_at_unix_ns") {
        if (!accept_merged) {
          *why = detail::oneLine(path + ": is a merged trace, not a rank file");
          return false;
        }
        in->merged = true;
      }
      if (key == "end_state") in->clean = textOf(st.get(), T::value) == "clean";
    }
    if (rc != SQLITE_DONE) return fail("cannot read the meta table");
  }
  if (rank_rows > 1 && !in->merged) {
    *why = detail::oneLine(path + ": has several rank rows but no merge keys in its meta");
    return false;
  }
  if (in->merged) {
    if (!probeMergedMeta(raw, in)) return fail("cannot read the meta table");
    std::sort(in->ranks.begin(), in->ranks.end());
    if (in->ranks.empty()) {
      *why = detail::oneLine(path + ": merged trace without ranks");
      return false;
    }
  }
  if (in->rank < 0) {
    // Cut off before the rank was known: the rows may still say it.
    int64_t r = -1;
    if (detail::queryInt(raw, "SELECT rank FROM collective_data WHERE rank >= 0 LIMIT 1", &r, nullptr) &&
        r >= 0 && r < kMaxPlausibleWorld) {
      in->rank = static_cast<int32_t>(r);
    }
  }
  if (in->rank < 0) {
    *why = detail::oneLine(path + ": rank unknown (no rank row and no ranked rows)");
    return false;
  }
  int64_t nc = 0, nt = 0;
  std::string err;
  if (!detail::queryInt(raw, "SELECT count(*) FROM collective_data", &nc, &err) ||
      !detail::queryInt(raw, "SELECT count(*) FROM transfer_data", &nt, &err)) {
    *why = detail::oneLine(path + ": cannot count rows: " + err);
    return false;
  }
  in->rows = nc + nt;
  return true;
}

// How the merger fills an output column from the same column of an input row.
enum class Fill : uint8_t {
  kCopy,               // as is
  kSid,                // the output's sid of the same string (every *_sid column)
  kCollectiveId,       // moved by the input's collective id delta; NULL stays NULL
  kFileRankIfNull,     // NULL: the file's rank (learned after the row was written)
  kFileRankIfUnknown,  // NULL or negative (-1 stands for unknown there): the file's rank
  kFileName,           // the input's basename, not read from the input
  kNewId,              // neither read nor written: the output numbers the rows itself
};

// How the rows of one table are copied: which columns are written and how each is filled.
struct TableCopy {
  // Every column is kCopy, *_sid columns kSid, unless `special` says otherwise.
  TableCopy(const detail::TableDef& t, std::initializer_list<std::pair<int, Fill>> special)
      : def(t) {
    std::vector<Fill> fills(static_cast<size_t>(t.count), Fill::kCopy);
    for (int i = 0; i < t.count; ++i) {
      const std::string_view name = t.columns[i].name;
      if (name.size() > 4 && name.substr(name.size() - 4) == "_sid") fills[i] = Fill::kSid;
    }
    for (const auto& [column, fill] : special) fills[static_cast<size_t>(column)] = fill;
    for (int i = 0; i < t.count; ++i) {
      // kNewId is left out of the INSERT: the output numbers the rows.
      if (fills[static_cast<size_t>(i)] != Fill::kNewId) steps.push_back({i, fills[static_cast<size_t>(i)]});
    }
  }

  struct Step {
    int column;
    Fill fill;
  };
  const detail::TableDef& def;
  std::vector<Step> steps;  // one per written column, in table order
};

// How each table's rows are copied (the string and meta tables have their own copies).
struct TableCopies {
  using Rank = detail::RankTable;
  using Coll = detail::CollectiveTable;
  using Xfer = detail::TransferTable;
  using Gpu = detail::CollectiveGpuTable;
  using Act = detail::GpuActivityTable;
  using Comm = detail::CommunicatorTable;
  const TableCopy rank{Rank::kDef, {{Rank::file, Fill::kFileName}}};
  const TableCopy collective{
      Coll::kDef, {{Coll::id, Fill::kCollectiveId}, {Coll::rank, Fill::kFileRankIfNull}}};
  const TableCopy transfer{Xfer::kDef,
                           {{Xfer::id, Fill::kNewId},
                            {Xfer::rank, Fill::kFileRankIfNull},
                            {Xfer::collective_id, Fill::kCollectiveId}}};
  const TableCopy collective_gpu{Gpu::kDef, {{Gpu::collective_id, Fill::kCollectiveId}}};
  const TableCopy gpu_activity{Act::kDef,
                               {{Act::id, Fill::kNewId},
                                {Act::rank, Fill::kFileRankIfUnknown},
                                {Act::collective_id, Fill::kCollectiveId}}};
  const TableCopy communicator{Comm::kDef, {{Comm::rank, Fill::kFileRankIfUnknown}}};
  const TableCopy anchor{detail::ClockAnchorTable::kDef,
                         {{detail::ClockAnchorTable::rank, Fill::kFileRankIfUnknown}}};
  const TableCopy marker{detail::StepMarkerTable::kDef,
                         {{detail::StepMarkerTable::rank, Fill::kFileRankIfUnknown}}};
  const TableCopy cpu{detail::CpuSampleTable::kDef,
                      {{detail::CpuSampleTable::rank, Fill::kFileRankIfUnknown}}};
};

class Merger {
 public:
  explicit Merger(const MergeOptions& o) : opt_(o) {}
  // An exception midway (out of memory) must not leave the temporary file behind.
  ~Merger() {
    if (!res_.ok) removeOutput();
    releaseTempLock();
  }
  Merger(const Merger&) = delete;
  Merger& operator=(const Merger&) = delete;
  MergeResult run();

 private:
  bool openOutput();
  class InputCopy;
  bool probeAll(std::vector<Input>* inputs,
                std::vector<std::pair<std::string, std::string>>* skipped);
  bool checkRankOverlap(const std::vector<Input>& inputs);
  void dropCopies(std::vector<Input>* inputs);
  bool writeMergeMeta(const std::vector<std::pair<std::string, std::string>>& skipped);
  bool finish();
  // Held (flock) on our temporary file while this merge may write it, so that another merge
  // never takes it for one an interrupted merge left (removeStaleTemporaries). Closed only when
  // no SQLite connection has the file open: closing a descriptor drops the process's POSIX locks.
  void releaseTempLock() {
    if (temp_lock_fd_ >= 0) ::close(temp_lock_fd_);
    temp_lock_fd_ = -1;
  }
  // Closes the output and deletes the temporary file (the merge's journal is kept in memory;
  // one a failed before_publish left goes too).
  void removeOutput() {
    out_.reset();
    if (!tmp_.empty()) {
      // A journal the caller's before_publish left (a failed write) goes with the file.
      std::string ignored;
      if (file_.tempIsOurs(&ignored)) ::unlink((tmp_ + "-journal").c_str());
    }
    file_.discard();
    releaseTempLock();
    if (opt_.on_temp_file && !tmp_.empty()) opt_.on_temp_file("");
  }
  bool outFail(std::string_view what) {
    res_.error = detail::oneLine(tmp_ + ": " + std::string(what) + ": " + detail::lastError(out_.get()));
    return false;
  }
  void progress() {
    if (opt_.progress) opt_.progress(done_, std::max(done_, total_));
    if (opt_.progress_detail) {
      opt_.progress_detail({done_, std::max(done_, total_), inputs_done_, inputs_});
    }
  }

  const MergeOptions& opt_;
  const TableCopies copies_;
  MergeResult res_;
  fileio::OutputFile file_;
  std::string tmp_;  // file_'s temporary path, which SQLite opens by name
  Db out_;
  int64_t next_collective_id_ = 1;
  int64_t done_ = 0, total_ = 0;
  int inputs_done_ = 0, inputs_ = 0;
  int temp_lock_fd_ = -1;
};

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
  const int rc = sqlite3_open_v2(detail::fileUri(tmp_, "").c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX |
                                     SQLITE_OPEN_NOFOLLOW,
                                 nullptr);
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
      // The index build may sort with a helper thread. (temp_store stays a file: with it in
      // memory the index sorts would hold every row in RAM.)
      "PRAGMA threads=2;";
  if (!detail::exec(raw, pragmas, &why) || !detail::exec(raw, "BEGIN", &why) ||
      !detail::createSchema(raw, &why) || !detail::exec(raw, "COMMIT", &why) ||
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

// Copies one input into the output: the input is attached read-only and every table copied by
// one INSERT ... SELECT inside one transaction (which is also one read snapshot of the input). A
// failure of the input rolls the transaction back and skips the input; a failure of the output
// fails the merge.
class Merger::InputCopy {
 public:
  InputCopy(Merger& m, const Input& in, bool* input_failed, std::string* why)
      : m_(m), in_(in), input_failed_(input_failed), why_(why), file_(detail::baseName(in.path)) {}
  ~InputCopy() { detach(); }
  InputCopy(const InputCopy&) = delete;
  InputCopy& operator=(const InputCopy&) = delete;
  bool run();

 private:
  bool attach();
  void detach() {
    if (!attached_) return;
    detail::exec(m_.out_.get(), "ROLLBACK", nullptr);  // no-op after COMMIT
    detail::exec(m_.out_.get(), "DETACH DATABASE src", nullptr);
    attached_ = false;
  }
  bool copyStrings();
  bool checkIdentity();
  bool moveCollectiveIds();
  bool copyRankAndMeta();
  bool copyTables();
  // One INSERT ... SELECT of `copy.def`'s rows (filtered by `where`, in `order`); the rows it
  // wrote go to *rows when given. `what` names the rows in errors.
  bool copyTable(const TableCopy& copy, const std::string& where, const std::string& order,
                 std::string_view verb, const std::string& what, int64_t* rows);
  std::string fillExpr(const TableCopy& copy, const TableCopy::Step& step) const;
  // Runs `sql` (parameter ?1 bound to `text` when given) on the output connection.
  bool exec(const std::string& sql, const std::string& what, const std::string* text = nullptr);
  // The last statement failed: the input's fault (damaged, unreadable, changed) skips it, the
  // output's fails the merge.
  bool failed(std::string_view what);

  Merger& m_;
  const Input& in_;
  bool* input_failed_;
  std::string* why_;
  const std::string file_;  // the input's basename
  bool attached_ = false;
  int64_t lo_ = INT64_MAX, hi_ = INT64_MIN;  // the input's collective id range
  int64_t delta_ = 0;
  int64_t collectives_ = 0, transfers_ = 0;
  bool identity_sids_ = false;  // the file's sids 1..sids_ are the output's
  int64_t sids_ = 0;
};

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
  // Pass 1 checked this file moments ago (quick_check included); make sure it is still that
  // file. Damage met now still surfaces as a read error and rolls this input back.
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
  return in_.version < 5 || copyTable(c.cpu, "", in_.merged ? by_rowid : " ORDER BY t_ns",
                                      "INSERT", "CPU samples", nullptr);
}

// Pass 1: probes every input; the unusable ones go to *skipped (basename, why) with a warning.
// False (res_.error set) when none is usable.
bool Merger::probeAll(std::vector<Input>* inputs,
                      std::vector<std::pair<std::string, std::string>>* skipped) {
  for (const auto& [path, why] : opt_.skipped_inputs)
    skipped->emplace_back(detail::baseName(path), skipReason(path, why));
  for (const std::string& path : opt_.inputs) {
    Input in;
    std::string why;
    if (probe(path, opt_.merged_inputs, &in, &why)) {
      total_ += in.rows;
      // What a merged input's own merge skipped is still missing from this trace.
      skipped->insert(skipped->end(), in.skipped.begin(), in.skipped.end());
      inputs->push_back(std::move(in));
    } else if (!opt_.keep_going) {
      res_.error = detail::oneLine(why + " (use -k to merge the other inputs without it)");
      return false;
    } else {
      res_.warnings.push_back("skipped " + why);
      skipped->emplace_back(detail::baseName(path), skipReason(path, why));
    }
  }
  if (inputs->empty()) {
    res_.error = detail::oneLine("merge: no usable input among " + std::to_string(opt_.inputs.size()) +
                                 " file(s); first problem: " + res_.warnings.front());
    return false;
  }
  std::stable_sort(inputs->begin(), inputs->end(), [](const Input& a, const Input& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_unix_ns < b.start_unix_ns;
  });
  dropCopies(inputs);
  for (Input& in : *inputs) {
    if (in.merged || in.clean) continue;
    RankFileStatus st;
    st.host = in.host;
    st.pid = in.pid;
    st.start_unix_ns = in.start_unix_ns;
    in.live = writerMayBeAlive(st);
  }
  for (size_t i = 1; i < inputs->size(); ++i) {
    Input& in = (*inputs)[i];
    if (in.rank == (*inputs)[i - 1].rank) in.copy_index = (*inputs)[i - 1].copy_index + 1;
  }
  inputs_ = static_cast<int>(inputs->size());
  return true;
}

// Rank files that are copies of one another (the same rank, host, pid and start: one process's
// file, e.g. `cp`'d beside it) would put that rank's rows in twice: only the one with the most
// rows is kept (the first of equals), with a warning. Inputs are sorted by rank and start.
void Merger::dropCopies(std::vector<Input>* inputs) {
  std::vector<Input> kept;
  kept.reserve(inputs->size());
  for (Input& in : *inputs) {
    Input* same = nullptr;
    if (!in.merged && in.pid >= 0) {
      for (size_t j = kept.size(); j-- > 0;) {
        Input& k = kept[j];
        if (k.rank != in.rank) break;
        if (!k.merged && k.pid == in.pid && k.host == in.host &&
            k.start_unix_ns == in.start_unix_ns) {
          same = &k;
          break;
        }
      }
    }
    if (same == nullptr) {
      kept.push_back(std::move(in));
      continue;
    }
    if (in.rows > same->rows) std::swap(*same, in);  // `in` is now the one left out
    total_ -= in.rows;
    res_.duplicates.emplace_back(in.path, same->path);
    res_.warnings.push_back("left out " + in.path + ": a copy of " + same->path + " (rank " +
                            std::to_string(in.rank) +
                            ", the same process's file); its rows are merged once");
  }
  *inputs = std::move(kept);
}

// A rank in a merged input and in any other input would be merged twice: an error. (Rank files of
// one rank among themselves are kept, with a warning, as before.) Inputs are sorted by first rank.
bool Merger::checkRankOverlap(const std::vector<Input>& inputs) {
  std::unordered_map<int, size_t> holder;  // rank -> the first input holding it
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Input& in = inputs[i];
    const std::vector<int> own = in.merged ? in.ranks : std::vector<int>{in.rank};
    for (int r : own) {
      auto [it, fresh] = holder.emplace(r, i);
      if (fresh || it->second == i) continue;
      const Input& other = inputs[it->second];
      if (!in.merged && !other.merged) continue;
      res_.error = detail::oneLine("merge: rank " + std::to_string(r) + " is in both " +
                                   other.path + " and " + in.path + "; give each rank once");
      return false;
    }
  }
  return true;
}

MergeResult Merger::run() {
  if (opt_.inputs.empty()) {
    res_.error = "merge: no input files";
    return res_;
  }
  if (opt_.output.empty()) {
    res_.error = "merge: no output path";
    return res_;
  }
  // Fail before reading anything when the output cannot be used (checked again at the end).
  if (std::string why; !fileio::checkOutputTarget(opt_.output, opt_.overwrite, &why)) {
    res_.error = detail::oneLine(why);
    return res_;
  }

  // What a merge into the same output killed earlier left (tens of MB, never renamed).
  for (const std::string& name : removeStaleTemporaries(opt_.output))
    res_.warnings.push_back("removed " + name + ", left by an interrupted merge");

  // Pass 1: validate and probe.
  std::vector<Input> inputs;
  // (basename, why) of every unusable input: the caller's first, then ours.
  std::vector<std::pair<std::string, std::string>> skipped;
  if (!probeAll(&inputs, &skipped) || !checkRankOverlap(inputs)) return res_;

  auto abandon = [&]() {
    removeOutput();
    res_.ok = false;
    return res_;
  };
  if (!openOutput()) return abandon();

  // Pass 2: copy.
  std::map<int, int> files_per_rank;
  std::set<int> cut_off, live;
  int world = -1;
  for (const Input& in : inputs) {
    bool input_failed = false;
    std::string why;
    if (!InputCopy(*this, in, &input_failed, &why).run()) {
      if (!input_failed) return abandon();  // the output failed: res_.error is set
      if (!opt_.keep_going) {
        res_.error = detail::oneLine(why + " (use -k to merge the other inputs without it)");
        return abandon();
      }
      res_.warnings.push_back("skipped " + why);
      skipped.emplace_back(detail::baseName(in.path), skipReason(in.path, why));
      continue;
    }
    ++inputs_done_;
    if (in.merged) {
      for (int r : in.ranks) ++files_per_rank[r];
      cut_off.insert(in.cut_off.begin(), in.cut_off.end());
    } else {
      ++files_per_rank[in.rank];
      if (in.live) {
        live.insert(in.rank);
        res_.live_files.push_back(in.path);
      } else if (!in.clean) {
        cut_off.insert(in.rank);
      }
    }
    res_.merged_files.push_back(in.path);
    world = std::max(world, in.world_size);
  }
  progress();  // every input copied; the indexes come next
  if (files_per_rank.empty()) {
    res_.error = detail::oneLine("merge: no usable input among " + std::to_string(opt_.inputs.size()) +
                                 " file(s); first problem: " + res_.warnings.front());
    return abandon();
  }
  for (const auto& [rank, n] : files_per_rank) {
    if (n > 1) {
      res_.warnings.push_back("rank " + std::to_string(rank) + " appears in " + std::to_string(n) +
                              " files; rows of all of them are kept");
    }
  }
  res_.ranks = static_cast<int>(files_per_rank.size());
  res_.world_size = world;
  // A rank with a live file and a cut-off one (a restart) is still being written.
  for (int r : live) cut_off.erase(r);
  res_.cut_off_ranks.assign(cut_off.begin(), cut_off.end());
  res_.live_ranks.assign(live.begin(), live.end());
  for (int r = 0; r < world; ++r) {
    if (!files_per_rank.count(r)) res_.missing_ranks.push_back(r);
  }

  if (!writeMergeMeta(skipped)) return abandon();
  progress();
  if (!finish()) return abandon();
  res_.ok = true;
  return res_;
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
  if (sqlite3_close(out_.release()) != SQLITE_OK) {
    res_.error = tmp_ + ": cannot close";
    return false;
  }
  std::string error;
  // What makes the trace correct (its clock model, its steps) goes in before it is published.
  if (opt_.before_publish && !opt_.before_publish(tmp_, &error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  if (!file_.commit(&error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  releaseTempLock();
  if (opt_.on_temp_file) opt_.on_temp_file("");
  return true;
}

}  // namespace

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

MergeResult mergeRankFiles(const MergeOptions& options) {
  try {
    Merger m(options);
    return m.run();
  } catch (const std::bad_alloc&) {
    MergeResult r;
    r.error = options.output + ": merge ran out of memory";
    return r;
  } catch (const std::exception& e) {
    MergeResult r;
    r.error = detail::oneLine(options.output + ": merge failed: " + e.what());
    return r;
  }
}

}  // namespace ringside::storage
