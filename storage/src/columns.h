// storage/src/columns.h — the one list of every table's columns (schema version 5).
//
// Each table's columns are declared once, here, as an X-macro: X(name, declaration, since,
// comment). Everything that names columns by position is derived from these lists: the CREATE
// TABLE text (schema.cpp; SQLite keeps the comments, so `.schema` on a trace shows them), the
// writer's and the merger's INSERT statements and the merger's and the reader's SELECT lists, and
// the column indexes they bind and read (the enumerators of each table struct below, in declaration
// order). Adding a column is one line here, plus the code that fills or reads it (the merger copies
// a new column as it is, or remaps it as a string id if its name ends in _sid).
//
// `since` is the schema version that added the column: reading a file of an older version reads it
// as NULL. Changing anything a reader depends on means bumping kSchemaVersion (records.h).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace ringside::storage::detail {

struct Column {
  const char* name;
  const char* decl;  // type and column constraints
  int since;         // schema version that added it
  const char* comment;
};

struct TableDef {
  const char* name;
  const Column* columns;
  int count;
  int since;                // schema version that added the table (required from then on)
  const char* constraints;  // table constraints after the columns; "" if none
  // Layout of the CREATE TABLE text: names are padded to name_width, comments start at
  // comment_column. Kept as in the files already written, so sqlite_schema stays the same.
  int name_width;
  int comment_column;
};

// Interned short strings (op names, dtypes, communicator ids, ...). Data tables refer to them by
// id through *_sid columns (the merger remaps every column so named); the views join them.
#define RINGSIDE_STRING_COLUMNS(X)                                    \
  X(id, "INTEGER PRIMARY KEY", 1, "string id (sid), unique within the file") \
  X(value, "TEXT NOT NULL UNIQUE", 1,                                 \
    "the string itself; never empty (empty is stored as a NULL sid)")

// The traced process: one row in a rank file, one per input file in a merged trace.
#define RINGSIDE_RANK_COLUMNS(X)                                                             \
  X(rank, "INTEGER", 1, "rank in the world communicator; NULL if never known")               \
  X(world_size, "INTEGER", 1, "ranks in the world communicator; NULL if never known")        \
  X(local_rank, "INTEGER", 1, "rank among the processes of its host; NULL if unknown")       \
  X(host, "TEXT", 1, "hostname")                                                             \
  X(pid, "INTEGER", 1, "process id on host")                                                 \
  X(launcher, "TEXT", 1, "torchrun, ompi, slurm, pmi, ringside, unknown")                    \
  X(clock, "TEXT", 1, "clock of every *_ns column of this rank (CLOCK_MONOTONIC)")           \
  X(start_ns, "INTEGER", 1, "trace start on `clock`, ns")                                    \
  X(start_unix_ns, "INTEGER", 1,                                                             \
    "the same instant on CLOCK_REALTIME, ns since 1970 (aligns hosts)")                      \
  X(command_line, "TEXT", 1, "argv joined by spaces")                                        \
  X(identity_source, "TEXT", 1, "where rank/world_size came from: gloo, env, none")          \
  X(file, "TEXT", 1, "basename of the rank file the row came from")                          \
  X(boot_id, "TEXT", 3, "kernel boot id of the host (v3); NULL if unknown")                  \
  X(timens_offset_ns, "INTEGER", 3,                                                          \
    "CLOCK_MONOTONIC offset of the process's time namespace, ns (v3)")

