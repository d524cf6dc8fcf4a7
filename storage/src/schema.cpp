// storage/src/schema.cpp — trace schema version 1 (see docs/schema.md).
//
// Every column is declared once here with its meaning and unit. SQLite keeps
// these comments in sqlite_schema, so `.schema` on a trace shows them too.
// Changing anything a reader depends on means bumping kSchemaVersion.
#include "schema.h"

#include <string>

#include "ringside/storage/records.h"
#include "sqlite_util.h"

namespace ringside::storage::detail {

const char* const kSchemaSql = R"sql(
-- Interned short strings (op names, dtypes, communicator ids, ...). Data
-- tables refer to them by id through *_sid columns; the views below join them.
CREATE TABLE string(
  id    INTEGER PRIMARY KEY,  -- string id (sid), unique within the file
  value TEXT NOT NULL UNIQUE  -- the string itself; never empty (empty is stored as a NULL sid)
);

-- The traced process: one row in a rank file, one per input file in a merged trace.
CREATE TABLE rank(
  rank            INTEGER,  -- rank in the world communicator; NULL if never known
  world_size      INTEGER,  -- ranks in the world communicator; NULL if never known
  local_rank      INTEGER,  -- rank among the processes of its host; NULL if unknown
  host            TEXT,     -- hostname
  pid             INTEGER,  -- process id on host
  launcher        TEXT,     -- torchrun, ompi, slurm, pmi, ringside, unknown
  clock           TEXT,     -- clock of every *_ns column of this rank (CLOCK_MONOTONIC)
  start_ns        INTEGER,  -- trace start on `clock`, ns
  start_unix_ns   INTEGER,  -- the same instant on CLOCK_REALTIME, ns since 1970 (aligns hosts)
  command_line    TEXT,     -- argv joined by spaces
  identity_source TEXT,     -- where rank/world_size came from: gloo, env, none
  file            TEXT      -- basename of the rank file the row came from
);

-- One call of a collective (or point-to-point) operation on one rank.
CREATE TABLE collective_data(
  id            INTEGER PRIMARY KEY,  -- unique per file; renumbered across ranks on merge
  rank          INTEGER,              -- calling rank (world); NULL if unknown
  comm_sid      INTEGER,              -- string: communicator id, equal on all its ranks
  seq           INTEGER NOT NULL,     -- call number within comm, from 0; matches a call across ranks
  op_sid        INTEGER,              -- string: allreduce, broadcast, allgather, ... (lower case)
  library_sid   INTEGER,              -- string: gloo, nccl, ringside-ring, ringside-tree
  bytes         INTEGER NOT NULL,     -- payload bytes of this rank's input, bytes
  count         INTEGER NOT NULL,     -- payload elements
  dtype_sid     INTEGER,              -- string: f32, f64, bf16, ...; NULL if unknown
  reduce_op_sid INTEGER,              -- string: sum, max, ...; NULL if not a reduction or unknown
  algorithm_sid INTEGER,              -- string: ring, bcube, ...; NULL when the library chose
  start_ns      INTEGER NOT NULL,     -- call entered, ns on the rank's clock
  end_ns        INTEGER,              -- call returned, ns on the rank's clock; NULL if it never returned
  root          INTEGER,              -- root rank of rooted ops; NULL otherwise
  tid           INTEGER NOT NULL,     -- OS thread id of the caller
  status        INTEGER NOT NULL      -- 0 ok, 1 the call threw/failed
);

-- One message on a directed link src_rank -> dst_rank, as seen by one side.
CREATE TABLE transfer_data(
  id            INTEGER PRIMARY KEY,  -- unique per file (renumbered on merge)
  rank          INTEGER,              -- recording rank (src_rank for send, dst_rank for recv)
  collective_id INTEGER,              -- collective_data.id of the enclosing call; NULL if none
  src_rank      INTEGER,              -- sending rank; NULL if unknown
  dst_rank      INTEGER,              -- receiving rank; NULL if unknown
  bytes         INTEGER NOT NULL,     -- message size, bytes
  start_ns      INTEGER NOT NULL,     -- send/recv posted, ns on the recording rank's clock
  end_ns        INTEGER,              -- last byte written/read, ns; NULL if never completed
  side_sid      INTEGER,              -- string: 'send' or 'recv'
  phase_sid     INTEGER,              -- string: reduce-scatter, all-gather, reduce, broadcast; NULL if unknown
  step          INTEGER,              -- algorithm step, from 0; NULL if unknown
  chunk         INTEGER,              -- chunk within the step, from 0; NULL if unknown
  slot          INTEGER               -- the library's message tag/slot; NULL if unknown
);

-- Key/value facts about the recording (tool_version, end_state, counters, ...).
-- A merged trace stores each rank's keys as rank.<r>.<key> plus merge keys.
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,  -- see docs/schema.md for the keys
  value TEXT               -- always text; numbers in decimal
);

-- collective_data with its strings resolved: what users and scripts query.
CREATE VIEW collective AS
SELECT c.id, c.rank, s_comm.value AS comm, c.seq, s_op.value AS op, s_lib.value AS library,
       c.bytes, c.count, s_dtype.value AS dtype, s_red.value AS reduce_op,
       s_alg.value AS algorithm, c.start_ns, c.end_ns, c.root, c.tid, c.status
FROM collective_data AS c
LEFT JOIN string AS s_comm  ON s_comm.id  = c.comm_sid
LEFT JOIN string AS s_op    ON s_op.id    = c.op_sid
LEFT JOIN string AS s_lib   ON s_lib.id   = c.library_sid
LEFT JOIN string AS s_dtype ON s_dtype.id = c.dtype_sid
LEFT JOIN string AS s_red   ON s_red.id   = c.reduce_op_sid
LEFT JOIN string AS s_alg   ON s_alg.id   = c.algorithm_sid;

-- transfer_data with its strings resolved.
CREATE VIEW transfer AS
SELECT t.id, t.rank, t.collective_id, t.src_rank, t.dst_rank, t.bytes, t.start_ns, t.end_ns,
       s_side.value AS side, s_phase.value AS phase, t.step, t.chunk, t.slot
FROM transfer_data AS t
LEFT JOIN string AS s_side  ON s_side.id  = t.side_sid
LEFT JOIN string AS s_phase ON s_phase.id = t.phase_sid;
)sql";

const char* const kMergedIndexSql = R"sql(
CREATE INDEX collective_by_rank_time ON collective_data(rank, start_ns);  -- per-rank timelines
CREATE INDEX collective_by_comm_seq  ON collective_data(comm_sid, seq);   -- one call across ranks
CREATE INDEX transfer_by_collective  ON transfer_data(collective_id);     -- messages of a call
CREATE INDEX transfer_by_link        ON transfer_data(src_rank, dst_rank); -- per-link traffic
CREATE INDEX transfer_by_time        ON transfer_data(start_ns);          -- time-ordered reads
)sql";

bool createSchema(sqlite3* db, std::string* error) {
  if (!exec(db, kSchemaSql, error)) return false;
  const std::string stamp = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                            ";PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  return exec(db, stamp.c_str(), error);
}

}  // namespace ringside::storage::detail
