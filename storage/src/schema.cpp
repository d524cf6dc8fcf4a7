// storage/src/schema.cpp — trace schema version 2 (see docs/schema.md).
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
  slot          INTEGER,              -- the library's message tag/slot; NULL if unknown
  channel       INTEGER               -- NCCL channel that carried it; NULL if none/unknown (v2)
);

-- What a GPU library (NCCL) adds to a collective_data row (v2). One row per
-- collective at most; filled from NCCL's profiler events and CUPTI.
CREATE TABLE collective_gpu_data(
  collective_id INTEGER PRIMARY KEY,  -- collective_data.id
  gpu_start_ns  INTEGER,              -- first GPU work of the call began, ns on the rank's clock; NULL if unknown
  gpu_end_ns    INTEGER,              -- last GPU work of the call ended, ns on the rank's clock
  algorithm_sid INTEGER,              -- string: NCCL's algorithm (ring, tree, collnet_direct, nvls, pat, ...)
  protocol_sid  INTEGER,              -- string: LL, LL128, Simple
  channels      INTEGER,              -- channels the call used
  group_id      INTEGER,              -- calls of one ncclGroupStart/End share it (per rank); NULL outside groups
  stream        INTEGER,              -- CUDA stream handle the call was enqueued on
  device        INTEGER               -- CUDA device ordinal
);

-- GPU work and GPU-related host events from CUPTI, and NVTX ranges (v2).
CREATE TABLE gpu_activity_data(
  id             INTEGER PRIMARY KEY, -- unique per file (renumbered on merge)
  rank           INTEGER,             -- recording rank
  kind_sid       INTEGER,             -- string: kernel, memcpy, memset, sync, nvtx
  name_sid       INTEGER,             -- string: kernel name, NVTX text, sync kind; NULL if none
  start_ns       INTEGER NOT NULL,    -- ns on the rank's clock (converted from the GPU timer)
  end_ns         INTEGER,             -- ns on the rank's clock; NULL if unknown
  device         INTEGER,             -- CUDA device ordinal
  stream         INTEGER,             -- CUPTI stream id
  bytes          INTEGER,             -- memcpy/memset bytes; NULL otherwise
  copy_kind_sid  INTEGER,             -- string: HtoD, DtoH, DtoD, HtoH, PtoP (memcpy); NULL otherwise
  correlation_id INTEGER,             -- CUPTI correlation id of the launching API call
  collective_id  INTEGER              -- collective_data.id of the NCCL call that launched it; NULL if none
);

-- Communicators as created on each rank (v2).
CREATE TABLE communicator_data(
  rank         INTEGER,               -- recording rank
  comm_sid     INTEGER NOT NULL,      -- string: communicator id, as collective_data.comm_sid
  library_sid  INTEGER,               -- string: gloo, nccl
  comm_rank    INTEGER,               -- this rank's rank in the communicator
  comm_size    INTEGER,               -- ranks in the communicator
  parent_sid   INTEGER,               -- string: the communicator it was split from; NULL if none
  created_ns   INTEGER,               -- creation returned, ns on the rank's clock
  ended_ns     INTEGER,               -- destroy/abort returned; NULL while alive
  end_state_sid INTEGER,              -- string: destroyed, aborted; NULL while alive
  topology     TEXT,                  -- the library's rings/trees, one per line ("ring 0: 0 1 2 3"); NULL if unknown
  UNIQUE(rank, comm_sid)
);

-- Key/value facts about the recording (tool_version, end_state, counters, ...).
-- A merged trace stores each rank's keys as rank.<r>.<key> plus merge keys.
CREATE TABLE meta(
  key   TEXT PRIMARY KEY,  -- see docs/schema.md for the keys
  value TEXT               -- always text; numbers in decimal
);