// One call of a collective (or point-to-point) operation on one rank.
#define RINGSIDE_COLLECTIVE_COLUMNS(X)                                                          \
  X(id, "INTEGER PRIMARY KEY", 1, "unique per file; renumbered across ranks on merge")          \
  X(rank, "INTEGER", 1, "calling rank (world); NULL if unknown")                                \
  X(comm_sid, "INTEGER", 1, "string: communicator id, equal on all its ranks")                  \
  X(seq, "INTEGER NOT NULL", 1,                                                                 \
    "call number within comm, from 0; matches a call across ranks")                             \
  X(op_sid, "INTEGER", 1, "string: allreduce, broadcast, allgather, ... (lower case)")          \
  X(library_sid, "INTEGER", 1, "string: gloo, nccl, ringside-ring, ringside-tree")              \
  X(bytes, "INTEGER NOT NULL", 1, "payload bytes of this rank's input, bytes")                  \
  X(count, "INTEGER NOT NULL", 1, "payload elements")                                           \
  X(dtype_sid, "INTEGER", 1, "string: f32, f64, bf16, ...; NULL if unknown")                    \
  X(reduce_op_sid, "INTEGER", 1, "string: sum, max, ...; NULL if not a reduction or unknown")   \
  X(algorithm_sid, "INTEGER", 1, "string: ring, bcube, ...; NULL when the library chose")       \
  X(start_ns, "INTEGER NOT NULL", 1, "call entered, ns on the rank's clock")                    \
  X(end_ns, "INTEGER", 1,                                                                       \
    "call returned, ns on the rank's clock; NULL if it never returned")                         \
  X(root, "INTEGER", 1, "root rank of rooted ops; NULL otherwise")                              \
  X(tid, "INTEGER NOT NULL", 1, "OS thread id of the caller")                                   \
  X(status, "INTEGER NOT NULL", 1, "0 ok, 1 the call threw/failed")

// One message on a directed link src_rank -> dst_rank, as seen by one side.
#define RINGSIDE_TRANSFER_COLUMNS(X)                                                            \
  X(id, "INTEGER PRIMARY KEY", 1, "unique per file (renumbered on merge)")                      \
  X(rank, "INTEGER", 1, "recording rank (src_rank for send, dst_rank for recv)")                \
  X(collective_id, "INTEGER", 1, "collective_data.id of the enclosing call; NULL if none")      \
  X(src_rank, "INTEGER", 1, "sending rank; NULL if unknown")                                    \
  X(dst_rank, "INTEGER", 1, "receiving rank; NULL if unknown")                                  \
  X(bytes, "INTEGER NOT NULL", 1, "message size, bytes")                                        \
  X(start_ns, "INTEGER NOT NULL", 1, "send/recv posted, ns on the recording rank's clock")      \
  X(end_ns, "INTEGER", 1, "last byte written/read, ns; NULL if never completed")                \
  X(side_sid, "INTEGER", 1, "string: 'send' or 'recv'")                                         \
  X(phase_sid, "INTEGER", 1,                                                                    \
    "string: reduce-scatter, all-gather, reduce, broadcast; NULL if unknown")                   \
  X(step, "INTEGER", 1, "algorithm step, from 0; NULL if unknown")                              \
  X(chunk, "INTEGER", 1, "chunk within the step, from 0; NULL if unknown")                      \
  X(slot, "INTEGER", 1, "the library's message tag/slot; NULL if unknown")                      \
  X(channel, "INTEGER", 2, "NCCL channel that carried it; NULL if none/unknown (v2)")

// What a GPU library (NCCL) adds to a collective_data row (v2). One row per collective at most;
// filled from NCCL's profiler events and CUPTI.
#define RINGSIDE_COLLECTIVE_GPU_COLUMNS(X)                                                     \
  X(collective_id, "INTEGER PRIMARY KEY", 2, "collective_data.id")                             \
  X(gpu_start_ns, "INTEGER", 2,                                                                \
    "first GPU work of the call began, ns on the rank's clock; NULL if unknown")               \
  X(gpu_end_ns, "INTEGER", 2, "last GPU work of the call ended, ns on the rank's clock")       \
  X(algorithm_sid, "INTEGER", 2,                                                               \
    "string: NCCL's algorithm (ring, tree, collnet_direct, nvls, pat, ...)")                   \
  X(protocol_sid, "INTEGER", 2, "string: LL, LL128, Simple")                                   \
  X(channels, "INTEGER", 2, "channels the call used")                                          \
  X(group_id, "INTEGER", 2,                                                                    \
    "calls of one ncclGroupStart/End share it (per rank); NULL outside groups")                \
  X(stream, "INTEGER", 2, "CUDA stream handle the call was enqueued on")                       \
  X(device, "INTEGER", 2, "CUDA device ordinal")

