// storage/records.h — the rows of a ringside trace, as plain C++ values.
//
// These structs are the whole vocabulary shared by the writer (in the traced
// process), the merger and the reader (analyzer, reports, viewer). Times are
// integer nanoseconds on the clock named in RankInfo::clock (CLOCK_MONOTONIC of
// the rank's host unless said otherwise). Short enumerated strings (op, dtype,
// phase, ...) are interned by the writer; string_view fields must stay valid
// only for the duration of the call that takes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringside::storage {

// Schema version stored in PRAGMA user_version. Readers refuse newer files.
// Version 2 added the GPU tables (collective_gpu_data, gpu_activity_data,
// communicator_data) and transfer_data.channel; version-1 files stay readable
// (their GPU tables read as empty, channel as -1).
// Version 3 added the clock tables (clock_anchor_data in every file; clock_domain, clock_rank and
// clock_segment in merged traces), rank.boot_id and rank.timens_offset_ns, and aligned columns in
// the views; version-2 files read with the identity clock model.
// Version 4 added the training-step tables (step_marker_data in every file, step in merged traces;
// docs/schema.md); version-3 files read without markers, and analyze() detects their steps.
// Version 5 added the flight recorder's tables (flight_dump, flight_call, flight_message) and
// rank_exit (docs/flight-recorder.md); version-4 files read with none of them.
// Version 6 added cpu_sample_data (the process's CPU time and context switches, sampled by the
// writer thread; docs/schema.md); older files read without samples.
// Version 7 added clock_domain.parent and parent_uncertainty_ns (the fit's tree of domains, for
// the uncertainty between two hosts; docs/clock-alignment.md); older models read without them
// and bound two hosts by the sum of their uncertainties, as before.
inline constexpr int kSchemaVersion = 7;

// Sentinel for "not known / not applicable" in integer columns (stored as NULL).
inline constexpr int64_t kNone = -1;

// Text read from a trace is cut at these lengths (the cut ends in kCutMarker), so that what is
// shown or exported from a trace stays proportional to the trace (docs/schema.md, "Reading
// safely"): names in the string table (op, library, communicator, phase, ...) at 1 KiB, other
// text (meta values, rank columns) at 64 KiB, a communicator's topology (NCCL's rings and trees,
// long for a large world, but read once per communicator) at 1 MiB.
inline constexpr size_t kMaxNameBytes = 1024;
inline constexpr size_t kMaxTextBytes = 64 * 1024;
inline constexpr size_t kMaxTopologyBytes = 1024 * 1024;
inline constexpr std::string_view kCutMarker = "...[cut]";

struct RankInfo {
  int32_t rank = -1;        // rank in the world communicator
  int32_t world_size = -1;  // number of ranks in the world communicator
  int32_t local_rank = -1;  // rank among the processes of this host
  std::string host;         // hostname
  int64_t pid = 0;
  std::string launcher;     // how the rank was started: torchrun, ompi, slurm, pmi, ringside, unknown
  std::string clock = "CLOCK_MONOTONIC";  // the clock all *_ns values of this rank use
  int64_t start_ns = 0;        // process trace start on `clock`
  int64_t start_unix_ns = 0;   // the same instant on CLOCK_REALTIME (for aligning hosts)
  std::string command_line;    // argv joined by spaces
  std::string identity_source; // where rank/world_size came from: gloo, env, none
  // Which kernel clock `clock` is (schema v3): the boot's /proc/sys/kernel/random/boot_id ("" if
  // unknown) and the CLOCK_MONOTONIC offset of the process's time namespace
  // (/proc/self/timens_offsets; 0 outside one). Ranks equal in both share one clock domain.
  std::string boot_id;
  int64_t timens_offset_ns = 0;
};

