// storage/rank_writer.h — writes one rank's trace file (SQLite, WAL).
//
// Used by the collector's writer thread inside the traced process, and by
// `ringside bench`. Threads: one RankWriter is used by one thread at a time.
// Errors: no exceptions; every call returns false on failure and error()
// says why. After a failure the object stays safe to call (calls keep
// failing) so the traced job is never disturbed.
// Durability: rows become durable at commit(); a process killed between
// commits loses only the open batch (WAL recovery keeps every commit).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "ringside/storage/clock_model.h"
#include "ringside/storage/records.h"

namespace ringside::storage {

class RankWriter {
 public:
  // Creates `path` exclusively (fails if it exists), sets WAL and the schema.
  // Returns nullptr and fills *error on failure. `fsync` false (synthetic traces only, e.g.
  // tools/trace_gen --no-fsync): SQLite never fsyncs the file, so a power loss may damage it; a
  // recorded rank file always keeps the default.
  static std::unique_ptr<RankWriter> create(const std::string& path, std::string* error,
                                            bool fsync = true);

  virtual ~RankWriter() = default;
  RankWriter(const RankWriter&) = delete;
  RankWriter& operator=(const RankWriter&) = delete;

  // Stores (or replaces) the single rank row of this file.
  virtual bool setRank(const RankInfo& info) = 0;
  // Stores (or replaces) one meta key. Outside a batch it commits at once.
  virtual bool setMeta(std::string_view key, std::string_view value) = 0;

  // Batches: begin(), any number of add*(), commit(). Rows are only durable
  // after commit(). add*() outside a batch fail.
  virtual bool begin() = 0;
  virtual bool addCollective(const CollectiveRow& row) = 0;
  virtual bool addTransfer(const TransferRow& row) = 0;
  // Upserts keyed by collective_id (see CollectiveGpuRow).
  virtual bool addCollectiveGpu(const CollectiveGpuRow& row) = 0;
  virtual bool addGpuActivity(const GpuActivityRow& row) = 0;
  // Upsert keyed by comm: a later row (e.g. at destroy) fills what is known then.
  virtual bool addCommunicator(const CommunicatorRow& row) = 0;
  // One wall-clock anchor (schema v3).
  virtual bool addClockAnchor(const ClockAnchorRow& row) = 0;
  // One explicit step marker (schema v4).
  virtual bool addStepMarker(const StepMarkerRow& row) = 0;
  // One sample of the process's CPU use (schema v5).
  virtual bool addCpuSample(const CpuSampleRow& row) = 0;
  virtual bool commit() = 0;

  // Closes the database (checkpointing the WAL). Idempotent.
  virtual bool close() = 0;

  virtual const std::string& error() const = 0;

 protected:
  RankWriter() = default;
};

}  // namespace ringside::storage
