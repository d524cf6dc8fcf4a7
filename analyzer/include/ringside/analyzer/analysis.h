// analyzer/analysis.h — everything ringside's reports and viewer show about a trace.
//
// analyze() makes streaming passes over a trace through storage::TraceReader
// and returns plain values; memory is O(collective instances + ranks^2 + links
// x bins), never O(transfers). Nothing here prints or draws: cli/ formats the
// result (text, md, html, json, csv), the viewer draws it.
// Errors: false + one line in *error; nothing throws.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ringside/analyzer/collective_math.h"  // busbwFactor, size buckets
#include "ringside/analyzer/hang.h"
#include "ringside/storage/clock_model.h"

namespace ringside::storage {
class TraceReader;
struct TransferRow;
}

namespace ringside::collective {
struct Topology;  // topology_file.h
}

namespace ringside::analyzer {

using collective::Topology;  // topology.h

inline constexpr int kAnalysisSchemaVersion = 1;  // the JSON report's "schema_version"

struct PhaseStats;  // below

// Which phase rows analyze() keeps in Analysis::phases (when AnalysisOptions::on_phase is not
// set). Every row is made; one not kept is counted and folded into Analysis::phases_left_out.
// A row is kept when it is among the first `first` rows made, or its rank is below
// `ranks_below`. A report keeps what it prints: one row per instance, rank and phase is 6.5 M
// rows (1.6 GB) at 16,384 ranks x 200 all-reduces, which its tables fold into a few lines.
struct PhaseRowsKept {
  int64_t first = -1;  // the first rows made, in Analysis::phases' order; -1: every row
  // Besides those: every row of a rank below this and, when > 0, each instance's row that starts
  // first and the one that ends last (the HTML report's phase timeline: a lane per rank below
  // 256, each instance's extent over all ranks).
  int ranks_below = 0;
};

struct AnalysisOptions {
  int bins = 100;                        // time bins for link utilization over the trace
  const Topology* topology = nullptr;    // optional: links, capacities, latencies
  std::string topology_path;             // where `topology` came from, for the what-if's basis
  // Optional window on the trace clock (ns); idle links and utilization use it.
  int64_t window_start_ns = std::numeric_limits<int64_t>::min();
  int64_t window_end_ns = std::numeric_limits<int64_t>::max();
  // Optional: the clock model to judge the trace with instead of the reader's clockModel() (the
  // times are still the reader's). For tests, and tools that fit a model of their own.
  const storage::ClockModel* clock = nullptr;
  std::function<void(double fraction)> progress;  // 0..1, now and then
  // How the findings' try lines name this trace ("ringside diff TRACE tree.sqlite"): the path
  // the user gave; "TRACE" when empty.
  std::string trace_path;
  // Optional: called (on analyze()'s thread) for every send or recv transfer row inside the
  // window, with the index in Analysis::collectives of the instance it belongs to (-1 if none),
  // so a caller can keep per-row figures without reading the transfers a second time.
  std::function<void(const storage::TransferRow& row, int32_t instance)> on_transfer;
  // Optional: when set, every phase row goes to it (on analyze()'s thread, with the index in
  // Analysis::collectives of its instance, each instance's rows one after another) instead of
  // into Analysis::phases, which stays empty: a caller that keeps phases in a form of its own
  // (the viewer: 5 M rows of 128 bytes at 4,096 ranks x 10 M events) never holds them twice.
  std::function<void(const PhaseStats& phase, int32_t instance)> on_phase;
  PhaseRowsKept phase_rows;  // which rows Analysis::phases keeps; default every row
};

// What-if (docs/whatif.md): one library's all-reduces (one rank count), predicted under each
// all-reduce algorithm ringside has, on this topology.
struct WhatIfAlgorithm {
  std::string algorithm;     // "ring", "tree", "multipath"
  double predicted_ns = -1;  // the calls' summed time under it; -1: not predicted (note says why)
  bool ran = false;          // the algorithm the job ran: predicted_ns is the measured time
  std::string note;          // why not predicted, or what the prediction assumes
};
struct WhatIf {
  std::string library;
  std::string ran;             // the algorithm the job ran: ring, tree, multipath, or "unknown"
  int ranks = 0;
  int64_t calls = 0;
  int64_t steps = 0;           // training steps the calls fall in (0: no steps)
  int64_t min_bytes = 0, max_bytes = 0;
  double measured_ns = 0;      // the calls' summed time as recorded (CollectiveInstance::duration_ns)
  std::vector<WhatIfAlgorithm> algorithms;  // ring, tree, multipath
  std::string basis;           // the model and capacities behind the predictions
  std::string best;            // the algorithm predicted fastest ("" when none beats what ran)
  std::string confirm;         // the A/B run that measures `best`
};

// One collective matched across ranks by (comm, seq).
struct CollectiveInstance {
  std::string comm;
  int64_t seq = 0;
  std::string op, library, algorithm, dtype, reduce_op;
  int64_t bytes = 0;            // per-rank payload (max over ranks)
  int ranks = 0;                // ranks that recorded it
  int64_t first_start_ns = 0;   // first rank entered
  int64_t last_start_ns = 0;    // last rank entered (everyone has arrived)
  int64_t last_end_ns = 0;      // last rank returned
  int64_t arrival_skew_ns = 0;  // last_start - first_start
  int straggler_rank = -1;      // the rank that entered last
  // Blame (docs/metrics.md): the others' waiting for straggler_rank in this call, summed over
  // them (each from its entry to the last entry, cut at its own return).
  int64_t caused_wait_ns = 0;
  int64_t duration_ns = 0;      // last_end - last_start: the collective's own time
  double algbw_gbps = 0;        // bytes / duration
  double busbw_gbps = 0;        // algbw x nccl-tests factor for op and rank count
  double expected_ns = -1;      // alpha-beta model; -1 when no model applies
  int64_t sent_bytes = 0;       // transfer bytes (side = send) attributed to it, all ranks
  bool failed = false;          // a rank recorded status != 0
  // GPU times (NCCL): per rank the call's GPU work from collective_gpu, else the span of the
  // kernels CUPTI linked to it by external correlation. When every rank has them, duration_ns
  // (and algbw/busbw) is gpu_end_ns - gpu_start_ns instead of the host times (an NCCL call
  // returns once its work is enqueued).
  int64_t gpu_start_ns = -1;    // last rank's GPU start (everyone's kernel is running); -1 unknown
  int64_t gpu_end_ns = -1;      // last rank's GPU end
  int gpu_ranks = 0;            // ranks with GPU times for it
  bool gpu_timed = false;       // duration_ns comes from the GPU times
  // Training steps (Analysis::steps, docs/steps.md): the step the call belongs to (-1: none,
  // e.g. setup calls) and, for an all-reduce, its bucket: its place among the step's
  // all-reduces on its communicator, from 0 (-1 otherwise).
  int64_t step = -1;
  int bucket = -1;
};

// Per op, library and power-of-two size bucket.
struct OpBucket {
  std::string op, library;
  int64_t size_lo = 0, size_hi = 0;  // bytes in [lo, hi)
  int64_t min_bytes = 0, max_bytes = 0;  // the instances' actual sizes (per-rank payload)
  int64_t count = 0;                 // instances
  int64_t total_ns = 0;              // sum of the instances' times (docs/metrics.md)
  int64_t wall_ns = 0;               // union of the instances' [last entry, last return]
  int64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
  double mean_busbw_gbps = 0;        // over instances of 2+ ranks; -1 when there is none
};

// Per op and library over all sizes: the figures `ringside record`'s summary prints
// (docs/metrics.md). Ordered by wall_ns, largest first.
struct OpStats {
  std::string op, library;
  int64_t count = 0;     // instances
  int64_t bytes = 0;     // sum of the instances' per-rank payloads
  int64_t wall_ns = 0;   // union of the instances' [last entry, last return]
  int64_t total_ns = 0;  // sum of the instances' times
};

// Where a link's two ranks run (RankInfo::host of their rank files). Intra-host traffic goes
// through memory, loopback or shared memory; inter-host traffic crosses the network.
enum class LinkScope { kUnknown, kIntraHost, kInterHost };
const char* linkScopeName(LinkScope scope);  // "unknown", "intra-host", "inter-host"

struct LinkStats {
  int src = -1, dst = -1;
  LinkScope scope = LinkScope::kUnknown;  // unknown: a rank without a rank file (or peer -1)
  int64_t bytes = 0, messages = 0;
  int64_t busy_ns = 0;                 // union of its transfers' [start, end]; from the recv rows
                                       // when any were recorded (a send ends at the socket buffer)
  double mean_gbps = 0;                // bytes / window length
  double peak_gbps = 0;                // highest rate over 100 slices of the range, any bins
  std::vector<double> gbps_per_bin;    // AnalysisOptions::bins values
  double capacity_gbps = -1;           // from the topology; -1 unknown
  double busy_share_of_collectives = 0;// busy time / time inside collectives that used it, <= 1
  double busy_gbps = 0;                // bytes / busy_ns: the rate while it was busy
  double capacity_share = -1;          // busy_gbps / capacity_gbps; -1 when capacity unknown
  bool from_recv = false;              // bytes and messages counted from side='recv' rows
                                       // (no send rows recorded)
};

// A link that exists (topology, or the full mesh of a host's ranks, or a pair of hosts) but
// carried no bytes in the window or during a collective.
struct IdleLink {
  int src = -1, dst = -1;
  std::string where;  // "whole trace", or "allreduce comm/seq"
  double capacity_gbps = -1;
  // A pair of hosts (no topology file, 2+ hosts): no rank of src_host sent to a rank of
  // dst_host. Indexes into Analysis::hosts; src and dst are then -1.
  int src_host = -1, dst_host = -1;
};

// A phase of one collective on one rank.
struct PhaseStats {
  std::string comm;
  int64_t seq = 0;
  int rank = -1;
  std::string phase;        // reduce-scatter, all-gather, reduce, broadcast
  // From the later of its first message and the last rank's entry, to its last message's end.
  int64_t start_ns = 0, end_ns = 0;
  int steps = 0;
  int slowest_step = -1;    // the step that stalled longest
  int64_t slowest_step_ns = 0;
  bool inferred = false;    // from the message pattern (Gloo) rather than recorded
  int64_t wait_ns = 0;      // its first message to the last rank's entry: waiting, not in it
};

// The phase rows of one phase name, folded: what the reports' phase tables print.
struct PhaseTotal {
  std::string phase;
  int64_t instances = 0;  // rows (one per instance and rank)
  int64_t total_ns = 0;   // sum of end_ns - start_ns (each at least 0)
  int64_t wait_ns = 0;    // sum of wait_ns
  int64_t max_ns = 0;     // the longest end_ns - start_ns
  int64_t inferred = 0;   // rows inferred from the message pattern
  void add(const PhaseStats& p);
  void add(const PhaseTotal& t);  // t's rows too (same phase)
};

struct RankStats {
  int rank = -1;
  int64_t span_ns = 0;      // first to last recorded event
  int64_t comm_ns = 0;      // inside collectives (union)
  // Waiting for late ranks: the union over its calls of [its entry, the last rank's entry]
  // (cut at its own return); never more than comm_ns (docs/metrics.md).
  int64_t wait_ns = 0;
  // Blame: the waiting this rank caused the others by entering calls last (docs/metrics.md):
  // summed over the steps (and the calls outside steps) of StepRankStats::caused_wait_ns.
  // wait_ns makes a rank a victim, caused_wait_ns a culprit.
  int64_t caused_wait_ns = 0;
  bool cut_off = false;
  int host = -1;            // index into Analysis::hosts; -1: no rank file names its host
};

// The ranks of one host (RankInfo::host), and what they did.
struct HostStats {
  std::string name;                 // as the rank files give it ("" when they name none)
  std::vector<int> ranks;           // ascending
  int64_t comm_ns = 0;              // sum over its ranks of RankStats::comm_ns
  int64_t wait_ns = 0;              // sum over its ranks of RankStats::wait_ns
  int64_t sent_intra_bytes = 0;     // bytes its ranks sent to ranks of the same host
  int64_t sent_inter_bytes = 0;     // bytes its ranks sent to ranks of other hosts
  int64_t recv_intra_bytes = 0;     // bytes its ranks received from the same host
  int64_t recv_inter_bytes = 0;     // bytes its ranks received from other hosts
};

// Traffic from one host to another (or to itself): the sum of its rank links.
struct HostTraffic {
  int64_t bytes = 0, messages = 0;
  int64_t busy_ns = 0;  // union of the busy times of the rank links between the two hosts
};

// NCCL transfers per directed link and channel (schema v2 transfer.channel).
struct ChannelTraffic {
  int src = -1, dst = -1, channel = -1;
  int64_t bytes = 0, messages = 0;  // from the send rows (the recv rows where a link has none)
};

// One rank's GPU (CUPTI's gpu_activity rows). NCCL kernels are the kernels linked to a
// recorded collective (collective_id, from CUPTI's external correlation), never told by name.
struct GpuStats {
  int rank = -1;
  int device = -1;
  int64_t span_ns = 0;              // first GPU activity start to last end on this device
  int64_t busy_ns = 0;              // union of kernels, copies and sets
  double busy_share = 0;            // busy_ns / span_ns
  int64_t kernels = 0;              // all kernels
  int64_t comm_kernels = 0;         // kernels launched by a recorded collective (NCCL)
  int64_t comm_kernel_ns = 0;       // union of the NCCL kernels
  int64_t compute_kernel_ns = 0;    // union of the other kernels
  int64_t overlap_ns = 0;           // NCCL-kernel time while another kernel ran on this device
  double overlap_share = -1;        // overlap_ns / comm_kernel_ns; -1 without NCCL kernels
  int64_t exposed_comm_ns = 0;      // comm_kernel_ns - overlap_ns: communication nothing hid
  int64_t memcpy_htod_bytes = 0, memcpy_dtoh_bytes = 0, memcpy_other_bytes = 0, memset_bytes = 0;
  int64_t memcpys = 0, memsets = 0;
  int64_t sync_ns = 0;              // union of CUDA synchronization calls (host waits)
  int64_t nvtx_ranges = 0;
};

// One training step on one rank (docs/metrics.md defines each figure).
struct StepRankStats {
  int64_t step = 0;
  int64_t start_ns = 0, end_ns = 0;  // the step on this rank (docs/steps.md: where steps begin)
  int64_t comm_ns = 0;               // time in collectives: union of its calls within the step
  int64_t wait_ns = 0;               // waiting for late ranks: union of [its entry, last entry]
  // Blame: per other rank, the union of its waiting in the step's calls this rank entered last,
  // summed over the others.
  int64_t caused_wait_ns = 0;
  int rank = -1;
  // Derived (not stored: a job of a million rank-steps keeps 24 MB less):
  int64_t step_ns() const { return end_ns - start_ns; }       // step time
  int64_t compute_ns() const { return step_ns() - comm_ns; }  // outside collectives
  int64_t moving_ns() const { return comm_ns - wait_ns; }     // moving data
};

// One training step over all ranks.
struct StepStats {
  int64_t step = 0;                  // the job's number (markers) or from 0 (detected)
  int64_t start_ns = 0, end_ns = 0;  // earliest start and latest end over the ranks
  bool complete = true;              // false: the trace ends inside it
  int64_t calls = 0;                 // collective instances in it
  int late_rank = -1;                // last to enter the step's call with the largest skew
  int64_t late_by_ns = 0;            // that skew (last entry - first entry)
  int64_t wait_ns = 0;               // sum over ranks of their waiting for late ranks
};

// The training steps of a job (docs/steps.md): explicit markers when the job set any, else
// the period of the calls on one communicator.
struct StepInfo {
  std::string source;      // "markers", "detected" (at analysis), "stored" (by merge); "": none
  std::string comm;        // detected/stored: the communicator whose calls repeat
  int64_t calls_per_step = 0;  // detected: calls of one step on comm
  int64_t setup_calls = 0;     // detected: calls on comm before the first step
  // How sure the steps are, 0..1 (docs/steps.md): markers 1; detected, the share of comm's
  // calls after the setup that fall inside steps; -1 with no steps (or an older stored trace).
  double confidence = -1;
  int64_t left_out_calls = 0;  // detected: calls on comm after the first step in no step
  std::string left_out;        // detected: which, "3 x broadcast 1.0 KiB, 1 x allreduce 4 B"
  std::string note;        // no steps: why ("no repeating sequence of calls", ...)
  std::vector<StepStats> steps;         // by step
  std::vector<StepRankStats> per_rank;  // by step, then rank
};

// Why a rank is late: its process's CPU use over its training steps (docs/metrics.md, "CPU"),
// from the trace's CPU samples (schema v5: every thread of the process). Medians per step.
struct RankCpuStats {
  int rank = -1;
  int host = -1;                 // index into Analysis::hosts; -1 unknown
  int64_t steps = 0;             // steps inside the samples' time range
  int64_t cpu_ns = 0;            // CPU time per step (user + system, all threads)
  int64_t step_ns = 0;           // step time
  int64_t compute_ns = 0;        // outside collectives per step
  double cpu_share = 0;          // CPU time / step time over those steps: cores kept busy
  double involuntary = 0;        // context switches per step: preempted (wanted a core)
  double voluntary = 0;          // context switches per step: blocked or slept
  int64_t run_delay_ns = -1;     // the main thread's time per step waiting for a core; -1 unknown
  double busy_share = 0;         // (CPU + run delay) / time outside collectives, summed over its
                                 // steps: < 0.5 when sleeping or blocked (a long sleep counts)
};

// The cores of one host against the ranks on it (ranks' meta cpu_cores_*).
struct HostCpuStats {
  int host = -1;                 // index into Analysis::hosts
  int cores = -1;                // the fewest cores any of its ranks may use; -1 unknown
  int ranks = 0;                 // ranks on it with CPU figures
  int busy_ranks = 0;            // of them, ranks whose CPU time plus time waiting for a core
                                 // per step is >= half their time outside collectives