// One call of a collective (or point-to-point) operation on one rank.
struct CollectiveRow {
  int64_t id = 0;            // unique within a rank file; renumbered on merge
  int32_t rank = -1;
  std::string_view comm;     // communicator id, equal across the ranks of one communicator
  int64_t seq = 0;           // call number within `comm`, from 0; matches calls across ranks
  std::string_view op;       // allreduce, broadcast, allgather, ... (lower case)
  std::string_view library;  // gloo, nccl, ringside-ring, ringside-tree
  int64_t bytes = 0;         // payload bytes of this rank's input (see docs/schema.md per op)
  int64_t count = 0;         // elements
  std::string_view dtype;    // f32, f64, f16, bf16, i8, u8, i32, i64, ... or "" when unknown
  std::string_view reduce_op;// sum, prod, min, max, ... or "" when not a reduction/unknown
  std::string_view algorithm;// ring, bcube, ... or "" when the library chose
  int64_t start_ns = 0;      // call entered
  int64_t end_ns = 0;        // call returned
  int32_t root = -1;         // root rank for rooted ops, else -1
  int32_t tid = 0;           // OS thread id of the caller
  int32_t status = 0;        // 0 ok, 1 the call threw/failed
};

// One message on a directed link, as seen by one side.
struct TransferRow {
  int64_t id = 0;              // unique within a file (assigned by the writer when 0)
  int64_t collective_id = kNone; // CollectiveRow::id of the enclosing call, kNone if none
  int32_t src_rank = -1;
  int32_t dst_rank = -1;
  int64_t bytes = 0;
  int64_t start_ns = 0;        // posted (send/recv issued)
  int64_t end_ns = 0;          // completed (last byte written/read); kNone if never completed
  std::string_view side;       // "send" (seen by src_rank) or "recv" (seen by dst_rank)
  std::string_view phase;      // reduce-scatter, all-gather, reduce, broadcast, or "" if unknown
  int32_t step = -1;           // algorithm step, -1 if unknown
  int32_t chunk = -1;          // chunk within a step, -1 if unknown
  int64_t slot = kNone;        // library's message tag/slot
  int32_t channel = -1;        // NCCL channel that carried it, -1 if none/unknown (schema v2)
};

// What a GPU library (NCCL) adds to one CollectiveRow; arrives after the call
// returned (GPU times come from NCCL's profiler or CUPTI). Written as an
// upsert keyed by collective_id: later rows fill the fields still unknown
// (a field left at its "unknown" value never erases a known one).
struct CollectiveGpuRow {
  int64_t collective_id = kNone; // CollectiveRow::id
  int64_t gpu_start_ns = kNone;  // first GPU work of the call began (host clock), kNone if unknown
  int64_t gpu_end_ns = kNone;    // last GPU work of the call ended (host clock)
  std::string_view algorithm;    // NCCL's choice: ring, tree, collnet_direct, collnet_chain, nvls, nvls_tree, pat
  std::string_view protocol;     // LL, LL128, Simple; "" unknown
  int32_t channels = -1;         // channels (CTAs) the call used, -1 unknown
  int64_t group_id = kNone;      // calls between one ncclGroupStart/End share it (per rank), kNone outside a group
  int64_t stream = kNone;        // CUDA stream handle the call was enqueued on
  int32_t device = -1;           // CUDA device ordinal
};

// One piece of GPU work or a host-side GPU event, from CUPTI (kernels, copies,
// sets, synchronization) or NVTX ranges.
struct GpuActivityRow {
  int64_t id = 0;                // unique within a file (assigned by the writer when 0)
  std::string_view kind;         // kernel, memcpy, memset, sync, nvtx
  std::string_view name;         // kernel name (demangled if possible), NVTX text, sync kind; "" if none
  int64_t start_ns = 0;          // host clock (converted from the GPU timer in one place: collector/)
  int64_t end_ns = kNone;
  int32_t device = -1;           // CUDA device ordinal
  int64_t stream = kNone;        // CUPTI stream id
  int64_t bytes = kNone;         // memcpy/memset bytes
  std::string_view copy_kind;    // memcpy: HtoD, DtoH, DtoD, HtoH, PtoP; memset: "" 
  int64_t correlation_id = kNone;// CUPTI correlation id (links the runtime/driver API call)
  int64_t collective_id = kNone; // the NCCL call that launched it (external correlation), kNone if none
};

