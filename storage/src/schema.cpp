// storage/src/schema.cpp — trace schema version 5 (see docs/schema.md).
//
// The tables come from the column lists of columns.h (each column declared once there, with its
// meaning and unit); the views and the merged trace's indexes are written here. Changing anything
// a reader depends on means bumping kSchemaVersion.
#include "schema.h"

#include <string>

#include "columns.h"
#include "ringside/storage/records.h"
#include "sqlite_util.h"

namespace ringside::storage::detail {

// The views, created after the tables they read. Every *_ns column of the views is the time as
// recorded; start_aligned_ns and end_aligned_ns are the same instants on the trace's one time line
// (ALIGNED(alias, column): the clock model, docs/clock-alignment.md; equal to the recorded times
// when the trace has no model or one clock).
const char* const kViewSql = R"sql(
-- collective_data with its strings resolved: what users and scripts query.
-- algorithm is the caller's choice, else the GPU library's (collective_gpu_data).
CREATE VIEW collective AS
SELECT c.id, c.rank, s_comm.value AS comm, c.seq, s_op.value AS op, s_lib.value AS library,
       c.bytes, c.count, s_dtype.value AS dtype, s_red.value AS reduce_op,
       coalesce(s_alg.value, s_galg.value) AS algorithm, c.start_ns, c.end_ns, c.root, c.tid, c.status,
       g.gpu_start_ns, g.gpu_end_ns, s_proto.value AS protocol, g.channels, g.group_id, g.stream,
       g.device, ALIGNED(c, start_ns) AS start_aligned_ns, ALIGNED(c, end_ns) AS end_aligned_ns,
       ALIGNED_AT(c, g.gpu_start_ns) AS gpu_start_aligned_ns,
       ALIGNED_AT(c, g.gpu_end_ns) AS gpu_end_aligned_ns
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
       s_side.value AS side, s_phase.value AS phase, t.step, t.chunk, t.slot, t.channel,
       ALIGNED(t, start_ns) AS start_aligned_ns, ALIGNED(t, end_ns) AS end_aligned_ns
FROM transfer_data AS t
LEFT JOIN string AS s_side  ON s_side.id  = t.side_sid
LEFT JOIN string AS s_phase ON s_phase.id = t.phase_sid;

-- gpu_activity_data with its strings resolved.
CREATE VIEW gpu_activity AS
SELECT a.id, a.rank, s_kind.value AS kind, s_name.value AS name, a.start_ns, a.end_ns, a.device,
       a.stream, a.bytes, s_copy.value AS copy_kind, a.correlation_id, a.collective_id,
       ALIGNED(a, start_ns) AS start_aligned_ns, ALIGNED(a, end_ns) AS end_aligned_ns
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

// The merged trace's indexes in two groups. Rows are copied rank by rank, each rank's rows in id
// (recording) order: keys that follow that order (rank then time, the collective ids each input
// gets as one rising block) only append at the right edge of their B-tree, so these indexes are
// created before the copy and kept up as rows arrive (cheaper than a sort of every row at the
// end). The others would be written all over the tree by every rank: they are built once, after
// the last row (kMergedIndexSql).
const char* const kMergedInOrderIndexSql = R"sql(
CREATE INDEX collective_by_rank_time ON collective_data(rank, start_ns);  -- per-rank timelines
CREATE INDEX transfer_by_rank_time   ON transfer_data(rank, start_ns);    -- aligned reads (v3)
CREATE INDEX gpu_activity_by_rank_time ON gpu_activity_data(rank, start_ns); -- per-rank GPU timelines
CREATE INDEX gpu_activity_by_collective ON gpu_activity_data(collective_id); -- kernels of a call
CREATE INDEX flight_call_by_comm_seq ON flight_call(comm, seq);         -- one call across ranks (v5)
)sql";
const char* const kMergedIndexSql = R"sql(
CREATE INDEX collective_by_comm_seq  ON collective_data(comm_sid, seq);   -- one call across ranks
CREATE INDEX transfer_by_time        ON transfer_data(start_ns);          -- time-ordered reads
)sql";

// kViewSql with ALIGNED(alias, column) and ALIGNED_AT(alias, expression) expanded: the time
// mapped through the piece of the rank's clock domain that covers it (clock_model.h).
std::string viewSql() {
  std::string sql = kViewSql;
  auto expand = [&](std::string_view macro, bool qualify) {
    for (size_t at = sql.find(macro); at != std::string::npos; at = sql.find(macro, at)) {
      const size_t open = at + macro.size();
      const size_t comma = sql.find(',', open);
      const size_t close = sql.find(')', comma);
      const std::string alias = sql.substr(open, comma - open);
      std::string column = sql.substr(comma + 1, close - comma - 1);
      column.erase(0, column.find_first_not_of(' '));
      const std::string t = qualify ? alias + "." + column : column;
      const std::string expr =
          "(" + t + " + coalesce((SELECT p.offset_ns + CAST(round((" + t +
          " - p.ref_ns) * p.rate) AS INTEGER) FROM clock_rank AS k JOIN clock_segment AS p"
          " ON p.domain = k.domain WHERE k.rank = " + alias + ".rank AND p.lo_ns <= " + t +
          " ORDER BY p.lo_ns DESC LIMIT 1), 0))";
      sql.replace(at, close + 1 - at, expr);
      at += expr.size();
    }
  };
  expand("ALIGNED(", true);
  expand("ALIGNED_AT(", false);
  return sql;
}

bool createViews(sqlite3* db, std::string* error) {
  return exec(db, viewSql().c_str(), error);
}

bool upgradeSchema(sqlite3* db, int from_version, std::string* error) {
  if (from_version >= kSchemaVersion) return true;
  std::string sql = "DROP VIEW IF EXISTS collective; DROP VIEW IF EXISTS transfer;"
                    "DROP VIEW IF EXISTS gpu_activity; DROP VIEW IF EXISTS communicator;";
  for (const TableDef* t : kTables) {
    if (t->since > from_version) {
      sql += createTableSql(*t) + '\n';
      continue;
    }
    for (int i = 0; i < t->count; ++i) {
      const Column& c = t->columns[i];
      if (c.since > from_version) {
        sql += std::string("ALTER TABLE ") + t->name + " ADD COLUMN " + c.name + " " + c.decl + ";";
      }
    }
  }
  if (!exec(db, sql.c_str(), error) || !createViews(db, error)) return false;
  const std::string stamp = "PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  return exec(db, stamp.c_str(), error);
}

bool createSchema(sqlite3* db, std::string* error) {
  std::string sql;
  for (const TableDef* t : kTables) sql += createTableSql(*t) + '\n';
  sql += viewSql();
  if (!exec(db, sql.c_str(), error)) return false;
  const std::string stamp = "PRAGMA application_id=" + std::to_string(kApplicationId) +
                            ";PRAGMA user_version=" + std::to_string(kSchemaVersion) + ";";
  return exec(db, stamp.c_str(), error);
}

}  // namespace ringside::storage::detail
