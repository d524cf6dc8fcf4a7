// storage/src/merge.cpp — merges rank files into one trace.
//
// Two passes over the inputs, each through the defensive read-only opener:
//  1. validate and probe every input (rank row, end_state, row counts);
//     unusable inputs are skipped with a warning naming the file;
//  2. copy each usable input (sorted by rank, then start time) inside one read
//     snapshot of it, remapping string ids and collective ids, into the output.
// Rows are streamed through prepared statements (bind/step/reset); nothing is
// loaded whole. The output is built in a temporary file created exclusively
// beside <output> (ringside/fileio/output_file.h), indexed, fsynced and only then
// moved to <output>; nothing but a regular file there is ever replaced.
#include "ringside/storage/merge.h"
#include "ringside/storage/privacy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
constexpr int64_t kProgressEvery = 65536;

struct Input {
  std::string path;
  int32_t rank = -1;
  int32_t world_size = -1;
  int64_t start_unix_ns = 0;
  bool clean = false;
  int64_t rows = 0;  // collectives + transfers at probe time
  int copy_index = 0;  // 0 for the first file of a rank, 1.. for duplicates
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

bool probe(const std::string& path, Input* in, std::string* why) {
  int version = 0;
  Db db = detail::openTraceReadOnly(path, &version, why);
  if (!db) return false;
  sqlite3* raw = db.get();
  auto fail = [&](std::string_view what) {
    *why = detail::oneLine(path + ": " + std::string(what) + ": " + detail::lastError(raw));
    return false;
  };
  in->path = path;
  {
    using T = detail::RankTable;
    const std::string sql = detail::selectSql(
        T::kDef, version, "", detail::columns({T::rank, T::world_size, T::start_unix_ns}));
    Stmt st = detail::prepare(raw, sql, nullptr);
    if (!st) return fail("cannot read the rank table");
    int rows = 0;
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      if (++rows > 1) {
        *why = detail::oneLine(path + ": has several rank rows (a merged trace?), not a rank file");
        return false;
      }
      const int64_t r = detail::columnNullable(st.get(), T::rank);
      const int64_t w = detail::columnNullable(st.get(), T::world_size);
      in->rank = (r >= 0 && r < kMaxPlausibleWorld) ? static_cast<int32_t>(r) : -1;
      in->world_size = (w > 0 && w <= kMaxPlausibleWorld) ? static_cast<int32_t>(w) : -1;
      in->start_unix_ns = sqlite3_column_int64(st.get(), T::start_unix_ns);
    }
    if (rc != SQLITE_DONE) return fail("cannot read the rank table");
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
        *why = detail::oneLine(path + ": is a merged trace, not a rank file");
        return false;
      }
      if (key == "end_state") in->clean = textOf(st.get(), T::value) == "clean";
    }
    if (rc != SQLITE_DONE) return fail("cannot read the meta table");
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

// Copies one value column by column: integers stay integers, NULL stays NULL.
void copyValue(sqlite3_stmt* to, int to_index, sqlite3_stmt* from, int from_index) {
  switch (sqlite3_column_type(from, from_index)) {
    case SQLITE_NULL:
      sqlite3_bind_null(to, to_index);
      break;
    case SQLITE_TEXT:
      sqlite3_bind_text(to, to_index, reinterpret_cast<const char*>(sqlite3_column_text(from, from_index)),
                        sqlite3_column_bytes(from, from_index), SQLITE_TRANSIENT);
      break;
    default:
      sqlite3_bind_int64(to, to_index, sqlite3_column_int64(from, from_index));
      break;
  }
}

// Step helper for the output side: false means the output failed (fatal).
bool stepOut(sqlite3_stmt* st) {
  const int rc = sqlite3_step(st);
  sqlite3_reset(st);
  return rc == SQLITE_DONE;
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

// How the rows of one table are copied: which columns are read from the input and which are
// written, and how each written column is filled.
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
    int from = 0;
    for (int i = 0; i < t.count; ++i) {
      const Fill fill = fills[static_cast<size_t>(i)];
      const bool reads = fill != Fill::kFileName && fill != Fill::kNewId;
      if (reads) read |= detail::ColumnSet{1} << i;
      if (fill == Fill::kNewId) continue;  // left out of the INSERT: the output numbers the rows
      written |= detail::ColumnSet{1} << i;
      steps.push_back({fill, reads ? from : -1, static_cast<int>(steps.size()) + 1});
      if (reads) ++from;
    }
  }

  struct Step {
    Fill fill;
    int from;    // index in the row read (-1: not read)
    int to;      // parameter number in the INSERT
  };
  const detail::TableDef& def;
  detail::ColumnSet read = 0;     // SELECTed from the input, in table order
  detail::ColumnSet written = 0;  // INSERTed into the output, in table order
  std::vector<Step> steps;        // one per written column
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
};