// GPU work and GPU-related host events from CUPTI, and NVTX ranges (v2).
#define RINGSIDE_GPU_ACTIVITY_COLUMNS(X)                                                       \
  X(id, "INTEGER PRIMARY KEY", 2, "unique per file (renumbered on merge)")                     \
  X(rank, "INTEGER", 2, "recording rank")                                                      \
  X(kind_sid, "INTEGER", 2, "string: kernel, memcpy, memset, sync, nvtx")                      \
  X(name_sid, "INTEGER", 2, "string: kernel name, NVTX text, sync kind; NULL if none")         \
  X(start_ns, "INTEGER NOT NULL", 2, "ns on the rank's clock (converted from the GPU timer)")  \
  X(end_ns, "INTEGER", 2, "ns on the rank's clock; NULL if unknown")                           \
  X(device, "INTEGER", 2, "CUDA device ordinal")                                               \
  X(stream, "INTEGER", 2, "CUPTI stream id")                                                   \
  X(bytes, "INTEGER", 2, "memcpy/memset bytes; NULL otherwise")                                \
  X(copy_kind_sid, "INTEGER", 2,                                                               \
    "string: HtoD, DtoH, DtoD, HtoH, PtoP (memcpy); NULL otherwise")                           \
  X(correlation_id, "INTEGER", 2, "CUPTI correlation id of the launching API call")            \
  X(collective_id, "INTEGER", 2,                                                               \
    "collective_data.id of the NCCL call that launched it; NULL if none")

// Communicators as created on each rank (v2).
#define RINGSIDE_COMMUNICATOR_COLUMNS(X)                                                       \
  X(rank, "INTEGER", 2, "recording rank")                                                      \
  X(comm_sid, "INTEGER NOT NULL", 2, "string: communicator id, as collective_data.comm_sid")   \
  X(library_sid, "INTEGER", 2, "string: gloo, nccl")                                           \
  X(comm_rank, "INTEGER", 2, "this rank's rank in the communicator")                           \
  X(comm_size, "INTEGER", 2, "ranks in the communicator")                                      \
  X(parent_sid, "INTEGER", 2, "string: the communicator it was split from; NULL if none")      \
  X(created_ns, "INTEGER", 2, "creation returned, ns on the rank's clock")                     \
  X(ended_ns, "INTEGER", 2, "destroy/abort returned; NULL while alive")                        \
  X(end_state_sid, "INTEGER", 2, "string: destroyed, aborted; NULL while alive")               \
  X(topology, "TEXT", 2,                                                                       \
    "the library's rings/trees, one per line (\"ring 0: 0 1 2 3\"); NULL if unknown")

// Key/value facts about the recording (tool_version, end_state, counters, ...). A merged trace
// stores each rank's keys as rank.<r>.<key> plus merge keys.
#define RINGSIDE_META_COLUMNS(X)                                    \
  X(key, "TEXT PRIMARY KEY", 1, "see docs/schema.md for the keys") \
  X(value, "TEXT", 1, "always text; numbers in decimal")

// Wall-clock anchors of a rank (v3): CLOCK_REALTIME read between two readings of the rank's
// clock, at trace start, about once a second and at the end.
#define RINGSIDE_CLOCK_ANCHOR_COLUMNS(X)                                                      \
  X(rank, "INTEGER", 3, "recording rank")                                                     \
  X(clock_ns, "INTEGER NOT NULL", 3, "midpoint of two readings of the rank's clock, ns")      \
  X(unix_ns, "INTEGER NOT NULL", 3, "CLOCK_REALTIME between them, ns since 1970")             \
  X(spread_ns, "INTEGER", 3, "half the time between the two readings, ns")

