// storage/trace_reader.h — the one way to read a trace (merged or per rank).
//
// Shared by the analyzer, the reports, the viewer and `ringside merge`.
// Opens read-only (never needs write access), in SQLite's defensive mode with
// trusted_schema off and no extensions, runs PRAGMA quick_check first (of all but
// transfer_data where TraceOpenOptions::transfers_checked_by_reading says so) and
// refuses files that are not ringside traces or have a newer schema version.
// All failures are reported as one line in *error; nothing throws.
// Reading is streamed: forEach* visit rows without loading a table in memory.
// Threads: one TraceReader per thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringside/storage/clock_model.h"
#include "ringside/storage/records.h"

namespace ringside::storage {

struct TraceOpenOptions {
  // PRAGMA quick_check reads the whole file (about a quarter of a full load's instructions).
  // Turn it off only for a reader whose rows are used after another reader of the same file
  // passed the check (the viewer reads the calls while its analysis thread's reader checks).
  bool quick_check = true;
  // With quick_check: at open, check the schema and every table but transfer_data (milliseconds;
  // the whole file's check is seconds on a large trace, most of it transfer_data and its two
  // indexes), and check transfer_data as it is read: forEachTransfer's storage-order read fails
  // with one "corrupt trace" line on damage SQLite meets, on ids out of order and on rows the
  // second read does not give back as the first found them; every other read of transfer_data
  // checks it (and its indexes) whole first. For a reader whose results are used only after a
  // forEachTransfer read to the end returned true (report, diff, simulate); docs/schema.md,
  // "Reading safely", says what this leaves unchecked.
  bool transfers_checked_by_reading = false;
  // Times as recorded, each on its rank's own clock, instead of mapped through the trace's clock
  // model onto one time line (storage/clock_model.h). For align/, which fits that model.
  bool raw_times = false;
};

class TraceReader {
 public:
  static std::unique_ptr<TraceReader> open(const std::string& path, std::string* error);
  static std::unique_ptr<TraceReader> open(const std::string& path, const TraceOpenOptions& options,
                                           std::string* error);

  virtual ~TraceReader() = default;
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  virtual int schemaVersion() const = 0;
  virtual std::vector<RankInfo> ranks() = 0;
  virtual std::map<std::string, std::string> meta() = 0;
  virtual int64_t collectiveCount() = 0;
  virtual int64_t transferCount() = 0;
  virtual int64_t gpuActivityCount() = 0;  // 0 for version-1 files

  // The trace's clock model (empty: identity) and whether this reader applies it: every *_ns
  // value the forEach* visit is then on the reference time line, and orders ("ordered by
  // start_ns") are orders of aligned times.
  virtual const ClockModel& clockModel() = 0;
  virtual bool timesAligned() const = 0;
  // Wall-clock anchors (schema v3; nothing for older files), ordered by (rank, clock_ns); raw
  // times, never aligned.
  virtual bool forEachClockAnchor(const std::function<bool(int32_t rank, const ClockAnchorRow&)>& fn,
                                  std::string* error) = 0;