// A communicator as the library created it on one rank.
struct CommunicatorRow {
  std::string_view comm;         // communicator id, as in CollectiveRow::comm
  std::string_view library;      // gloo, nccl
  int32_t comm_rank = -1;        // this rank's rank within the communicator
  int32_t comm_size = -1;
  std::string_view parent;       // id of the communicator it was split from, "" if none
  int64_t created_ns = kNone;    // creation returned (host clock)
  int64_t ended_ns = kNone;      // destroy/abort returned, kNone while alive
  std::string_view end_state;    // destroyed, aborted, "" while alive
  std::string_view topology;     // what the library said of its rings/trees, one per line
                                 // ("ring 0: 0 1 2 3", "tree 0: 1->0->-1/2"); "" if unknown
};

// One explicit step marker: the job called ringside_step(step) (schema v4, docs/steps.md).
struct StepMarkerRow {
  int64_t step = 0;      // the number the job gave
  int64_t start_ns = 0;  // when it was called (host clock)
};

// The CPU use of the whole traced process (all its threads) so far, sampled by the collector's
// writer thread about every 10 ms (schema v5, docs/schema.md). Differences of two samples give
// the CPU time and the context switches between them.
struct CpuSampleRow {
  int64_t t_ns = 0;         // when (host clock)
  int64_t cpu_ns = 0;       // user + system CPU time of all threads since the process started
  int64_t voluntary = 0;    // context switches so far where a thread waited (blocked, slept)
  int64_t involuntary = 0;  // context switches so far where a thread was preempted
  int64_t run_delay_ns = kNone;  // the main thread's time so far runnable but waiting for a core
                                 // (/proc/self/schedstat); kNone unknown
};

// One training step found in a merged trace's calls (schema v4, table step): the calls of
// communicator `comm` with first_seq <= seq <= last_seq. Written by `ringside merge`.
struct StepRow {
  int64_t step = 0;       // from 0
  std::string comm;       // the communicator whose repeating calls define the steps
  int64_t first_seq = 0;  // the step's first call on comm
  int64_t last_seq = 0;   // its last call on comm
  bool complete = true;   // false: the trace ends inside this step
};

// The flight recorder (schema v5, docs/flight-recorder.md). A dump of one rank's ring: why and
// when it was stamped. The calls and messages below belong to the rank's dump `dump`.
struct FlightDumpRow {
  int32_t rank = -1;
  int64_t dump = 0;         // from 0 within the rank
  std::string reason;       // watchdog, timeout, error, signal, exit-open, sigusr2, request,
                            // periodic, end (the ring as merge found it, without a stamp)
  int64_t time_ns = kNone;  // when stamped (host clock; aligned like the calls by the reader)
  std::string detail;       // signal name, error text, the watchdog's verdict; "" if none
  int64_t pid = kNone;
  int64_t calls_dropped = 0;  // calls that had left the ring (older than its last N) by then
};

// One call in a rank's ring at a dump.
struct FlightCallRow {
  int32_t rank = -1;
  int64_t dump = 0;
  std::string comm;         // as CollectiveRow::comm
  int64_t seq = 0;          // as CollectiveRow::seq: (comm, seq) matches one call across ranks
  std::string op;
  std::string library;
  int64_t bytes = kNone;
  int64_t count = kNone;
  std::string dtype;        // "" if unknown
  int32_t root = -1;
  int64_t step = kNone;     // the job's last ringside_step() marker before the call
  int32_t tid = 0;
  int64_t enter_ns = kNone;
  int64_t exit_ns = kNone;  // kNone while open
  std::string state;        // queued, entered, transferring, done, failed
};

// One message in a rank's ring at a dump.
struct FlightMessageRow {
  int32_t rank = -1;
  int64_t dump = 0;
  std::string comm;
  int64_t seq = kNone;      // the enclosing call's seq
  int32_t peer = -1;        // the other rank
  std::string direction;    // send, recv
  int64_t bytes = kNone;
  int64_t posted_ns = kNone;
  int64_t done_ns = kNone;  // kNone if never completed
};

// How a rank's process ended, when it (exit or fatal-signal handler) or the launcher could say.
struct RankExitRow {
  int32_t rank = -1;
  int64_t pid = kNone;
  int32_t exit_status = -1;  // 0..255, -1 if it died of a signal or unknown
  int32_t signal = 0;        // fatal signal number, 0 if none
  int64_t time_ns = kNone;
  int64_t open_calls = 0;    // calls still open in its ring then
  std::string source;        // process, launcher
};

}  // namespace ringside::storage