class Merger {
 public:
  explicit Merger(const MergeOptions& o) : opt_(o) {}
  // An exception midway (out of memory) must not leave the temporary file behind.
  ~Merger() {
    if (!res_.ok) removeOutput();
  }
  Merger(const Merger&) = delete;
  Merger& operator=(const Merger&) = delete;
  MergeResult run();

 private:
  bool openOutput();
  class InputCopy;
  bool writeMergeMeta(const std::vector<std::pair<std::string, std::string>>& skipped);
  bool finish();
  // Finalizes every output statement (before the output connection can close).
  void finalizeStatements() {
    for (Stmt* st : {&ins_coll_, &ins_xfer_, &ins_str_, &ins_rank_, &ins_meta_, &ins_cgpu_, &ins_act_,
                     &ins_comm_, &ins_anchor_, &ins_marker_})
      st->reset();
  }
  // Closes the output and deletes the temporary file (the journal is kept in memory).
  void removeOutput() {
    finalizeStatements();
    out_.reset();
    file_.discard();
  }
  bool outFail(std::string_view what) {
    res_.error = detail::oneLine(tmp_ + ": " + std::string(what) + ": " + detail::lastError(out_.get()));
    return false;
  }
  void progress() {
    if (opt_.progress) opt_.progress(done_, std::max(done_, total_));
  }

  const MergeOptions& opt_;
  const TableCopies copies_;
  MergeResult res_;
  fileio::OutputFile file_;
  std::string tmp_;  // file_'s temporary path, which SQLite opens by name
  Db out_;
  Stmt ins_coll_, ins_xfer_, ins_str_, ins_rank_, ins_meta_, ins_cgpu_, ins_act_, ins_comm_,
      ins_anchor_, ins_marker_;
  std::unordered_map<std::string, int64_t> out_sids_;
  int64_t next_sid_ = 1;
  int64_t next_collective_id_ = 1;
  int64_t done_ = 0, total_ = 0;
};

