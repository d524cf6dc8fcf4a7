// storage/src/rank_writer.cpp — the SQLite writer of one rank file.
//
// Runs inside the traced process (on the collector's writer thread), so it
// must never throw, never abort and never disturb the job: every failure is
// caught, turned into `false` plus a one-line error(), and the writer stays
// failed from then on. Rows go through statements prepared once at create()
// (bind/step/reset); short strings are interned through an in-memory map.
#include "ringside/storage/rank_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>
#include <string>
#include <unordered_map>

#include "columns.h"
#include "ringside/storage/privacy.h"
#include "schema.h"
#include "sqlite_util.h"

namespace ringside::storage {
namespace {

using detail::ClockAnchorTable;
using detail::StepMarkerTable;
using detail::CollectiveGpuTable;
using detail::CollectiveTable;
using detail::CommunicatorTable;
using detail::Db;
using detail::GpuActivityTable;
using detail::MetaTable;
using detail::param;
using detail::RankTable;
using detail::Stmt;
using detail::StringTable;
using detail::TransferTable;

// Hash map keyed by std::string that accepts string_view lookups without
// building a std::string for every probe.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using InternMap = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

// Remembers the last value seen in one string column: consecutive rows mostly
// repeat op/library/dtype, so most lookups end with one short compare.
struct LastString {
  std::string value;
  int64_t sid = kNone;
};

class SqliteRankWriter final : public RankWriter {
 public:
  SqliteRankWriter(std::string path, Db db) : path_(std::move(path)), db_(std::move(db)), owner_pid_(::getpid()) {}
  ~SqliteRankWriter() override { closeQuietly(); }

  bool init(std::string* error, bool fsync);

  bool setRank(const RankInfo& info) override;
  bool setMeta(std::string_view key, std::string_view value) override;
  bool begin() override;
  bool addCollective(const CollectiveRow& row) override;
  bool addTransfer(const TransferRow& row) override;
  bool addCollectiveGpu(const CollectiveGpuRow& row) override;
  bool addGpuActivity(const GpuActivityRow& row) override;
  bool addCommunicator(const CommunicatorRow& row) override;
  bool addClockAnchor(const ClockAnchorRow& row) override;
  bool addStepMarker(const StepMarkerRow& row) override;
  bool addCpuSample(const CpuSampleRow& row) override;
  bool commit() override;
  bool close() override;
  const std::string& error() const override { return error_; }

 private:
  // Records the first failure and makes every later call fail.
  bool fail(std::string_view what);
  bool failSqlite(std::string_view what) { return fail(std::string(what) + ": " + detail::lastError(db_.get())); }
  bool misuse(std::string_view what);
  bool usable(std::string_view what);
  bool stepDone(sqlite3_stmt* st, std::string_view what);
  // Returns the sid of `value` (kNone for ""), inserting it the first time.
  bool intern(std::string_view value, LastString* last, int64_t* sid);
  bool writeRank(const RankInfo& info);
  bool writeMeta(std::string_view key, std::string_view value);
  void closeQuietly() noexcept;
  // Runs `body`, turning any exception (bad_alloc above all) into a failure.
  template <class Body>
  bool guarded(const char* what, Body&& body) noexcept {
    try {
      return body();
    } catch (const std::bad_alloc&) {
      return fail(std::string(what) + ": out of memory");
    } catch (const std::exception& e) {
      return fail(std::string(what) + ": " + e.what());
    } catch (...) {
      return fail(std::string(what) + ": unknown exception");
    }
  }

  std::string path_;
  Db db_;
  std::string error_;
  bool failed_ = false;
  bool in_batch_ = false;
  bool closed_ = false;
  pid_t owner_pid_;  // a forked child must never touch (or close) its parent's database

  Stmt begin_, commit_, rollback_;
  Stmt insert_collective_, insert_transfer_, insert_string_, upsert_meta_, delete_rank_, insert_rank_;
  Stmt upsert_collective_gpu_, insert_gpu_activity_, upsert_communicator_, insert_anchor_,
      insert_marker_, insert_cpu_;

