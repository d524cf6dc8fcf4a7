// storage/src/merge.cpp — merges rank files into one trace.
//
// Two passes over the inputs, each through the defensive read-only opener:
//  1. validate and probe every input (rank row, end_state, row counts);
//     unusable inputs are skipped with a warning naming the file;
//  2. copy each usable input (sorted by rank, then start time) inside one read
//     snapshot of it, remapping string ids and collective ids, into the output.
// Rows are streamed through prepared statements (bind/step/reset); nothing is
// loaded whole. The output is built at <output>.tmp-<pid>, indexed, fsynced
// and only then moved to <output>.
#include "ringside/storage/merge.h"

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

#include "ringside/storage/records.h"
#include "schema.h"
#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::Db;
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

std::string joinInts(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(v[i]);
  }
  return out;
}

// Pass 1 on one file: returns false with *why (one line, naming the file).
bool probe(const std::string& path, Input* in, std::string* why) {
  Db db = detail::openTraceReadOnly(path, nullptr, why);
  if (!db) return false;
  sqlite3* raw = db.get();
  auto fail = [&](std::string_view what) {
    *why = detail::oneLine(path + ": " + std::string(what) + ": " + detail::lastError(raw));
    return false;
  };
  in->path = path;
  {
    Stmt st = detail::prepare(raw, "SELECT rank, world_size, start_unix_ns FROM rank", nullptr);
    if (!st) return fail("cannot read the rank table");
    int rows = 0;
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      if (++rows > 1) {
        *why = detail::oneLine(path + ": has several rank rows (a merged trace?), not a rank file");
        return false;
      }
      const int64_t r = detail::columnNullable(st.get(), 0);
      const int64_t w = detail::columnNullable(st.get(), 1);
      in->rank = (r >= 0 && r < kMaxPlausibleWorld) ? static_cast<int32_t>(r) : -1;
      in->world_size = (w > 0 && w <= kMaxPlausibleWorld) ? static_cast<int32_t>(w) : -1;
      in->start_unix_ns = sqlite3_column_int64(st.get(), 2);
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
    Stmt st = detail::prepare(raw, "SELECT key, value FROM meta WHERE key IN ('end_state', 'merged_at_unix_ns')",
                              nullptr);
    if (!st) return fail("cannot read the meta table");
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      const std::string key = textOf(st.get(), 0);
      if (key == "merged_at_unix_ns") {
        *why = detail::oneLine(path + ": is a merged trace, not a rank file");
        return false;
      }
      if (key == "end_state") in->clean = textOf(st.get(), 1) == "clean";
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

class Merger {
 public:
  explicit Merger(const MergeOptions& o) : opt_(o) {}
  // An exception midway (out of memory) must not leave the temporary file behind.
  ~Merger() {
    if (!res_.ok && !tmp_.empty()) removeOutput();
  }
  Merger(const Merger&) = delete;
  Merger& operator=(const Merger&) = delete;
  MergeResult run();

 private:
  bool openOutput();
  bool copyInput(const Input& in, bool* input_failed, std::string* why);
  bool finish();
  // Finalizes every output statement (before the output connection can close).
  void finalizeStatements() {
    for (Stmt* st : {&ins_coll_, &ins_xfer_, &ins_str_, &ins_rank_, &ins_meta_, &ins_cgpu_, &ins_act_, &ins_comm_})
      st->reset();
  }
  // Closes the output and deletes the temporary file and its journal.
  void removeOutput() {
    finalizeStatements();
    out_.reset();
    ::unlink(tmp_.c_str());
    ::unlink((tmp_ + "-journal").c_str());
  }
  bool outFail(std::string_view what) {
    res_.error = detail::oneLine(tmp_ + ": " + std::string(what) + ": " + detail::lastError(out_.get()));
    return false;
  }
  void progress() {
    if (opt_.progress) opt_.progress(done_, std::max(done_, total_));
  }

  const MergeOptions& opt_;
  MergeResult res_;
  std::string tmp_;
  Db out_;
  Stmt ins_coll_, ins_xfer_, ins_str_, ins_rank_, ins_meta_, ins_cgpu_, ins_act_, ins_comm_;
  std::unordered_map<std::string, int64_t> out_sids_;
  int64_t next_sid_ = 1;
  int64_t next_collective_id_ = 1;
  int64_t done_ = 0, total_ = 0;
};

bool Merger::openOutput() {
  ::unlink(tmp_.c_str());
  ::unlink((tmp_ + "-journal").c_str());
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(detail::fileUri(tmp_, "").c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI |
                                     SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXCLUSIVE,
                                 nullptr);
  out_.reset(raw);
  if (rc != SQLITE_OK) return outFail("cannot create");
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
  struct Prep {
    Stmt* stmt;
    const char* sql;
  };
  const Prep preps[] = {
      {&ins_coll_,
       "INSERT INTO collective_data(id, rank, comm_sid, seq, op_sid, library_sid, bytes, count,"
       " dtype_sid, reduce_op_sid, algorithm_sid, start_ns, end_ns, root, tid, status)"
       " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)"},
      {&ins_xfer_,
       "INSERT INTO transfer_data(rank, collective_id, src_rank, dst_rank, bytes, start_ns,"
       " end_ns, side_sid, phase_sid, step, chunk, slot, channel)"
       " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)"},
      {&ins_cgpu_,
       "INSERT OR REPLACE INTO collective_gpu_data(collective_id, gpu_start_ns, gpu_end_ns, algorithm_sid,"
       " protocol_sid, channels, group_id, stream, device) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)"},
      {&ins_act_,
       "INSERT INTO gpu_activity_data(rank, kind_sid, name_sid, start_ns, end_ns, device, stream, bytes,"
       " copy_kind_sid, correlation_id, collective_id) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)"},
      {&ins_comm_,
       "INSERT OR REPLACE INTO communicator_data(rank, comm_sid, library_sid, comm_rank, comm_size,"
       " parent_sid, created_ns, ended_ns, end_state_sid, topology) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)"},
      {&ins_str_, "INSERT INTO string(id, value) VALUES(?1, ?2)"},
      {&ins_rank_,
       "INSERT INTO rank(rank, world_size, local_rank, host, pid, launcher, clock, start_ns,"
       " start_unix_ns, command_line, identity_source, file)"
       " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)"},
      {&ins_meta_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)"},
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

bool Merger::copyInput(const Input& in, bool* input_failed, std::string* why) {
  *input_failed = false;
  // Pass 1 ran quick_check on this file moments ago; damage met now still
  // surfaces as a read error and rolls this input back.
  int src_version = 0;
  Db db = detail::openTraceReadOnly(in.path, &src_version, why, /*quick_check=*/false);
  if (!db) {
    *input_failed = true;
    return false;
  }
  sqlite3* src = db.get();
  sqlite3* out = out_.get();
  auto inFail = [&](std::string_view what) {
    *why = detail::oneLine(in.path + ": " + std::string(what) + ": " + detail::lastError(src));
    *input_failed = true;
    return false;
  };
  // One read snapshot for the whole copy: a live rank file may keep growing.
  if (!detail::exec(src, "BEGIN", why)) return inFail("cannot begin reading");

  // Strings: map this file's sids onto the output's, adding new values.
  std::unordered_map<int64_t, int64_t> sid_map;
  std::vector<std::string> added;  // to forget if this input is rolled back
  const int64_t sid_mark = next_sid_;
  if (!detail::exec(out, "BEGIN", why)) return outFail("cannot begin");
  auto rollbackOut = [&]() {
    detail::exec(out, "ROLLBACK", nullptr);
    for (const auto& s : added) out_sids_.erase(s);
    next_sid_ = sid_mark;
  };
  auto readFailed = [&](std::string_view what) {
    inFail(what);
    rollbackOut();
    return false;
  };
  auto writeFailed = [&](std::string_view what) {
    outFail(what);
    rollbackOut();
    return false;
  };
  // Streams the rows of `sql` into `o`: `bind(o, s)` binds one source row and
  // returns false to leave it out. Written rows are counted into *written
  // (when given) and, for the big tables (`progress_rows`), in the progress.
  // `what` names the rows in "cannot read/write ..." errors.
  auto copyRows = [&](std::string_view sql, sqlite3_stmt* o, const std::string& what, bool progress_rows,
                      int64_t* written, auto&& bind) {
    Stmt st = detail::prepare(src, sql, nullptr);
    if (!st) return readFailed("cannot read " + what);
    sqlite3_stmt* s = st.get();
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      if (!bind(o, s)) continue;
      if (!stepOut(o)) return writeFailed("cannot write " + what);
      if (written) ++*written;
      if (progress_rows && ++done_ % kProgressEvery == 0) progress();
    }
    if (rc != SQLITE_DONE) return readFailed("cannot read " + what);
    return true;
  };
  {
    Stmt st = detail::prepare(src, "SELECT id, value FROM string", nullptr);
    if (!st) return readFailed("cannot read strings");
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      if (sqlite3_column_type(st.get(), 1) == SQLITE_NULL) continue;
      std::string value = textOf(st.get(), 1);
      auto it = out_sids_.find(value);
      if (it == out_sids_.end()) {
        sqlite3_bind_int64(ins_str_.get(), 1, next_sid_);
        sqlite3_bind_text(ins_str_.get(), 2, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
        if (!stepOut(ins_str_.get())) return writeFailed("cannot write strings");
        it = out_sids_.emplace(value, next_sid_++).first;
        added.push_back(std::move(value));
      }
      sid_map[sqlite3_column_int64(st.get(), 0)] = it->second;
    }
    if (rc != SQLITE_DONE) return readFailed("cannot read strings");
  }
  auto bindSid = [&](sqlite3_stmt* to, int to_index, sqlite3_stmt* from, int from_index) {
    if (sqlite3_column_type(from, from_index) == SQLITE_NULL) {
      sqlite3_bind_null(to, to_index);
      return;
    }
    auto it = sid_map.find(sqlite3_column_int64(from, from_index));
    if (it == sid_map.end()) {
      sqlite3_bind_null(to, to_index);  // dangling sid in a damaged file: unknown
    } else {
      sqlite3_bind_int64(to, to_index, it->second);
    }
  };

  // Collective ids: this input gets the block [next_collective_id_, ...) of the
  // size of its id range; transfer.collective_id moves by the same delta, so a
  // transfer of a call cut off before its row was written still stays in this block.
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  {
    Stmt st = detail::prepare(src,
                              "SELECT (SELECT min(id) FROM collective_data), (SELECT max(id) FROM collective_data),"
                              " min(collective_id), max(collective_id) FROM transfer_data",
                              nullptr);
    if (!st) return readFailed("cannot read collective ids");
    const int rc = sqlite3_step(st.get());
    if (rc != SQLITE_ROW) return readFailed("cannot read collective ids");
    for (int i = 0; i < 4; ++i) {
      if (sqlite3_column_type(st.get(), i) == SQLITE_NULL) continue;
      const int64_t x = sqlite3_column_int64(st.get(), i);
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
  }
  int64_t delta = 0;
  if (lo <= hi) {
    // Guard against ids that would overflow (only a damaged file has them).
    constexpr int64_t kLimit = int64_t{1} << 60;
    if (lo < -kLimit || hi > kLimit || hi - lo + 1 > kLimit || next_collective_id_ + (hi - lo + 1) > kLimit) {
      *why = detail::oneLine(in.path + ": collective ids out of range (damaged file?)");
      *input_failed = true;
      rollbackOut();
      return false;
    }
    delta = next_collective_id_ - lo;
  }

  // Rank row (file = this input's basename) and meta under rank.<r>[#n].
  const std::string file = detail::baseName(in.path);
  if (!copyRows("SELECT rank, world_size, local_rank, host, pid, launcher, clock, start_ns,"
                " start_unix_ns, command_line, identity_source FROM rank",
                ins_rank_.get(), "the rank row", false, nullptr, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                  for (int i = 0; i < 11; ++i) copyValue(o, i + 1, s, i);
                  sqlite3_bind_text(o, 12, file.data(), static_cast<int>(file.size()), SQLITE_TRANSIENT);
                  return true;
                }))
    return false;
  std::string prefix = "rank." + std::to_string(in.rank);
  if (in.copy_index > 0) prefix += "#" + std::to_string(in.copy_index + 1);
  prefix += '.';
  if (!copyRows("SELECT key, value FROM meta", ins_meta_.get(), "meta", false, nullptr,
                [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                  const std::string key = prefix + textOf(s, 0);
                  sqlite3_bind_text(o, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
                  copyValue(o, 2, s, 1);
                  return true;
                }))
    return false;

  int64_t collectives = 0, transfers = 0;
  // A row's rank when the row has none: the file's (learned after the row was written).
  auto bindRankOrFile = [&](sqlite3_stmt* o, int to_index, sqlite3_stmt* s, int from_index) {
    if (sqlite3_column_type(s, from_index) == SQLITE_NULL) {
      sqlite3_bind_int64(o, to_index, in.rank);
    } else {
      copyValue(o, to_index, s, from_index);
    }
  };
  // Collective ids move by this input's delta; NULL stays NULL.
  auto bindCollective = [&](sqlite3_stmt* o, int to_index, sqlite3_stmt* s, int from_index) {
    if (sqlite3_column_type(s, from_index) == SQLITE_NULL) {
      sqlite3_bind_null(o, to_index);
    } else {
      sqlite3_bind_int64(o, to_index, sqlite3_column_int64(s, from_index) + delta);
    }
  };
  if (!copyRows("SELECT id, rank, comm_sid, seq, op_sid, library_sid, bytes, count, dtype_sid,"
                " reduce_op_sid, algorithm_sid, start_ns, end_ns, root, tid, status"
                " FROM collective_data ORDER BY id",
                ins_coll_.get(), "collectives", true, &collectives, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                  sqlite3_bind_int64(o, 1, sqlite3_column_int64(s, 0) + delta);
                  bindRankOrFile(o, 2, s, 1);
                  bindSid(o, 3, s, 2);
                  copyValue(o, 4, s, 3);
                  bindSid(o, 5, s, 4);
                  bindSid(o, 6, s, 5);
                  copyValue(o, 7, s, 6);
                  copyValue(o, 8, s, 7);
                  bindSid(o, 9, s, 8);
                  bindSid(o, 10, s, 9);
                  bindSid(o, 11, s, 10);
                  for (int i = 11; i < 16; ++i) copyValue(o, i + 1, s, i);
                  return true;
                }))
    return false;
  if (!copyRows(std::string("SELECT rank, collective_id, src_rank, dst_rank, bytes, start_ns,"
                            " end_ns, side_sid, phase_sid, step, chunk, slot, ") +
                    (src_version >= 2 ? "channel" : "NULL") + " FROM transfer_data ORDER BY id",
                ins_xfer_.get(), "transfers", true, &transfers, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                  bindRankOrFile(o, 1, s, 0);
                  bindCollective(o, 2, s, 1);
                  for (int i = 2; i < 7; ++i) copyValue(o, i + 1, s, i);
                  bindSid(o, 8, s, 7);
                  bindSid(o, 9, s, 8);
                  for (int i = 9; i < 13; ++i) copyValue(o, i + 1, s, i);
                  return true;
                }))
    return false;
  // Version-2 tables: collective ids move by the same delta as above.
  if (src_version >= 2) {
    auto bindRank = [&](sqlite3_stmt* o, int to_index, sqlite3_stmt* s, int from_index) {
      if (sqlite3_column_type(s, from_index) == SQLITE_NULL || sqlite3_column_int64(s, from_index) < 0) {
        sqlite3_bind_int64(o, to_index, in.rank);  // learned after the row was written
      } else {
        copyValue(o, to_index, s, from_index);
      }
    };
    if (!copyRows("SELECT collective_id, gpu_start_ns, gpu_end_ns, algorithm_sid, protocol_sid,"
                  " channels, group_id, stream, device FROM collective_gpu_data"
                  " ORDER BY collective_id",
                  ins_cgpu_.get(), "collective GPU rows", false, nullptr, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                    bindCollective(o, 1, s, 0);
                    copyValue(o, 2, s, 1);
                    copyValue(o, 3, s, 2);
                    bindSid(o, 4, s, 3);
                    bindSid(o, 5, s, 4);
                    for (int i = 5; i < 9; ++i) copyValue(o, i + 1, s, i);
                    return true;
                  }))
      return false;
    if (!copyRows("SELECT rank, kind_sid, name_sid, start_ns, end_ns, device, stream, bytes,"
                  " copy_kind_sid, correlation_id, collective_id FROM gpu_activity_data ORDER BY id",
                  ins_act_.get(), "GPU activity", true, nullptr, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                    bindRank(o, 1, s, 0);
                    bindSid(o, 2, s, 1);
                    bindSid(o, 3, s, 2);
                    for (int i = 3; i < 8; ++i) copyValue(o, i + 1, s, i);
                    bindSid(o, 9, s, 8);
                    copyValue(o, 10, s, 9);
                    bindCollective(o, 11, s, 10);
                    return true;
                  }))
      return false;
    if (!copyRows("SELECT rank, comm_sid, library_sid, comm_rank, comm_size, parent_sid,"
                  " created_ns, ended_ns, end_state_sid, topology FROM communicator_data",
                  ins_comm_.get(), "communicators", false, nullptr, [&](sqlite3_stmt* o, sqlite3_stmt* s) {
                    bindRank(o, 1, s, 0);
                    bindSid(o, 2, s, 1);
                    bindSid(o, 3, s, 2);
                    copyValue(o, 4, s, 3);
                    copyValue(o, 5, s, 4);
                    bindSid(o, 6, s, 5);
                    copyValue(o, 7, s, 6);
                    copyValue(o, 8, s, 7);
                    bindSid(o, 9, s, 8);
                    copyValue(o, 10, s, 9);
                    // damaged: no communicator id
                    return sqlite3_column_type(s, 1) != SQLITE_NULL && sid_map.count(sqlite3_column_int64(s, 1)) > 0;
                  }))
      return false;
  }
  if (!detail::exec(out, "COMMIT", nullptr)) return writeFailed("cannot commit");
  detail::exec(src, "COMMIT", nullptr);
  if (lo <= hi) next_collective_id_ += hi - lo + 1;
  res_.collectives += collectives;
  res_.transfers += transfers;
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
  struct stat sb {};
  if (!opt_.overwrite && ::lstat(opt_.output.c_str(), &sb) == 0) {
    res_.error = detail::oneLine(opt_.output + ": already exists (overwrite it explicitly to replace it)");
    return res_;
  }

  // Pass 1: validate and probe.
  std::vector<Input> inputs;
  std::vector<std::string> skipped;
  for (const std::string& path : opt_.inputs) {
    Input in;
    std::string why;
    if (probe(path, &in, &why)) {
      inputs.push_back(in);
      total_ += in.rows;
    } else {
      res_.warnings.push_back("skipped " + why);
      skipped.push_back(detail::baseName(path));
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

  tmp_ = opt_.output + ".tmp-" + std::to_string(::getpid());
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
    if (!copyInput(in, &input_failed, &why)) {
      if (!input_failed) return abandon();  // the output failed: res_.error is set
      res_.warnings.push_back("skipped " + why);
      skipped.push_back(detail::baseName(in.path));
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

  // Merged meta (the caller's extra keys first: ours describe this merge and win).
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::string skipped_list;
  for (size_t i = 0; i < skipped.size(); ++i) skipped_list += (i ? "," : "") + skipped[i];
  std::vector<std::pair<std::string, std::string>> kv = opt_.extra_meta;
  kv.emplace_back("schema_version", std::to_string(kSchemaVersion));
  kv.emplace_back("merged_at_unix_ns", std::to_string(now));
  kv.emplace_back("ranks", std::to_string(res_.ranks));
  kv.emplace_back("world_size", std::to_string(world));
  kv.emplace_back("cut_off_ranks", joinInts(res_.cut_off_ranks));
  kv.emplace_back("missing_ranks", joinInts(res_.missing_ranks));
  kv.emplace_back("skipped_inputs", skipped_list);
  sqlite3* out = out_.get();
  std::string why;
  if (!detail::exec(out, "BEGIN", &why)) {
    outFail("cannot begin");
    return abandon();
  }
  for (const auto& [k, v] : kv) {
    sqlite3_bind_text(ins_meta_.get(), 1, k.data(), static_cast<int>(k.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(ins_meta_.get(), 2, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    if (!stepOut(ins_meta_.get())) {
      outFail("cannot write meta");
      return abandon();
    }
  }
  if (!detail::exec(out, detail::kMergedIndexSql, &why) || !detail::exec(out, "COMMIT", &why)) {
    res_.error = detail::oneLine(tmp_ + ": cannot build indexes: " + why);
    return abandon();
  }
  progress();
  if (!finish()) return abandon();
  res_.ok = true;
  return res_;
}

// Closes, fsyncs and moves the temporary file into place.
bool Merger::finish() {
  finalizeStatements();
  if (sqlite3_close(out_.release()) != SQLITE_OK) {
    res_.error = tmp_ + ": cannot close";
    return false;
  }
  const int fd = ::open(tmp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    res_.error = detail::oneLine(tmp_ + ": cannot sync: " + std::strerror(errno));
    if (fd >= 0) ::close(fd);
    return false;
  }
  ::close(fd);
  if (opt_.overwrite) {
    if (::rename(tmp_.c_str(), opt_.output.c_str()) != 0) {
      res_.error = detail::oneLine(opt_.output + ": cannot rename into place: " + std::strerror(errno));
      return false;
    }
  } else {
    // link() never replaces: an output that appeared meanwhile is kept.
    if (::link(tmp_.c_str(), opt_.output.c_str()) != 0) {
      const int e = errno;
      if (e == EEXIST) {
        res_.error = detail::oneLine(opt_.output + ": already exists (overwrite it explicitly to replace it)");
        return false;
      }
      struct stat sb {};
      if (::lstat(opt_.output.c_str(), &sb) == 0 || ::rename(tmp_.c_str(), opt_.output.c_str()) != 0) {
        res_.error = detail::oneLine(opt_.output + ": cannot move into place: " + std::strerror(e));
        return false;
      }
    } else {
      ::unlink(tmp_.c_str());
    }
  }
  // Make the new directory entry durable too.
  std::string dir = opt_.output;
  const auto slash = dir.find_last_of('/');
  dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
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