// The clock model of a merged trace (v3, docs/clock-alignment.md): one row per clock domain.
#define RINGSIDE_CLOCK_DOMAIN_COLUMNS(X)                                                      \
  X(id, "INTEGER PRIMARY KEY", 3, "domain id; 0 is the reference time line")                 \
  X(host, "TEXT", 3, "host name of its first rank")                                          \
  X(boot_id, "TEXT", 3, "kernel boot id of its ranks; NULL if unknown")                      \
  X(method, "TEXT", 3, "reference, evidence or wall-clock")                                  \
  X(offset_ns, "INTEGER", 3, "aligned minus raw time at the domain's first event, ns")        \
  X(drift_ppm, "REAL", 3, "rate of its clock against the reference, ppm")                   \
  X(uncertainty_ns, "INTEGER", 3, "residual uncertainty of its mapping, +/- ns")             \
  X(bounds, "INTEGER", 3, "bounds from matched calls and messages that constrained it")      \
  X(violated, "INTEGER", 3, "bounds the fitted mapping could not meet")                      \
  X(anchors, "INTEGER", 3, "wall-clock anchors its ranks recorded")                          \
  X(segments, "INTEGER", 3, "pieces of its mapping (clock_segment rows)")                   \
  X(parent, "INTEGER", 7,                                                                     \
    "clock_domain.id it hangs from in the fit's tree of domains; NULL for the root or unknown") \
  X(parent_uncertainty_ns, "INTEGER", 7,                                                      \
    "+/- ns its aligned times can be off against its parent's; NULL if unknown")

// Which clock domain each rank is in (v3).
#define RINGSIDE_CLOCK_RANK_COLUMNS(X)                          \
  X(rank, "INTEGER PRIMARY KEY", 3, "rank (world)")             \
  X(domain, "INTEGER NOT NULL", 3, "clock_domain.id")

// A domain's mapping, piecewise: aligned = t + offset_ns + round((t - ref_ns) * rate) for raw
// times lo_ns <= t < hi_ns (v3).
#define RINGSIDE_CLOCK_SEGMENT_COLUMNS(X)                                                     \
  X(domain, "INTEGER NOT NULL", 3, "clock_domain.id")                                        \
  X(lo_ns, "INTEGER NOT NULL", 3, "first raw time the piece covers, ns")                      \
  X(hi_ns, "INTEGER NOT NULL", 3, "raw time the next piece starts, ns")                      \
  X(ref_ns, "INTEGER NOT NULL", 3, "raw time at which the offset is offset_ns")              \
  X(offset_ns, "INTEGER NOT NULL", 3, "aligned minus raw time at ref_ns, ns")                \
  X(rate, "REAL NOT NULL", 3, "drift: change of the offset per ns of raw time")

// Explicit step markers (v4): the job called ringside_step(step) (docs/steps.md).
#define RINGSIDE_STEP_MARKER_COLUMNS(X)                                                       \
  X(rank, "INTEGER", 4, "recording rank")                                                     \
  X(step, "INTEGER NOT NULL", 4, "the step number the job passed")                            \
  X(start_ns, "INTEGER NOT NULL", 4, "ringside_step() was called, ns on the rank's clock")

// The traced process's CPU use (v5): cumulative counters sampled by the collector's writer thread
// about every 10 ms (getrusage(RUSAGE_SELF): every thread of the process). docs/schema.md.
#define RINGSIDE_CPU_SAMPLE_COLUMNS(X)                                                        \
  X(rank, "INTEGER", 5, "recording rank")                                                     \
  X(t_ns, "INTEGER NOT NULL", 5, "when the sample was taken, ns on the rank's clock")         \
  X(cpu_ns, "INTEGER NOT NULL", 5, "user + system CPU time of all threads so far, ns")        \
  X(voluntary, "INTEGER NOT NULL", 5, "context switches so far: a thread blocked or slept")   \
  X(involuntary, "INTEGER NOT NULL", 5, "context switches so far: a thread was preempted")   \
  X(run_delay_ns, "INTEGER", 5,                                                               \
    "main thread's time so far waiting for a core (/proc/self/schedstat), ns; NULL unknown")