-- collective_data with its strings resolved: what users and scripts query.
-- algorithm is the caller's choice, else the GPU library's (collective_gpu_data).
CREATE VIEW collective AS
SELECT c.id, c.rank, s_comm.value AS comm, c.seq, s_op.value AS op, s_lib.value AS library,
       c.bytes, c.count, s_dtype.value AS dtype, s_red.value AS reduce_op,
       coalesce(s_alg.value, s_galg.value) AS algorithm, c.start_ns, c.end_ns, c.root, c.tid, c.status,
       g.gpu_start_ns, g.gpu_end_ns, s_proto.value AS protocol, g.channels, g.group_id, g.stream,
       g.device
FROM collective_data AS c
LEFT JOIN collective_gpu_data AS g ON g.collective_id = c.id
LEFT JOIN string AS s_galg  ON s_galg.id  = g.algorithm_sid
LEFT JOIN string AS s_proto ON s_proto.id = g.protocol_sid
LEFT JOIN string AS s_comm  ON s_comm.id  = c.comm_sid
LEFT JOIN string AS s_op    ON s_op.id    = c.op_sid
LEFT JOIN string AS s_lib   ON s_lib.id   = c.library_sid
LEFT JOIN string AS s_dtype ON s_dtype.id = c.dtype_sid
LEFT JOIN string AS s_red   ON s_red.id   = c.reduce_op_sid
LEFT JOIN string AS s_alg   ON s_alg.id   = c.algorithm_sid;

-- transfer_data with its strings resolved.
CREATE VIEW transfer AS
SELECT t.id, t.rank, t.collective_id, t.src_rank, t.dst_rank, t.bytes, t.start_ns, t.end_ns,
       s_side.value AS side, s_phase.value AS phase, t.step, t.chunk, t.slot, t.channel
FROM transfer_data AS t
LEFT JOIN string AS s_side  ON s_side.id  = t.side_sid
LEFT JOIN string AS s_phase ON s_phase.id = t.phase_sid;

-- gpu_activity_data with its strings resolved.
CREATE VIEW gpu_activity AS
SELECT a.id, a.rank, s_kind.value AS kind, s_name.value AS name, a.start_ns, a.end_ns, a.device,
       a.stream, a.bytes, s_copy.value AS copy_kind, a.correlation_id, a.collective_id
FROM gpu_activity_data AS a
LEFT JOIN string AS s_kind ON s_kind.id = a.kind_sid
LEFT JOIN string AS s_name ON s_name.id = a.name_sid
LEFT JOIN string AS s_copy ON s_copy.id = a.copy_kind_sid;

-- communicator_data with its strings resolved.
CREATE VIEW communicator AS
SELECT m.rank, s_comm.value AS comm, s_lib.value AS library, m.comm_rank, m.comm_size,
       s_parent.value AS parent, m.created_ns, m.ended_ns, s_end.value AS end_state, m.topology
FROM communicator_data AS m
LEFT JOIN string AS s_comm   ON s_comm.id   = m.comm_sid
LEFT JOIN string AS s_lib    ON s_lib.id    = m.library_sid
LEFT JOIN string AS s_parent ON s_parent.id = m.parent_sid
LEFT JOIN string AS s_end    ON s_end.id    = m.end_state_sid;
)sql";

const char* const kMergedIndexSql = R"sql(
CREATE INDEX collective_by_rank_time ON collective_data(rank, start_ns);  -- per-rank timelines
CREATE INDEX collective_by_comm_seq  ON collective_data(comm_sid, seq);   -- one call across ranks
CREATE INDEX transfer_by_collective  ON transfer_data(collective_id);     -- messages of a call
CREATE INDEX transfer_by_link        ON transfer_data(src_rank, dst_rank); -- per-link traffic
CREATE INDEX transfer_by_time        ON transfer_data(start_ns);          -- time-ordered reads
CREATE INDEX gpu_activity_by_rank_time ON gpu_activity_data(rank, start_ns); -- per-rank GPU timelines
CREATE INDEX gpu_activity_by_collective ON gpu_activity_data(collective_id); -- kernels of a call
)sql";

bool createSchema(sqlite3* db, std::string* error) {
  if (!exec(db, kSchemaSql, error)) return false;
  const std::string stamp = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                            ";PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  return exec(db, stamp.c_str(), error);
}

}  // namespace ringside::storage::detail