  InternMap strings_;
  int64_t next_sid_ = 1;
  int64_t next_transfer_id_ = 1;
  int64_t next_activity_id_ = 1;
  int32_t rank_ = -1;  // from setRank(); fills transfer_data.rank
  LastString comm_, op_, library_, dtype_, reduce_op_, algorithm_, side_, phase_;
  LastString gpu_algorithm_, protocol_, activity_kind_, activity_name_, copy_kind_, comm_library_,
      comm_parent_, end_state_;
};

bool SqliteRankWriter::fail(std::string_view what) {
  if (!failed_) {
    failed_ = true;
    error_ = detail::oneLine(path_ + ": " + std::string(what));
  }
  if (in_batch_ && db_) {
    if (rollback_) {
      sqlite3_reset(rollback_.get());
      sqlite3_step(rollback_.get());
      sqlite3_reset(rollback_.get());
    }
    in_batch_ = false;
  }
  return false;
}

bool SqliteRankWriter::misuse(std::string_view what) {
  // Caller mistakes are reported but do not poison the writer.
  if (!failed_) error_ = detail::oneLine(path_ + ": " + std::string(what));
  return false;
}

bool SqliteRankWriter::usable(std::string_view what) {
  if (failed_) return false;
  if (::getpid() != owner_pid_) return misuse(std::string(what) + " in a forked child");
  if (closed_ || !db_) return misuse(std::string(what) + " after close()");
  return true;
}

bool SqliteRankWriter::stepDone(sqlite3_stmt* st, std::string_view what) {
  const int rc = sqlite3_step(st);
  if (rc != SQLITE_DONE) {
    // Take the message first, then reset (ends the statement), then roll back.
    const std::string msg = std::string(what) + ": " + detail::lastError(db_.get());
    sqlite3_reset(st);
    return fail(msg);
  }
  sqlite3_reset(st);
  return true;
}

bool SqliteRankWriter::init(std::string* error, bool fsync) {
  sqlite3* db = db_.get();
  sqlite3_extended_result_codes(db, 1);
  // Nothing else writes this file; readers never block a WAL writer, so a
  // short wait only covers a reader's WAL recovery.
  sqlite3_busy_timeout(db, 1000);
  std::string why;
  const char* pragmas =
      // 16 KiB pages: fewer page splits and WAL frame headers per row; measured
      // ~6% more collective rows/s than 4 KiB. Must precede journal_mode=WAL.
      "PRAGMA page_size=16384;"
      // WAL: readers (merge, a live `ringside report`) see committed batches while
      // we write, and a killed process loses only its open batch.
      "PRAGMA journal_mode=WAL;"
      // NORMAL in WAL: a commit is a write() to the -wal file, which survives
      // SIGKILL/OOM kill; only a power loss can drop the last commits. No fsync per batch.
      "PRAGMA synchronous=NORMAL;"
      // 8 MiB page cache: a 100k-row batch stays in memory until commit, and the
      // traced process's memory stays bounded.
      "PRAGMA cache_size=-8192;"
      // Checkpoint about every 16 MiB of WAL rather than 4 MiB: fewer, larger
      // checkpoints on the writer thread; the -wal file stays bounded.
      "PRAGMA wal_autocheckpoint=4096;"
      // Foreign keys are not declared; make sure no checking costs time anyway.
      "PRAGMA foreign_keys=OFF;";
  if (!detail::exec(db, pragmas, &why) ||
      (!fsync && !detail::exec(db, "PRAGMA synchronous=OFF;", &why))) {
    *error = detail::oneLine(path_ + ": cannot set up: " + why);
    return false;
  }
  const std::string schema_meta =
      "INSERT INTO meta(key, value) VALUES('schema_version', '" + std::to_string(kSchemaVersion) + "');";
  if (!detail::exec(db, "BEGIN IMMEDIATE", &why) || !detail::createSchema(db, &why) ||
      !detail::exec(db, schema_meta.c_str(), &why) || !detail::exec(db, "COMMIT", &why)) {
    *error = detail::oneLine(path_ + ": cannot create the schema: " + why);
    return false;
  }

  struct Prep {
    Stmt* stmt;
    std::string sql;
  };
  const Prep preps[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&insert_collective_, detail::insertSql(CollectiveTable::kDef)},
      {&insert_transfer_, detail::insertSql(TransferTable::kDef)},
      // Later rows fill what is still unknown and never erase what is known.
      {&upsert_collective_gpu_,
       detail::upsertSql(CollectiveGpuTable::kDef,
                         detail::columns({CollectiveGpuTable::collective_id}))},
      {&insert_gpu_activity_, detail::insertSql(GpuActivityTable::kDef)},
      {&upsert_communicator_,
       detail::upsertSql(CommunicatorTable::kDef,
                         detail::columns({CommunicatorTable::rank, CommunicatorTable::comm_sid}))},
      {&insert_string_, detail::insertSql(StringTable::kDef)},
      {&upsert_meta_, detail::insertSql(MetaTable::kDef, "INSERT OR REPLACE")},
      {&delete_rank_, "DELETE FROM rank"},
      {&insert_rank_, detail::insertSql(RankTable::kDef)},
      {&insert_anchor_, detail::insertSql(ClockAnchorTable::kDef)},
      {&insert_marker_, detail::insertSql(StepMarkerTable::kDef)},
      {&insert_cpu_, detail::insertSql(detail::CpuSampleTable::kDef)},
  };
  for (const Prep& p : preps) {
    *p.stmt = detail::prepare(db, p.sql, &why);
    if (!*p.stmt) {
      *error = detail::oneLine(path_ + ": cannot prepare statements: " + why);
      return false;
    }
  }
  return true;
}

bool SqliteRankWriter::intern(std::string_view value, LastString* last, int64_t* sid) {
  if (value.empty()) {
    *sid = kNone;
    return true;
  }
  if (last->sid != kNone && value == last->value) {
    *sid = last->sid;
    return true;
  }
  auto it = strings_.find(value);
  if (it == strings_.end()) {
    const int64_t id = next_sid_;
    using T = StringTable;
    sqlite3_stmt* st = insert_string_.get();
    sqlite3_bind_int64(st, param(T::id), id);
    sqlite3_bind_text(st, param(T::value), value.data(), static_cast<int>(value.size()),
                      SQLITE_STATIC);
    const bool ok = stepDone(st, "cannot store a string");
    sqlite3_clear_bindings(st);
    if (!ok) return false;
    ++next_sid_;
    it = strings_.emplace(std::string(value), id).first;
  }
  last->value.assign(value);
  last->sid = it->second;
  *sid = it->second;
  return true;
}

// Binds a string; "" (unknown) as NULL. SQLITE_TRANSIENT: the caller's view may die.
static int bindText(sqlite3_stmt* st, int index, std::string_view s) {
  if (s.empty()) return sqlite3_bind_null(st, index);
  return sqlite3_bind_text(st, index, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

bool SqliteRankWriter::writeRank(const RankInfo& info) {
  if (!stepDone(delete_rank_.get(), "cannot store the rank row")) return false;
  using T = RankTable;
  sqlite3_stmt* st = insert_rank_.get();
  detail::bindNullable(st, param(T::rank), info.rank);
  detail::bindNullable(st, param(T::world_size), info.world_size);
  detail::bindNullable(st, param(T::local_rank), info.local_rank);
  bindText(st, param(T::host), info.host);
  sqlite3_bind_int64(st, param(T::pid), info.pid);
  bindText(st, param(T::launcher), info.launcher);
  bindText(st, param(T::clock), info.clock);
  sqlite3_bind_int64(st, param(T::start_ns), info.start_ns);
  sqlite3_bind_int64(st, param(T::start_unix_ns), info.start_unix_ns);
  bindText(st, param(T::command_line), info.command_line);
  bindText(st, param(T::identity_source), info.identity_source);
  const std::string file = detail::baseName(path_);
  bindText(st, param(T::file), file);
  bindText(st, param(T::boot_id), info.boot_id);
  sqlite3_bind_int64(st, param(T::timens_offset_ns), info.timens_offset_ns);
  const bool ok = stepDone(st, "cannot store the rank row");
  sqlite3_clear_bindings(st);
  if (ok) rank_ = info.rank;
  return ok;
}

bool SqliteRankWriter::writeMeta(std::string_view key, std::string_view value) {
  using T = MetaTable;
  sqlite3_stmt* st = upsert_meta_.get();
  sqlite3_bind_text(st, param(T::key), key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
  sqlite3_bind_text(st, param(T::value), value.data(), static_cast<int>(value.size()),
                    SQLITE_STATIC);
  const bool ok = stepDone(st, "cannot store meta key");
  sqlite3_clear_bindings(st);
  return ok;
}

bool SqliteRankWriter::setRank(const RankInfo& info) {
  return guarded("setRank", [&]() -> bool {
    if (!usable("setRank")) return false;
    if (in_batch_) return writeRank(info);
    if (!stepDone(begin_.get(), "cannot begin a transaction")) return false;
    in_batch_ = true;
    if (!writeRank(info)) return false;
    in_batch_ = false;
    return stepDone(commit_.get(), "cannot commit the rank row");
  });
}

bool SqliteRankWriter::setMeta(std::string_view key, std::string_view value) {
  return guarded("setMeta", [&]() -> bool {
    if (!usable("setMeta")) return false;
    if (key.empty()) return misuse("setMeta: empty key");
    if (in_batch_) return writeMeta(key, value);
    // A single statement outside BEGIN commits on its own (autocommit).
    return writeMeta(key, value);
  });
}

bool SqliteRankWriter::begin() {
  return guarded("begin", [&]() -> bool {
    if (!usable("begin")) return false;
    if (in_batch_) return misuse("begin(): a batch is already open");
    if (!stepDone(begin_.get(), "cannot begin a batch")) return false;
    in_batch_ = true;
    return true;
  });
}

bool SqliteRankWriter::addCollective(const CollectiveRow& row) {
  return guarded("addCollective", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addCollective() outside begin()/commit()");
    int64_t comm, op, library, dtype, reduce_op, algorithm;
    if (!intern(row.comm, &comm_, &comm) || !intern(row.op, &op_, &op) ||
        !intern(row.library, &library_, &library) || !intern(row.dtype, &dtype_, &dtype) ||
        !intern(row.reduce_op, &reduce_op_, &reduce_op) ||
        !intern(row.algorithm, &algorithm_, &algorithm)) {
      return false;
    }
    using T = CollectiveTable;
    sqlite3_stmt* st = insert_collective_.get();
    sqlite3_bind_int64(st, param(T::id), row.id);
    detail::bindNullable(st, param(T::rank), row.rank);
    detail::bindNullable(st, param(T::comm_sid), comm);
    sqlite3_bind_int64(st, param(T::seq), row.seq);
    detail::bindNullable(st, param(T::op_sid), op);
    detail::bindNullable(st, param(T::library_sid), library);
    sqlite3_bind_int64(st, param(T::bytes), row.bytes);
    sqlite3_bind_int64(st, param(T::count), row.count);
    detail::bindNullable(st, param(T::dtype_sid), dtype);
    detail::bindNullable(st, param(T::reduce_op_sid), reduce_op);
    detail::bindNullable(st, param(T::algorithm_sid), algorithm);
    sqlite3_bind_int64(st, param(T::start_ns), row.start_ns);
    detail::bindNullable(st, param(T::end_ns), row.end_ns);
    detail::bindNullable(st, param(T::root), row.root);
    sqlite3_bind_int64(st, param(T::tid), row.tid);
    sqlite3_bind_int64(st, param(T::status), row.status);
    return stepDone(st, "cannot store a collective row");
  });
}

bool SqliteRankWriter::addTransfer(const TransferRow& row) {
  return guarded("addTransfer", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addTransfer() outside begin()/commit()");
    int64_t side, phase;
    if (!intern(row.side, &side_, &side) || !intern(row.phase, &phase_, &phase)) return false;
    const int64_t id = row.id != 0 ? row.id : next_transfer_id_;
    // The recording rank: ours once known, else implied by the side.
    int64_t recorder = rank_;
    if (recorder < 0) {
      recorder = row.side == "send" ? row.src_rank : row.side == "recv" ? row.dst_rank : kNone;
    }
    using T = TransferTable;
    sqlite3_stmt* st = insert_transfer_.get();
    sqlite3_bind_int64(st, param(T::id), id);
    detail::bindNullable(st, param(T::rank), recorder < 0 ? kNone : recorder);
    detail::bindNullable(st, param(T::collective_id), row.collective_id);
    detail::bindNullable(st, param(T::src_rank), row.src_rank);
    detail::bindNullable(st, param(T::dst_rank), row.dst_rank);
    sqlite3_bind_int64(st, param(T::bytes), row.bytes);
    sqlite3_bind_int64(st, param(T::start_ns), row.start_ns);
    detail::bindNullable(st, param(T::end_ns), row.end_ns);
    detail::bindNullable(st, param(T::side_sid), side);
    detail::bindNullable(st, param(T::phase_sid), phase);
    detail::bindNullable(st, param(T::step), row.step);
    detail::bindNullable(st, param(T::chunk), row.chunk);
    detail::bindNullable(st, param(T::slot), row.slot);
    detail::bindNullable(st, param(T::channel), row.channel);
    if (!stepDone(st, "cannot store a transfer row")) return false;
    if (id >= next_transfer_id_) next_transfer_id_ = id + 1;
    return true;
  });
}

bool SqliteRankWriter::addCollectiveGpu(const CollectiveGpuRow& row) {
  return guarded("addCollectiveGpu", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addCollectiveGpu() outside begin()/commit()");
    if (row.collective_id < 0) return misuse("addCollectiveGpu(): no collective_id");
    int64_t algorithm, protocol;
    if (!intern(row.algorithm, &gpu_algorithm_, &algorithm) || !intern(row.protocol, &protocol_, &protocol))
      return false;
    using T = CollectiveGpuTable;
    sqlite3_stmt* st = upsert_collective_gpu_.get();
    sqlite3_bind_int64(st, param(T::collective_id), row.collective_id);
    detail::bindNullable(st, param(T::gpu_start_ns), row.gpu_start_ns);
    detail::bindNullable(st, param(T::gpu_end_ns), row.gpu_end_ns);
    detail::bindNullable(st, param(T::algorithm_sid), algorithm);
    detail::bindNullable(st, param(T::protocol_sid), protocol);
    detail::bindNullable(st, param(T::channels), row.channels);
    detail::bindNullable(st, param(T::group_id), row.group_id);
    // 0 is a real stream (the legacy default one).
    detail::bindNullable(st, param(T::stream), row.stream);
    detail::bindNullable(st, param(T::device), row.device);
    return stepDone(st, "cannot store a collective_gpu row");
  });
}

bool SqliteRankWriter::addGpuActivity(const GpuActivityRow& row) {
  return guarded("addGpuActivity", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addGpuActivity() outside begin()/commit()");
    int64_t kind, name, copy_kind;
    if (!intern(row.kind, &activity_kind_, &kind) || !intern(row.name, &activity_name_, &name) ||
        !intern(row.copy_kind, &copy_kind_, &copy_kind)) {
      return false;
    }
    const int64_t id = row.id != 0 ? row.id : next_activity_id_;
    using T = GpuActivityTable;
    sqlite3_stmt* st = insert_gpu_activity_.get();
    sqlite3_bind_int64(st, param(T::id), id);
    detail::bindNullable(st, param(T::rank), rank_ < 0 ? kNone : rank_);
    detail::bindNullable(st, param(T::kind_sid), kind);
    detail::bindNullable(st, param(T::name_sid), name);
    sqlite3_bind_int64(st, param(T::start_ns), row.start_ns);
    detail::bindNullable(st, param(T::end_ns), row.end_ns);
    detail::bindNullable(st, param(T::device), row.device);
    detail::bindNullable(st, param(T::stream), row.stream);
    detail::bindNullable(st, param(T::bytes), row.bytes);
    detail::bindNullable(st, param(T::copy_kind_sid), copy_kind);
    detail::bindNullable(st, param(T::correlation_id), row.correlation_id);
    detail::bindNullable(st, param(T::collective_id), row.collective_id);
    if (!stepDone(st, "cannot store a gpu_activity row")) return false;
    if (id >= next_activity_id_) next_activity_id_ = id + 1;
    return true;
  });
}