// Training steps detected in a merged trace's calls (v4, written by merge; docs/steps.md): the
// calls of `comm_sid` with first_seq <= seq <= last_seq form step `step`.
#define RINGSIDE_STEP_COLUMNS(X)                                                              \
  X(step, "INTEGER PRIMARY KEY", 4, "step number, from 0")                                    \
  X(comm_sid, "INTEGER", 4, "string: the communicator whose repeating calls define the steps") \
  X(first_seq, "INTEGER NOT NULL", 4, "seq of the step's first call on comm")                 \
  X(last_seq, "INTEGER NOT NULL", 4, "seq of its last call on comm")                          \
  X(complete, "INTEGER NOT NULL", 4, "1; 0 when the trace ends inside the step")

// The flight recorder (v5, docs/flight-recorder.md): what each traced process's ring held when it
// was dumped. Every traced process keeps its last calls per communicator and the messages in
// flight in a small memory-mapped ring file beside its rank file (it survives SIGKILL and SIGSTOP);
// a dump stamps the ring with a reason, and merge turns each ring file into these rows. Strings are
// stored as text (the tables hold a few hundred rows per rank at most).
#define RINGSIDE_FLIGHT_DUMP_COLUMNS(X)                                                       \
  X(rank, "INTEGER", 5, "recording rank")                                                     \
  X(dump, "INTEGER NOT NULL", 5, "dump number within the rank, from 0")                       \
  X(reason, "TEXT NOT NULL", 5,                                                               \
    "watchdog, timeout, error, signal, exit-open, sigusr2, request, periodic, end")           \
  X(time_ns, "INTEGER", 5, "the dump was stamped, ns on the rank's clock")                    \
  X(detail, "TEXT", 5, "signal name, error text, the watchdog's verdict; NULL if none")       \
  X(pid, "INTEGER", 5, "process id of the ring's writer")                                      \
  X(calls_dropped, "INTEGER", 5, "calls that left the ring before the dump (older ones)")

// The calls in a rank's ring at a dump (v5): the last N per communicator, open ones included.
#define RINGSIDE_FLIGHT_CALL_COLUMNS(X)                                                       \
  X(rank, "INTEGER", 5, "recording rank")                                                     \
  X(dump, "INTEGER NOT NULL", 5, "flight_dump.dump of the rank")                              \
  X(comm, "TEXT", 5, "communicator id, as collective.comm")                                   \
  X(seq, "INTEGER NOT NULL", 5, "call number within comm, as collective.seq")                 \
  X(op, "TEXT", 5, "allreduce, broadcast, allgather, ... (as collective.op)")                 \
  X(library, "TEXT", 5, "gloo, nccl, ringside-ring, ...")                                     \
  X(bytes, "INTEGER", 5, "payload bytes of this rank's input, as collective.bytes")           \
  X(count, "INTEGER", 5, "payload elements")                                                  \
  X(dtype, "TEXT", 5, "f32, f64, ...; NULL if unknown")                                       \
  X(root, "INTEGER", 5, "root rank of rooted ops; NULL otherwise")                            \
  X(step, "INTEGER", 5, "the job's last ringside_step() marker before the call; NULL if none") \
  X(tid, "INTEGER", 5, "OS thread id of the caller")                                          \
  X(enter_ns, "INTEGER", 5, "call entered, ns on the rank's clock")                           \
  X(exit_ns, "INTEGER", 5, "call returned, ns; NULL while open")                              \
  X(state, "TEXT NOT NULL", 5, "queued, entered, transferring, done, failed")

// The messages of a rank's ring at a dump (v5): the last ones per communicator, open ones included.
#define RINGSIDE_FLIGHT_MESSAGE_COLUMNS(X)                                                    \
  X(rank, "INTEGER", 5, "recording rank")                                                     \
  X(dump, "INTEGER NOT NULL", 5, "flight_dump.dump of the rank")                              \
  X(comm, "TEXT", 5, "communicator id of the enclosing call")                                 \
  X(seq, "INTEGER", 5, "seq of the enclosing call; NULL if none")                             \
  X(peer, "INTEGER", 5, "the other rank (world); NULL if unknown")                            \
  X(direction, "TEXT NOT NULL", 5, "send or recv")                                            \
  X(bytes, "INTEGER", 5, "message size, bytes")                                               \
  X(posted_ns, "INTEGER", 5, "send/recv posted, ns on the rank's clock")                      \
  X(done_ns, "INTEGER", 5, "last byte written/read, ns; NULL if never completed")

