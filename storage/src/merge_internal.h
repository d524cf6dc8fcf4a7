// storage/src/merge_internal.h — the merger's parts, private to storage/ (merge.h is the
// contract). One merge is a Merger; its steps live in one file each:
//   merge.cpp             the driver: probe every input, open the output, copy each input, meta,
//                         publish (Merger::run), and the inputs' order and overlap checks
//   merge_probe.cpp       pass 1 on one file (probe): rank row(s), end state, row counts, a
//                         merged input's meta
//   merge_input_copy.cpp  pass 2 on one file (Merger::InputCopy): attach, strings, collective
//                         ids, rank and meta, the tables (TableCopies says how each is copied)
//   merge_output.cpp      the output's life: the temporary file, its pragmas and schema, the
//                         merge meta and indexes, publishing; stale temporaries of killed merges
//   rank_file_status.cpp  what `record` and `merge` ask of a rank file before merging it
#pragma once

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "columns.h"
#include "ringside/fileio/output_file.h"
#include "ringside/storage/merge.h"
#include "sqlite_util.h"

namespace ringside::storage::merging {

using detail::Db;
using detail::param;
using detail::Stmt;

// Ranks beyond this are treated as damage, not as a world to enumerate.
inline constexpr int64_t kMaxPlausibleWorld = 1 << 20;

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
  std::vector<RankInfo> rank_infos;  // its rank rows, for MergeOptions::on_copy_plan
  // A merged trace (MergeOptions::merged_inputs): its ranks (sorted; one per rank row, so a rank
  // of several files is there several times), those cut off,
  // and the inputs its own merge skipped, as (basename, why). `rank` is its lowest rank.
  bool merged = false;
  std::vector<int> ranks;
  std::vector<int> cut_off;
  std::vector<std::pair<std::string, std::string>> skipped;
};

// A text column as a string ("" for NULL).
std::string textOf(sqlite3_stmt* st, int index);
// "1,2,5-999999" from sorted ranks (joinInts) and back (parseInts, ignoring anything else).
std::string joinInts(const std::vector<int>& v);
std::vector<int> parseInts(const std::string& text);
// Why `path` was skipped, without the path the message starts with (meta names it already).
std::string skipReason(const std::string& path, const std::string& why);
// Pass 1 on one file: returns false with *why (one line, naming the file).
bool probe(const std::string& path, bool accept_merged, Input* in, std::string* why);
// A rank file killed before its first commit has no rank row: its name (rank-HOST-PID-START.sqlite)
// still says whose it is, and that process's flight ring knew its rank (merge_flight.cpp).
void rankFromRing(const std::string& path, Input* in);
// Temporary files beside `output` that a killed merge left behind, removed (merge_output.cpp).
std::vector<std::string> removeStaleTemporaries(const std::string& output);

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
  // The flight recorder's tables (v5): rows a rank file or a merged input already holds.
  const TableCopy flight_dump{detail::FlightDumpTable::kDef,
                              {{detail::FlightDumpTable::rank, Fill::kFileRankIfUnknown}}};
  const TableCopy flight_call{detail::FlightCallTable::kDef,
                              {{detail::FlightCallTable::rank, Fill::kFileRankIfUnknown}}};
  const TableCopy flight_message{detail::FlightMessageTable::kDef,
                                 {{detail::FlightMessageTable::rank, Fill::kFileRankIfUnknown}}};
  const TableCopy rank_exit{detail::RankExitTable::kDef,
                            {{detail::RankExitTable::rank, Fill::kFileRankIfUnknown}}};
  // The CPU samples (v6).
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
  // The flight ring beside rank file `in` into the flight tables (docs/flight-recorder.md). A ring
  // that cannot be read is a warning: the rank's calls are in the trace all the same.
  bool copyRing(const Input& in);
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


}  // namespace ringside::storage::merging