bool SqliteRankWriter::addCommunicator(const CommunicatorRow& row) {
  return guarded("addCommunicator", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addCommunicator() outside begin()/commit()");
    if (row.comm.empty()) return misuse("addCommunicator(): no comm");
    int64_t comm, library, parent, end_state;
    if (!intern(row.comm, &comm_, &comm) || !intern(row.library, &comm_library_, &library) ||
        !intern(row.parent, &comm_parent_, &parent) || !intern(row.end_state, &end_state_, &end_state)) {
      return false;
    }
    using T = CommunicatorTable;
    sqlite3_stmt* st = upsert_communicator_.get();
    // NULL ranks would never conflict (NULLs are distinct in UNIQUE): -1 stands for "unknown" here.
    sqlite3_bind_int64(st, param(T::rank), rank_);
    sqlite3_bind_int64(st, param(T::comm_sid), comm);
    detail::bindNullable(st, param(T::library_sid), library);
    detail::bindNullable(st, param(T::comm_rank), row.comm_rank);
    detail::bindNullable(st, param(T::comm_size), row.comm_size);
    detail::bindNullable(st, param(T::parent_sid), parent);
    detail::bindNullable(st, param(T::created_ns), row.created_ns);
    detail::bindNullable(st, param(T::ended_ns), row.ended_ns);
    detail::bindNullable(st, param(T::end_state_sid), end_state);
    bindText(st, param(T::topology), row.topology);
    return stepDone(st, "cannot store a communicator row");
  });
}