bool Merger::openOutput() {
  std::string error;
  // Created private (privacy.h: 0600 unless RINGSIDE_SHARE); the mode is set exactly below.
  if (!file_.create(opt_.output, opt_.overwrite, &error, outputFileMode())) {
    res_.error = detail::oneLine(error);
    return false;
  }
  tmp_ = file_.tempPath();
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
  if (!detail::hardenConnection(raw, &why)) {
    res_.error = tmp_ + ": " + why;
    return false;
  }
  const char* pragmas =
      // Same page size as rank files (fewer, larger pages for bulk appends).
      "PRAGMA page_size=16384;"
      // The file is private until renamed: no other connection, no shared lock.
      "PRAGMA locking_mode=EXCLUSIVE;"
      // A crash leaves only a temporary file, which is thrown away, so no
      // per-commit fsync: the file is fsynced once before the rename.
      "PRAGMA synchronous=OFF;"
      // The journal is only needed to roll back one failed input: keep it in memory.
      "PRAGMA journal_mode=MEMORY;"
      // 64 MiB page cache: table appends and index builds stay in memory longer.
      "PRAGMA cache_size=-65536;";
  if (!detail::exec(raw, pragmas, &why) || !detail::exec(raw, "BEGIN", &why) ||
      !detail::createSchema(raw, &why) || !detail::exec(raw, "COMMIT", &why)) {
    res_.error = detail::oneLine(tmp_ + ": cannot create the schema: " + why);
    return false;
  }
  if (!file_.tempIsOurs(&error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  struct Prep {
    Stmt* stmt;
    std::string sql;
  };
  // Transfers and GPU activity get new ids (kNewId leaves them out); the other tables keep theirs.
  const TableCopies& c = copies_;
  const Prep preps[] = {
      {&ins_coll_, detail::insertSql(c.collective.def, "INSERT", c.collective.written)},
      {&ins_xfer_, detail::insertSql(c.transfer.def, "INSERT", c.transfer.written)},
      {&ins_cgpu_,
       detail::insertSql(c.collective_gpu.def, "INSERT OR REPLACE", c.collective_gpu.written)},
      {&ins_act_, detail::insertSql(c.gpu_activity.def, "INSERT", c.gpu_activity.written)},
      {&ins_comm_,
       detail::insertSql(c.communicator.def, "INSERT OR REPLACE", c.communicator.written)},
      {&ins_str_, detail::insertSql(detail::StringTable::kDef)},
      {&ins_rank_, detail::insertSql(c.rank.def, "INSERT", c.rank.written)},
      {&ins_meta_, detail::insertSql(detail::MetaTable::kDef, "INSERT OR REPLACE")},
      {&ins_anchor_, detail::insertSql(c.anchor.def, "INSERT", c.anchor.written)},
      {&ins_marker_, detail::insertSql(c.marker.def, "INSERT", c.marker.written)},
  };
  for (const Prep& p : preps) {
    *p.stmt = detail::prepare(raw, p.sql, &why);
    if (!*p.stmt) {
      res_.error = detail::oneLine(tmp_ + ": cannot prepare: " + why);
      return false;
    }
  }
  return true;
}

// Copies one input into the output inside one read snapshot of the input and one output
// transaction. A failure of the input rolls the output transaction back (the merger forgets the
// strings this input added) and skips the input; a failure of the output fails the merge.
class Merger::InputCopy {
 public:
  InputCopy(Merger& m, const Input& in, bool* input_failed, std::string* why)
      : m_(m), in_(in), input_failed_(input_failed), why_(why), file_(detail::baseName(in.path)) {}
  bool run();

 private:
  bool open();
  bool copyStrings();
  bool moveCollectiveIds();
  bool copyRankAndMeta();
  bool copyCalls();
  bool copyGpuTables();

  bool inFail(std::string_view what) {
    *why_ = detail::oneLine(in_.path + ": " + std::string(what) + ": " + detail::lastError(src_));
    *input_failed_ = true;
    return false;
  }
  void rollbackOut() {
    detail::exec(m_.out_.get(), "ROLLBACK", nullptr);
    for (const auto& s : added_) m_.out_sids_.erase(s);
    m_.next_sid_ = sid_mark_;
  }
  bool readFailed(std::string_view what) {
    inFail(what);
    rollbackOut();
    return false;
  }
  bool writeFailed(std::string_view what) {
    m_.outFail(what);
    rollbackOut();
    return false;
  }

  // Streams the rows of `sql` into `o`: `bind(o, s)` binds one source row and returns false to
  // leave it out. Written rows are counted into *written (when given) and, for the big tables
  // (`progress_rows`), in the progress. `what` names the rows in "cannot read/write ..." errors.
  template <class Bind>
  bool copyRows(std::string_view sql, sqlite3_stmt* o, const std::string& what, bool progress_rows,
                int64_t* written, Bind&& bind) {
    Stmt st = detail::prepare(src_, sql, nullptr);
    if (!st) return readFailed("cannot read " + what);
    sqlite3_stmt* s = st.get();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      if (!bind(o, s)) continue;
      if (!stepOut(o)) return writeFailed("cannot write " + what);
      if (written) ++*written;
      if (progress_rows && ++m_.done_ % kProgressEvery == 0) m_.progress();
    }
    if (rc != SQLITE_DONE) return readFailed("cannot read " + what);
    return true;
  }
  // copyRows of every row of a table in `order`, each column filled as `copy` says.
  bool copyTable(const TableCopy& copy, std::string_view order, sqlite3_stmt* o,
                 const std::string& what, bool progress_rows, int64_t* written) {
    return copyRows(tableSql(copy, order), o, what, progress_rows, written,
                    [&](sqlite3_stmt* to, sqlite3_stmt* from) {
                      bindRow(to, from, copy);
                      return true;
                    });
  }
  std::string tableSql(const TableCopy& copy, std::string_view order) const {
    return detail::selectOnlySql(copy.def, src_version_, order, copy.read);
  }
  void bindRow(sqlite3_stmt* o, sqlite3_stmt* s, const TableCopy& copy);
  void bindSid(sqlite3_stmt* to, int to_index, sqlite3_stmt* from, int from_index);

  Merger& m_;
  const Input& in_;
  bool* input_failed_;
  std::string* why_;
  const std::string file_;  // the input's basename
  Db db_;
  sqlite3* src_ = nullptr;
  int src_version_ = 0;
  std::unordered_map<int64_t, int64_t> sid_map_;  // the input's sids -> the output's
  std::vector<std::string> added_;                // to forget if this input is rolled back
  int64_t sid_mark_ = 0;
  int64_t lo_ = INT64_MAX, hi_ = INT64_MIN;  // the input's collective id range
  int64_t delta_ = 0;
  int64_t collectives_ = 0, transfers_ = 0;
};

bool Merger::InputCopy::run() {
  *input_failed_ = false;
  if (!open() || !copyStrings() || !moveCollectiveIds() || !copyRankAndMeta() || !copyCalls())
    return false;
  if (src_version_ >= 2 && !copyGpuTables()) return false;
  if (src_version_ >= 3 && !copyTable(m_.copies_.anchor, " ORDER BY clock_ns",
                                      m_.ins_anchor_.get(), "clock anchors", false, nullptr)) {
    return false;
  }
  if (src_version_ >= 4 && !copyTable(m_.copies_.marker, " ORDER BY start_ns",
                                      m_.ins_marker_.get(), "step markers", false, nullptr)) {
    return false;
  }
  if (!detail::exec(m_.out_.get(), "COMMIT", nullptr)) return writeFailed("cannot commit");
  detail::exec(src_, "COMMIT", nullptr);
  if (lo_ <= hi_) m_.next_collective_id_ += hi_ - lo_ + 1;
  m_.res_.collectives += collectives_;
  m_.res_.transfers += transfers_;
  return true;
}

// Opens the input and begins its read snapshot and the output transaction.
bool Merger::InputCopy::open() {
  // Pass 1 ran quick_check on this file moments ago; damage met now still
  // surfaces as a read error and rolls this input back.
  db_ = detail::openTraceReadOnly(in_.path, &src_version_, why_, /*quick_check=*/false);
  if (!db_) {
    *input_failed_ = true;
    return false;
  }
  src_ = db_.get();
  // One read snapshot for the whole copy: a live rank file may keep growing.
  if (!detail::exec(src_, "BEGIN", why_)) return inFail("cannot begin reading");
  sid_mark_ = m_.next_sid_;
  if (!detail::exec(m_.out_.get(), "BEGIN", why_)) return m_.outFail("cannot begin");
  return true;
}

// Strings: maps this file's sids onto the output's, adding new values.
bool Merger::InputCopy::copyStrings() {
  using T = detail::StringTable;
  Stmt st = detail::prepare(src_, detail::selectSql(T::kDef, src_version_, ""), nullptr);
  if (!st) return readFailed("cannot read strings");
  sqlite3_stmt* s = st.get();
  sqlite3_stmt* o = m_.ins_str_.get();
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (sqlite3_column_type(s, T::value) == SQLITE_NULL) continue;
    std::string value = textOf(s, T::value);
    auto it = m_.out_sids_.find(value);
    if (it == m_.out_sids_.end()) {
      sqlite3_bind_int64(o, param(T::id), m_.next_sid_);
      sqlite3_bind_text(o, param(T::value), value.data(), static_cast<int>(value.size()),
                        SQLITE_TRANSIENT);
      if (!stepOut(o)) return writeFailed("cannot write strings");
      it = m_.out_sids_.emplace(value, m_.next_sid_++).first;
      added_.push_back(std::move(value));
    }
    sid_map_[sqlite3_column_int64(s, T::id)] = it->second;
  }
  if (rc != SQLITE_DONE) return readFailed("cannot read strings");
  return true;
}