  double cpu_share = 0;          // the sum of its ranks' cpu_share: cores kept busy
};

// One finding of a rule of findingRules() (findings.h), which gives its severity.
struct Finding {
  std::string severity;     // problem, warning, info
  std::string rule;         // the rule's id: straggler, slow-link, idle-links, low-busbw, ...
  std::string message;      // one line, fits 100 columns
  std::string evidence;     // numbers behind it
  std::string action;       // "try" line: what to change or run next; empty when none
  // Time at stake: what the cause costs the job over the trace (summed over ranks where the
  // rule says so, docs/analyzer.md), ns; -1 when the rule cannot put a time on it. Findings
  // are ordered by severity, then by this, largest first.
  int64_t cost_ns = -1;
};

struct Analysis {
  int world_size = -1;
  std::vector<int> ranks_present, cut_off_ranks, missing_ranks;
  int64_t start_ns = 0, end_ns = 0, bin_ns = 0;
  // In order of first sight in the collective pass (rows by rank, then start): the lowest
  // rank's instances in its order first. Not strictly by first_start_ns (pairCollectives sorts).
  std::vector<CollectiveInstance> collectives;
  std::vector<OpBucket> op_buckets;
  std::vector<OpStats> ops;
  std::vector<LinkStats> links;                 // every directed link that carried bytes
  std::vector<std::vector<int64_t>> traffic;    // [src][dst] bytes, world_size x world_size
  // Hosts, in order of their lowest rank; the ranks of each. One host: no inter-host links.
  std::vector<HostStats> hosts;
  // [src host][dst host], hosts x hosts; left out (empty) when the rank matrix is (large worlds).
  std::vector<std::vector<HostTraffic>> host_traffic;
  std::vector<IdleLink> idle_links;
  std::vector<PhaseStats> phases;  // as AnalysisOptions::phase_rows keeps them; by instance
  // The rows made but not kept in `phases` (AnalysisOptions::phase_rows), folded; by phase name.
  // Every phase row is in `phases` or here (none of either with AnalysisOptions::on_phase).
  std::vector<PhaseTotal> phases_left_out;
  std::vector<RankStats> ranks;
  StepInfo steps;
  std::vector<RankCpuStats> rank_cpu;  // by rank; empty without CPU samples or steps
  std::vector<HostCpuStats> host_cpu;  // hosts with CPU figures
  double alpha_s = -1, beta_s_per_byte = -1;    // fitted or from the topology; -1 unknown
  std::string model_source;                     // "topology", "fitted", ""
  // Why there is no model ("too few sizes to fit a model: ..."); empty when there is one.
  std::string model_note;
  std::vector<WhatIf> what_if;                  // per library of all-reduces (docs/whatif.md)
  std::vector<Finding> findings;                // most important first: the autopsy's first
  // The autopsy (hang.h, docs/analyzer.md): who hung or desynchronized the job, root causes
  // first; each is also a finding of its rule. Empty for a healthy trace.
  std::vector<hang::Verdict> autopsy;
  std::vector<std::string> warnings;
  int64_t transfers = 0;                        // transfer rows read (both sides)
  // Bytes sent over links with a known capacity / (their capacities x window): the share of the
  // available bandwidth used over the whole window; -1 when no capacity is known.
  double capacity_used_share = -1;
  // GPU (schema v2; empty for Gloo-only traces).
  std::vector<GpuStats> gpus;                   // per rank and device, by rank
  std::vector<ChannelTraffic> channel_traffic;  // by src, dst, channel
  int64_t gpu_activities = 0;                   // gpu_activity rows read in the window
  // The clock model the trace was read with (storage/clock_model.h): empty or one domain when
  // every rank shares one clock. Reports show it only with 2+ domains.
  storage::ClockModel clock;