  // Visit rows ordered by (rank, start_ns). Return false from `fn` to stop.
  // string_view fields point into storage valid only during the callback.
  // Returns false (and fills *error) on a read error.
  virtual bool forEachCollective(const std::function<bool(const CollectiveRow&)>& fn,
                                 std::string* error) = 0;
  // As forEachCollective, but reads only id, rank, comm, seq, op, start_ns, end_ns and status
  // (the other fields keep their defaults): about half the work per row, for the viewer's
  // timeline of the calls. (A reader that cannot narrow its reads may visit whole rows.)
  virtual bool forEachCollectiveTiming(const std::function<bool(const CollectiveRow&)>& fn,
                                       std::string* error) {
    return forEachCollective(fn, error);
  }
  // As forEachCollective, but reads only id, rank, comm, seq, op, library, bytes, start_ns and
  // end_ns: what the run summary totals calls, ranks and ops by.
  virtual bool forEachCollectiveTotalsFields(const std::function<bool(const CollectiveRow&)>& fn,
                                             std::string* error) {
    return forEachCollective(fn, error);
  }
  // Visit rows ordered by (start_ns, id). SQLite files are read in storage order: one pass over
  // id and start_ns finds the stretches of rows already in that order (a merged trace: a few per
  // rank), which are read side by side, a batch at a time, and merged in memory; a table in no
  // useful order (more than 131,072 lanes of stretches) is read through the start_ns index
  // instead. The batches are read ahead on a thread of the reader's own, through a second
  // connection to the file, while `fn` runs on the caller's thread (which may use this reader);
  // memory stays bounded whatever the number of lanes (ranks).
  virtual bool forEachTransfer(const std::function<bool(const TransferRow&)>& fn,
                               std::string* error) = 0;
  // Visit every row in no particular order (storage order: a plain scan, several times faster on
  // a large merged trace than the time order), times mapped as forEachTransfer maps them. `rank`
  // is the recording rank.
  virtual bool forEachTransferUnordered(
      const std::function<bool(int32_t rank, const TransferRow&)>& fn, std::string* error) = 0;
  // forEachTransferUnordered with only the fields that pair a message's two sides filled:
  // src_rank, dst_rank, bytes, start_ns, end_ns, side and slot (the others left as a default
  // TransferRow has them). Half the columns: for align/'s clock fit, which reads every row.
  virtual bool forEachMessageSide(const std::function<bool(int32_t rank, const TransferRow&)>& fn,
                                  std::string* error) = 0;
  // forEachTransferUnordered with only the fields a link's and a rank's totals need filled: id,
  // collective_id, src_rank, dst_rank, bytes, start_ns, end_ns, side, chunk and slot (phase, step
  // and channel left as a default TransferRow has them). For the run summary, which reads every
  // row once; a reader that cannot narrow its reads visits whole rows.
  virtual bool forEachTransferTotalsFields(
      const std::function<bool(int32_t rank, const TransferRow&)>& fn, std::string* error) {
    return forEachTransferUnordered(fn, error);
  }
  // Schema v2 tables (a version-1 file visits nothing and succeeds).
  // Ordered by collective_id.
  virtual bool forEachCollectiveGpu(const std::function<bool(const CollectiveGpuRow&)>& fn,
                                    std::string* error) = 0;
  // Ordered by (rank, start_ns); `rank` is the recording rank.
  virtual bool forEachGpuActivity(const std::function<bool(int32_t rank, const GpuActivityRow&)>& fn,
                                  std::string* error) = 0;
  // Ordered by (rank, created_ns).
  virtual bool forEachCommunicator(const std::function<bool(int32_t rank, const CommunicatorRow&)>& fn,
                                   std::string* error) = 0;
  // Schema v4 tables (older files visit nothing and succeed). Step markers (the job called
  // ringside_step()), ordered by (rank, start_ns), times mapped as the calls' are; `rank` is the
  // recording rank.
  virtual bool forEachStepMarker(const std::function<bool(int32_t rank, const StepMarkerRow&)>& fn,
                                 std::string* error) = 0;
  // The steps `ringside merge` detected (table step), ordered by step. Whether merge looked at
  // all is the meta key steps_detected (docs/schema.md); without it, the table is empty.
  virtual bool forEachStep(const std::function<bool(const StepRow&)>& fn, std::string* error) = 0;
  // Schema v5 tables (older files, and readers without them, visit nothing and succeed): the
  // flight recorder's dumps ordered by (rank, dump), their calls by (rank, dump, comm, seq) and
  // messages by (rank, dump, posted_ns), times mapped as the calls' are; how ranks ended, by rank.
  virtual bool forEachFlightDump(const std::function<bool(const FlightDumpRow&)>& fn,
                                 std::string* error) {
    (void)fn, (void)error;
    return true;
  }
  virtual bool forEachFlightCall(const std::function<bool(const FlightCallRow&)>& fn,
                                 std::string* error) {
    (void)fn, (void)error;
    return true;
  }
  virtual bool forEachFlightMessage(const std::function<bool(const FlightMessageRow&)>& fn,
                                    std::string* error) {
    (void)fn, (void)error;
    return true;
  }
  virtual bool forEachRankExit(const std::function<bool(const RankExitRow&)>& fn,
                               std::string* error) {
    (void)fn, (void)error;
    return true;
  }
  // Schema v6: the ranks' CPU samples, ordered by (rank, t_ns), times mapped as the calls' are
  // (older files visit nothing and succeed).
  virtual bool forEachCpuSample(const std::function<bool(int32_t rank, const CpuSampleRow&)>& fn,
                                std::string* error) = 0;

 protected:
  TraceReader() = default;
};

}  // namespace ringside::storage