// Collective ids: this input gets the block [next_collective_id_, ...) of the size of its id
// range; transfer.collective_id moves by the same delta, so a transfer of a call cut off before
// its row was written still stays in this block.
bool Merger::InputCopy::moveCollectiveIds() {
  {
    Stmt st = detail::prepare(src_,
                              "SELECT (SELECT min(id) FROM collective_data), (SELECT max(id) FROM collective_data),"
                              " min(collective_id), max(collective_id) FROM transfer_data",
                              nullptr);
    if (!st) return readFailed("cannot read collective ids");
    const int rc = sqlite3_step(st.get());
    if (rc != SQLITE_ROW) return readFailed("cannot read collective ids");
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
    rollbackOut();
    return false;
  }
  delta_ = m_.next_collective_id_ - lo_;
  return true;
}

// Rank row (file = this input's basename) and meta under rank.<r>[#n].
bool Merger::InputCopy::copyRankAndMeta() {
  using Meta = detail::MetaTable;
  if (!copyTable(m_.copies_.rank, "", m_.ins_rank_.get(), "the rank row", false, nullptr)) {
    return false;
  }
  std::string prefix = "rank." + std::to_string(in_.rank);
  if (in_.copy_index > 0) prefix += "#" + std::to_string(in_.copy_index + 1);
  prefix += '.';
  return copyRows(detail::selectSql(Meta::kDef, src_version_, ""), m_.ins_meta_.get(), "meta",
                  false, nullptr, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                    const std::string key = prefix + textOf(s, Meta::key);
                    sqlite3_bind_text(o, param(Meta::key), key.data(), static_cast<int>(key.size()),
                                      SQLITE_TRANSIENT);
                    copyValue(o, param(Meta::value), s, Meta::value);
                    return true;
                  });
}