bool SqliteRankWriter::addClockAnchor(const ClockAnchorRow& row) {
  return guarded("addClockAnchor", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addClockAnchor() outside begin()/commit()");
    using T = ClockAnchorTable;
    sqlite3_stmt* st = insert_anchor_.get();
    detail::bindNullable(st, param(T::rank), rank_ < 0 ? kNone : rank_);
    sqlite3_bind_int64(st, param(T::clock_ns), row.clock_ns);
    sqlite3_bind_int64(st, param(T::unix_ns), row.unix_ns);
    sqlite3_bind_int64(st, param(T::spread_ns), row.spread_ns);
    return stepDone(st, "cannot store a clock anchor");
  });
}

bool SqliteRankWriter::addStepMarker(const StepMarkerRow& row) {
  return guarded("addStepMarker", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addStepMarker() outside begin()/commit()");
    using T = StepMarkerTable;
    sqlite3_stmt* st = insert_marker_.get();
    detail::bindNullable(st, param(T::rank), rank_ < 0 ? kNone : rank_);
    sqlite3_bind_int64(st, param(T::step), row.step);
    sqlite3_bind_int64(st, param(T::start_ns), row.start_ns);
    return stepDone(st, "cannot store a step marker");
  });
}

bool SqliteRankWriter::addCpuSample(const CpuSampleRow& row) {
  return guarded("addCpuSample", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("addCpuSample() outside begin()/commit()");
    using T = detail::CpuSampleTable;
    sqlite3_stmt* st = insert_cpu_.get();
    detail::bindNullable(st, param(T::rank), rank_ < 0 ? kNone : rank_);
    sqlite3_bind_int64(st, param(T::t_ns), row.t_ns);
    sqlite3_bind_int64(st, param(T::cpu_ns), row.cpu_ns);
    sqlite3_bind_int64(st, param(T::voluntary), row.voluntary);
    sqlite3_bind_int64(st, param(T::involuntary), row.involuntary);
    detail::bindNullable(st, param(T::run_delay_ns), row.run_delay_ns);
    return stepDone(st, "cannot store a CPU sample");
  });
}