// How a traced process ended (v5): one row per rank when it, or the launcher, could say.
#define RINGSIDE_RANK_EXIT_COLUMNS(X)                                                         \
  X(rank, "INTEGER", 5, "rank (world)")                                                       \
  X(pid, "INTEGER", 5, "process id")                                                          \
  X(exit_status, "INTEGER", 5, "exit status 0..255; NULL if it died of a signal or unknown")  \
  X(signal, "INTEGER", 5, "fatal signal number; NULL if none")                                \
  X(time_ns, "INTEGER", 5, "when it ended, ns on the rank's clock; NULL if unknown")          \
  X(open_calls, "INTEGER", 5, "calls still open in its ring when it ended")                   \
  X(source, "TEXT NOT NULL", 5, "process (its own exit/signal handler) or launcher (record)")

#define RINGSIDE_COLUMN_ENUMERATOR(name, decl, since, comment) name,
#define RINGSIDE_COLUMN_ENTRY(name, decl, since, comment) Column{#name, decl, since, comment},

// One struct per table: its enumerators are the column indexes (0-based, in declaration order:
// the index in a row read through selectSql, and one less than the parameter number in
// insertSql), kDef describes the table.
#define RINGSIDE_TABLE(Struct, sql_name, COLUMNS, table_since, constraints, name_width,       \
                       comment_column)                                                        \
  struct Struct {                                                                             \
    enum Col : int { COLUMNS(RINGSIDE_COLUMN_ENUMERATOR) kColumnCount };                      \
    static_assert(kColumnCount < 64, "a ColumnSet holds 63 columns at most");                 \
    static constexpr Column kColumns[] = {COLUMNS(RINGSIDE_COLUMN_ENTRY)};                    \
    static constexpr TableDef kDef = {sql_name,    kColumns,   kColumnCount,  table_since,    \
                                      constraints, name_width, comment_column};               \
  };

RINGSIDE_TABLE(StringTable, "string", RINGSIDE_STRING_COLUMNS, 1, "", 5, 30)
RINGSIDE_TABLE(RankTable, "rank", RINGSIDE_RANK_COLUMNS, 1, "", 15, 28)
RINGSIDE_TABLE(CollectiveTable, "collective_data", RINGSIDE_COLLECTIVE_COLUMNS, 1, "", 13, 38)
RINGSIDE_TABLE(TransferTable, "transfer_data", RINGSIDE_TRANSFER_COLUMNS, 1, "", 13, 38)
RINGSIDE_TABLE(CollectiveGpuTable, "collective_gpu_data", RINGSIDE_COLLECTIVE_GPU_COLUMNS, 2, "",
               13, 38)
RINGSIDE_TABLE(GpuActivityTable, "gpu_activity_data", RINGSIDE_GPU_ACTIVITY_COLUMNS, 2, "", 14, 38)
RINGSIDE_TABLE(CommunicatorTable, "communicator_data", RINGSIDE_COMMUNICATOR_COLUMNS, 2,
               "UNIQUE(rank, comm_sid)", 12, 38)