  // Index into hosts of `rank`'s host, -1 if unknown (ranks is sorted by rank).
  int hostOf(int rank) const;
};

// How far two ranks' times can be off against each other because they come from different clock
// domains (storage::ClockModel::pairUncertaintyNs): the bound along the fit's tree of domains
// between their hosts, at most the sum of the two domains' uncertainty_ns; 0 for one domain (or
// one clock).
int64_t clockUncertaintyNs(const storage::ClockModel& clock, int rank_a, int rank_b);

bool analyze(storage::TraceReader& reader, const AnalysisOptions& options, Analysis* out,
             std::string* error);


// A/B: two analyses aligned by order and size, not wall time.
struct DiffRow {
  std::string op;
  int64_t size_lo = 0, size_hi = 0;
  int64_t count_a = 0, count_b = 0;
  int64_t median_a_ns = 0, median_b_ns = 0;
  double speedup = 0;     // median_a / median_b (> 1: B is faster)
  std::string verdict;    // "tree 1.8x faster below 64 KiB"; empty when not judged
  int64_t p10_a_ns = 0, p90_a_ns = 0, p10_b_ns = 0, p90_b_ns = 0;  // the spread of each side
  // What the change is worth: (median A - median B) x A's calls; > 0 when B saves time.
  int64_t at_stake_ns = 0;
  // "" when judged; else why not: too few calls on a side (kMinDiffSamples), or the medians'
  // difference is inside the run-to-run noise (each side's p10-p90 holds the other's median).
  std::string note;
  int64_t min_bytes = 0, max_bytes = 0;  // the calls' actual sizes, both sides (sizeText)
};

// Fewer calls than this on either side of a diff row: no verdict (the row says so).
inline constexpr int64_t kMinDiffSamples = 5;
struct DiffLinkRow {
  int src = -1, dst = -1;
  int64_t bytes_a = 0, bytes_b = 0, busy_a_ns = 0, busy_b_ns = 0;
};
struct DiffPhaseRow {
  std::string phase;
  int64_t total_a_ns = 0, total_b_ns = 0;
};
struct Diff {
  std::string label_a, label_b;
  int64_t aligned = 0, unmatched_a = 0, unmatched_b = 0;
  std::vector<DiffRow> rows;
  std::vector<DiffPhaseRow> phases;
  std::vector<DiffLinkRow> links;
  std::vector<std::string> verdicts;  // judged rows, the most time at stake first
  // Why there is no verdict (empty when there are verdicts): no op and size measured on both
  // sides, or how many were and why none could be judged (too few calls, inside the noise).
  std::string no_verdict;
  // The what-if checked: where B ran an algorithm A's what-if predicted (same library kind and
  // rank count), A's prediction per call beside B's measurement per call (docs/whatif.md).
  std::vector<std::string> what_if_checks;
};

void diff(const Analysis& a, const Analysis& b, const std::string& label_a, const std::string& label_b,
          Diff* out);

// The alignment diff() uses: per op and power-of-two size bucket (sizeBucketLo), the k-th
// instance of A in order of first_start_ns (ties: index order) pairs with the k-th of B.
// (index into a.collectives, index into b.collectives), by A's index.
std::vector<std::pair<int, int>> pairCollectives(const Analysis& a, const Analysis& b);

}  // namespace ringside::analyzer