bool SqliteRankWriter::commit() {
  return guarded("commit", [&]() -> bool {
    if (failed_) return false;
    if (!in_batch_) return misuse("commit() without begin()");
    if (::getpid() != owner_pid_) return misuse("commit() in a forked child");
    if (!stepDone(commit_.get(), "cannot commit a batch")) return false;
    in_batch_ = false;
    return true;
  });
}

void SqliteRankWriter::closeQuietly() noexcept {
  if (closed_) return;
  closed_ = true;
  if (!db_) return;
  if (::getpid() != owner_pid_) {
    // Forked child: finalizing or closing would roll back, checkpoint or
    // unlock the parent's live database. Leak the handles instead.
    for (Stmt* st : {&begin_, &commit_, &rollback_, &insert_collective_, &insert_transfer_, &insert_string_,
                     &upsert_meta_, &delete_rank_, &insert_rank_, &upsert_collective_gpu_,
                     &insert_gpu_activity_, &upsert_communicator_, &insert_anchor_, &insert_marker_,
                     &insert_cpu_}) {
      (void)st->release();
    }
    (void)db_.release();
    return;
  }
  if (in_batch_ && rollback_) sqlite3_step(rollback_.get());
  in_batch_ = false;
  begin_.reset();
  commit_.reset();
  rollback_.reset();
  insert_collective_.reset();
  insert_transfer_.reset();
  insert_string_.reset();
  upsert_meta_.reset();
  delete_rank_.reset();
  insert_rank_.reset();
  upsert_collective_gpu_.reset();
  insert_gpu_activity_.reset();
  upsert_communicator_.reset();
  insert_anchor_.reset();
  insert_marker_.reset();
  insert_cpu_.reset();
  db_.reset();
}