// The calls and their messages: the rows the merge result counts.
bool Merger::InputCopy::copyCalls() {
  const TableCopies& c = m_.copies_;
  return copyTable(c.collective, " ORDER BY id", m_.ins_coll_.get(), "collectives", true,
                   &collectives_) &&
         copyTable(c.transfer, " ORDER BY id", m_.ins_xfer_.get(), "transfers", true, &transfers_);
}

// Version-2 tables: collective ids move by the same delta as above.
bool Merger::InputCopy::copyGpuTables() {
  using Comm = detail::CommunicatorTable;
  const TableCopies& c = m_.copies_;
  if (!copyTable(c.collective_gpu, " ORDER BY collective_id", m_.ins_cgpu_.get(),
                 "collective GPU rows", false, nullptr) ||
      !copyTable(c.gpu_activity, " ORDER BY id", m_.ins_act_.get(), "GPU activity", true,
                 nullptr)) {
    return false;
  }
  const int comm_sid = detail::indexIn(c.communicator.read, Comm::comm_sid);
  return copyRows(tableSql(c.communicator, ""), m_.ins_comm_.get(), "communicators", false, nullptr,
                  [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                    bindRow(o, s, c.communicator);
                    // damaged: no communicator id
                    return sqlite3_column_type(s, comm_sid) != SQLITE_NULL &&
                           sid_map_.count(sqlite3_column_int64(s, comm_sid)) > 0;
                  });
}

// Binds the written columns from the input row, as copy.steps say.
void Merger::InputCopy::bindRow(sqlite3_stmt* o, sqlite3_stmt* s, const TableCopy& copy) {
  for (const TableCopy::Step& step : copy.steps) {
    const int to = step.to;
    const int from = step.from;
    switch (step.fill) {
      case Fill::kCopy:
        copyValue(o, to, s, from);
        break;
      case Fill::kSid:
        bindSid(o, to, s, from);
        break;
      case Fill::kCollectiveId:
        if (sqlite3_column_type(s, from) == SQLITE_NULL) {
          sqlite3_bind_null(o, to);
        } else {
          sqlite3_bind_int64(o, to, sqlite3_column_int64(s, from) + delta_);
        }
        break;
      case Fill::kFileRankIfNull:
        if (sqlite3_column_type(s, from) == SQLITE_NULL) {
          sqlite3_bind_int64(o, to, in_.rank);
        } else {
          copyValue(o, to, s, from);
        }
        break;
      case Fill::kFileRankIfUnknown:
        if (sqlite3_column_type(s, from) == SQLITE_NULL || sqlite3_column_int64(s, from) < 0) {
          sqlite3_bind_int64(o, to, in_.rank);
        } else {
          copyValue(o, to, s, from);
        }
        break;
      case Fill::kFileName:
        sqlite3_bind_text(o, to, file_.data(), static_cast<int>(file_.size()), SQLITE_TRANSIENT);
        break;
      case Fill::kNewId:
        break;  // not written (no step has it)
    }
  }
}