RINGSIDE_TABLE(MetaTable, "meta", RINGSIDE_META_COLUMNS, 1, "", 5, 27)
RINGSIDE_TABLE(ClockAnchorTable, "clock_anchor_data", RINGSIDE_CLOCK_ANCHOR_COLUMNS, 3, "", 9, 30)
RINGSIDE_TABLE(ClockDomainTable, "clock_domain", RINGSIDE_CLOCK_DOMAIN_COLUMNS, 3, "", 14, 38)
RINGSIDE_TABLE(ClockRankTable, "clock_rank", RINGSIDE_CLOCK_RANK_COLUMNS, 3, "", 6, 30)
RINGSIDE_TABLE(ClockSegmentTable, "clock_segment", RINGSIDE_CLOCK_SEGMENT_COLUMNS, 3, "", 9, 30)
RINGSIDE_TABLE(StepMarkerTable, "step_marker_data", RINGSIDE_STEP_MARKER_COLUMNS, 4, "", 8, 30)
RINGSIDE_TABLE(StepTable, "step", RINGSIDE_STEP_COLUMNS, 4, "", 9, 36)
RINGSIDE_TABLE(FlightDumpTable, "flight_dump", RINGSIDE_FLIGHT_DUMP_COLUMNS, 5, "", 13, 38)
RINGSIDE_TABLE(FlightCallTable, "flight_call", RINGSIDE_FLIGHT_CALL_COLUMNS, 5, "", 8, 30)
RINGSIDE_TABLE(FlightMessageTable, "flight_message", RINGSIDE_FLIGHT_MESSAGE_COLUMNS, 5, "", 9, 30)
RINGSIDE_TABLE(RankExitTable, "rank_exit", RINGSIDE_RANK_EXIT_COLUMNS, 5, "", 11, 30)
RINGSIDE_TABLE(CpuSampleTable, "cpu_sample_data", RINGSIDE_CPU_SAMPLE_COLUMNS, 6, "", 11, 30)

#undef RINGSIDE_TABLE
#undef RINGSIDE_COLUMN_ENTRY
#undef RINGSIDE_COLUMN_ENUMERATOR

// Every table, in the order the schema creates them.
inline constexpr const TableDef* kTables[] = {
    &StringTable::kDef,        &RankTable::kDef,          &CollectiveTable::kDef,
    &TransferTable::kDef,      &CollectiveGpuTable::kDef, &GpuActivityTable::kDef,
    &CommunicatorTable::kDef,  &MetaTable::kDef,          &ClockAnchorTable::kDef,
    &ClockDomainTable::kDef,   &ClockRankTable::kDef,     &ClockSegmentTable::kDef,
    &StepMarkerTable::kDef,    &StepTable::kDef,          &FlightDumpTable::kDef,
    &FlightCallTable::kDef,    &FlightMessageTable::kDef, &RankExitTable::kDef,
    &CpuSampleTable::kDef};

// A set of a table's columns (bit i: column i); every table has fewer than 64 columns.
using ColumnSet = uint64_t;
inline constexpr ColumnSet kAllColumns = ~ColumnSet{0};
constexpr ColumnSet columns(std::initializer_list<int> indexes) {
  ColumnSet set = 0;
  for (int i : indexes) set |= ColumnSet{1} << i;
  return set;
}

// The parameter number of column `column` in an insertSql/upsertSql statement.
constexpr int param(int column) { return column + 1; }

// "CREATE TABLE name(\n  col decl,  -- comment\n ...);\n"
std::string createTableSql(const TableDef& t);

// "SELECT a, b, ... FROM name<tail>": every column, in order, so column i of a row is the table's
// column i. Columns the file's `version` predates, or left out of `read`, read as NULL.
std::string selectSql(const TableDef& t, int version, std::string_view tail,
                      ColumnSet read = kAllColumns);

// As selectSql, but lists only the columns of `read` (NULL for those the file's `version`
// predates): column c of the table is column indexIn(read, c) of a row. For hot reads of a few
// columns, where each NULL placeholder would cost time per row.
std::string selectOnlySql(const TableDef& t, int version, std::string_view tail, ColumnSet read);
constexpr int indexIn(ColumnSet read, int column) {
  return std::popcount(read & ((ColumnSet{1} << column) - 1));
}

// "<verb> INTO name(a, b, ...) VALUES(?1,?2,...)" of the columns of `written` (those left out
// take their default): parameter i+1 is column i when all are written.
std::string insertSql(const TableDef& t, std::string_view verb = "INSERT",
                      ColumnSet written = kAllColumns);

// insertSql plus "ON CONFLICT(<key>) DO UPDATE SET c=coalesce(excluded.c, c), ..." for every column
// outside `key`: a later row fills what is still unknown and never erases what is known.
std::string upsertSql(const TableDef& t, ColumnSet key);

}  // namespace ringside::storage::detail