bool SqliteRankWriter::close() {
  return guarded("close", [&]() -> bool {
    if (closed_) return !failed_;
    if (::getpid() != owner_pid_) {
      closeQuietly();  // leaks the parent's handles, touches nothing
      return misuse("close() in a forked child: the parent's file is left alone");
    }
    if (in_batch_ && !failed_) {
      // An open batch is dropped, as a kill would: only commit() makes rows durable.
      sqlite3_step(rollback_.get());
      sqlite3_reset(rollback_.get());
      in_batch_ = false;
    }
    if (!failed_ && db_) {
      // A cleanly closed rank file becomes one self-contained file (rollback
      // journal mode, WAL folded in), so it can be copied or read from a
      // read-only folder. If a reader holds it open the switch is refused
      // (SQLITE_BUSY); the file then simply stays in WAL mode, still valid.
      // No waiting at exit: a busy file just stays in WAL mode.
      sqlite3_busy_timeout(db_.get(), 0);
      sqlite3_exec(db_.get(), "PRAGMA wal_checkpoint(TRUNCATE);PRAGMA journal_mode=DELETE;", nullptr,
                   nullptr, nullptr);
    }
    closeQuietly();
    return !failed_;
  });
}

}  // namespace

std::unique_ptr<RankWriter> RankWriter::create(const std::string& path, std::string* error,
                                               bool fsync) {
  std::string scratch;
  std::string& err = error ? *error : scratch;
  bool created = false;
  try {
    // O_EXCL: two processes (or a rerun) can never share a rank file.
    // Private (0600) unless RINGSIDE_SHARE (privacy.h); SQLite gives the -wal and
    // -shm files it creates later the mode of this file.
    const mode_t mode = outputFileMode();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) {
      err = detail::oneLine(path + ": cannot create: " + std::strerror(errno));
      return nullptr;
    }
    (void)::fchmod(fd, mode);  // exactly that mode, whatever a stricter umask took away
    ::close(fd);
    created = true;
    // The file is new, so any -wal/-shm/-journal beside it belongs to some
    // earlier database of the same name: SQLite must not replay it into ours.
    for (const char* suffix : {"-wal", "-shm", "-journal"}) ::unlink((path + suffix).c_str());

    sqlite3* raw = nullptr;
    const int rc = sqlite3_open_v2(detail::fileUri(path, "").c_str(), &raw,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
    Db db(raw);
    if (rc != SQLITE_OK) {
      err = detail::oneLine(path + ": cannot open: " + detail::lastError(raw));
      db.reset();
      ::unlink(path.c_str());
      return nullptr;
    }
    auto writer = std::make_unique<SqliteRankWriter>(path, std::move(db));
    if (!writer->init(&err, fsync)) {
      writer.reset();
      for (const char* suffix : {"", "-wal", "-shm"}) ::unlink((path + suffix).c_str());
      return nullptr;
    }
    return writer;
  } catch (...) {
    err = detail::oneLine(path + ": cannot create: out of memory");
    if (created) ::unlink(path.c_str());
    return nullptr;
  }
}

}  // namespace ringside::storage