void Merger::InputCopy::bindSid(sqlite3_stmt* to, int to_index, sqlite3_stmt* from,
                                int from_index) {
  if (sqlite3_column_type(from, from_index) == SQLITE_NULL) {
    sqlite3_bind_null(to, to_index);
    return;
  }
  auto it = sid_map_.find(sqlite3_column_int64(from, from_index));
  if (it == sid_map_.end()) {
    sqlite3_bind_null(to, to_index);  // dangling sid in a damaged file: unknown
  } else {
    sqlite3_bind_int64(to, to_index, it->second);
  }
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

  // Pass 1: validate and probe.
  std::vector<Input> inputs;
  // (basename, why) of every unusable input: the caller's first, then ours.
  std::vector<std::pair<std::string, std::string>> skipped;
  for (const auto& [path, why] : opt_.skipped_inputs)
    skipped.emplace_back(detail::baseName(path), skipReason(path, why));
  for (const std::string& path : opt_.inputs) {
    Input in;
    std::string why;
    if (probe(path, &in, &why)) {
      inputs.push_back(in);
      total_ += in.rows;
    } else {
      res_.warnings.push_back("skipped " + why);
      skipped.emplace_back(detail::baseName(path), skipReason(path, why));
    }
  }
  if (inputs.empty()) {
    res_.error = detail::oneLine("merge: no usable input among " + std::to_string(opt_.inputs.size()) +
                                 " file(s); first problem: " + res_.warnings.front());
    return res_;
  }
  std::stable_sort(inputs.begin(), inputs.end(), [](const Input& a, const Input& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_unix_ns < b.start_unix_ns;
  });
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].rank == inputs[i - 1].rank) inputs[i].copy_index = inputs[i - 1].copy_index + 1;
  }

  auto abandon = [&]() {
    removeOutput();
    res_.ok = false;
    return res_;
  };
  if (!openOutput()) return abandon();

  // Pass 2: copy.
  std::map<int, int> files_per_rank;
  std::set<int> cut_off;
  int world = -1;
  for (const Input& in : inputs) {
    bool input_failed = false;
    std::string why;
    if (!InputCopy(*this, in, &input_failed, &why).run()) {
      if (!input_failed) return abandon();  // the output failed: res_.error is set
      res_.warnings.push_back("skipped " + why);
      skipped.emplace_back(detail::baseName(in.path), skipReason(in.path, why));
      continue;
    }
    ++files_per_rank[in.rank];
    if (!in.clean) cut_off.insert(in.rank);
    world = std::max(world, in.world_size);
  }
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
  res_.cut_off_ranks.assign(cut_off.begin(), cut_off.end());
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
  kv.emplace_back("skipped_inputs", skipped_list);
  kv.emplace_back("skipped_input_reasons", skipped_reasons);
  sqlite3* out = out_.get();
  std::string why;
  if (!detail::exec(out, "BEGIN", &why)) return outFail("cannot begin");
  for (const auto& [k, v] : kv) {
    using Meta = detail::MetaTable;
    sqlite3_bind_text(ins_meta_.get(), param(Meta::key), k.data(), static_cast<int>(k.size()),
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(ins_meta_.get(), param(Meta::value), v.data(), static_cast<int>(v.size()),
                      SQLITE_TRANSIENT);
    if (!stepOut(ins_meta_.get())) return outFail("cannot write meta");
  }
  if (!detail::exec(out, detail::kMergedIndexSql, &why) || !detail::exec(out, "COMMIT", &why)) {
    res_.error = detail::oneLine(tmp_ + ": cannot build indexes: " + why);
    return false;
  }
  return true;
}

// Closes, fsyncs and moves the temporary file into place (fileio's rules: a regular file is
// replaced only with overwrite, anything else never).
bool Merger::finish() {
  finalizeStatements();
  if (sqlite3_close(out_.release()) != SQLITE_OK) {
    res_.error = tmp_ + ": cannot close";
    return false;
  }
  std::string error;
  if (!file_.commit(&error)) {
    res_.error = detail::oneLine(error);
    return false;
  }
  return true;
}

}  // namespace

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
