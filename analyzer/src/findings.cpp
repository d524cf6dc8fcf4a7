// analyzer/findings.cpp — the table of finding rules (findings.h). The rules' code lives with
// what it judges: analysis_findings.cpp, gpu_analysis.cpp.
#include "ringside/analyzer/findings.h"

#include "findings_internal.h"
#include "trace_meta.h"

namespace ringside::analyzer {

const std::vector<FindingRule>& findingRules() {
  static const std::vector<FindingRule> rules = {
      // The autopsy (hang.h): who hung or desynchronized the job. Always first in reports.
      {"collective-mismatch", "problem",
       "ranks called a different op, size, dtype or root at the same sequence point of a "
       "communicator (each side listed)",
       "find where the culprit's code path diverges before that call (a branch on rank or "
       "data, an uneven last batch, a collective skipped on an exception path)"},
      {"rank-exited", "problem",
       "a rank ended (exit status, signal, or cut off without an end record) while others "
       "were still in, or had entered, a collective it never completed",
       "read that rank's own log and exit status first: the others' timeouts are a "
       "consequence"},
      {"stuck-collective", "problem",
       "some ranks entered collective #seq and never completed it while a live rank never "
       "entered it (its last completed call, last message and dump are listed)",
       "see what the stuck rank was doing after its last completed call (its Python stack: "
       "py-spy dump --pid PID, or the flight record's dump; a data-loader deadlock, a branch "
       "that skips the collective)"},
      {"messages-undelivered", "problem",
       "every rank entered the collective and a link stopped: messages sent and never received, "
       "or sends and their receives both posted and never completed",
       "check the link between those hosts (drops, a firewall, a cut interface) and whether the "
       "receiving rank still makes progress"},
      {"peer-never-sent", "problem",
       "every rank entered the collective; a rank waits on a receive from a peer that never "
       "sent it",
       "see what the silent peer was doing inside the collective (its stack, its other "
       "threads)"},
      {"cut-off", "problem", "meta lists cut-off ranks (killed or crashed: their trace ends early)",
       "see why those ranks ended early (their logs, the OOM killer, the scheduler); figures "
       "after that point are one-sided"},
      {"still-running", "problem",
       "meta lists ranks whose process was still running when the trace was merged (their "
       "trace ends where the merge read it; nothing was killed)",
       "merge again once the job has ended (ringside merge -f FOLDER -o TRACE)"},
      {"missing-ranks", "problem", "meta lists missing ranks (no trace file)",
       "record every rank (each must start with the preload library) and merge all rank files"},
      {"interposition-inactive", "problem",
       "a rank's interposition meta starts with \"inactive\" (nothing recorded there)",
       "check that the rank's process loads libringside_preload.so and uses Gloo or NCCL"},
      {"late-ranks", "problem",
       "one rank caused >= 50% (and >= 1.5/ranks) of the waiting (blame: the others' waiting in "
       "the calls it entered last), that is >= 5% of their time, and (with steps) it computes "
       "longer than the others in the steps where it caused the most waiting",
       "look at what the late rank does between collectives (data loading, an uneven batch, a "
       "slower host or GPU)"},
      {"oversubscribed", "problem",
       "a host has more busy ranks (CPU time plus time waiting for a core >= 50% of their time "
       "outside collectives) than the cores they may use (sched_getaffinity, online CPUs)",
       "run at most one rank per core there (fewer ranks per host, or more cores: "
       "--cpus-per-task, taskset), or fewer threads per rank (OMP_NUM_THREADS, "
       "torch.set_num_threads)"},
      {"computes-more", "problem",
       "a rank's CPU time per step (all its threads) is >= 1.2x the other ranks' median, by >= "
       "1 ms and >= 5% of its step",
       ""},
      {"slow-link", "problem",
       "a link's bytes/busy is < 1/3 of the median of its phase group (>= 3 links, >= 1 MiB), "
       "beyond the spread of the others, and under 1/3 of the median in calls holding >= half "
       "of its bytes, >= a quarter without the largest (one call is never enough)",
       "check what else loads that path (other jobs, CPU load on its two hosts, the NIC or "
       "route); measure it alone with ringside bench"},
      {"waiting", "warning",
       "no late-ranks finding, but the ranks wait >= 20% of their collective time (and >= 2% "
       "of their span) for whichever rank arrives last",
       "compare the ranks' compute per step (the Training steps table): uneven batches, data "
       "loading or a shared, busy host make a different rank late each time"},
      {"algorithm", "warning",
       "the alpha-beta model predicts another all-reduce algorithm (ring, tree) >= 20% faster "
       "than the library's over the trace's sizes",
       ""},
      {"bucketing", "warning",
       "a training step's (or a burst's) >= 3 gradient all-reduces (>= 1 KiB: smaller ones are "
       "the job's own) where one all-reduce of their total size would take >= 20% less under "
       "the model; never on a bench trace, never advising a bucket_cap_mb below DDP's 25 or "
       "below the largest bucket seen",
       ""},
      {"low-busbw", "warning",
       "an (op, library)'s median expected/measured time is < 0.5 (the alpha-beta model), over "
       ">= 5 instances",
       "the links could move these bytes faster: look for waiting and CPU load on the ranks, "
       "and at the algorithm and bucketing findings"},
      {"idle-links", "warning",
       "links a topology file (or a second host) provides stay idle while the busiest is >= 50% "
       "busy and the collectives are bandwidth-bound",
       "use an algorithm or library that spreads traffic over those links (ringside record "
       "--allreduce tree), or check why they are unused"},
      {"dropped-events", "warning", "some rank dropped events (its event buffers were full)",
       "record again with a larger --buffer-mb (RINGSIDE_BUFFER_MB)"},
      {"failed-collectives", "warning", "some collective recorded status != 0 on some rank",
       "see the ranks' logs for the failing calls; their times are not comparable"},
      {"low-overlap", "warning",
       "NCCL kernels take >= 5% of a GPU's span and overlap compute < 25% of their time",
       "let communication overlap compute (DDP's gradient buckets during backward, NCCL on its "
       "own stream)"},
      {"cupti-busy", "warning", "another tool held CUPTI on some rank: no GPU activity there",
       "record without the other profiler (Nsight Systems, Kineto) holding CUPTI"},
      {"dropped-gpu-records", "warning", "some rank dropped GPU activity records (buffers full)",
       "record again with more RINGSIDE_CUPTI_BUFFERS or RINGSIDE_CUPTI_BUFFER_KB, and a larger "
       "--buffer-mb"},
      {"descheduled", "warning",
       "on a host that is not oversubscribed, a rank's CPU time is < 50% of its time outside "
       "collectives while it waits for a core >= 30% of that time and >= 2x the other ranks' "
       "median (without run delays: >= 10 involuntary context switches per step, >= 2x the "
       "others')",
       ""},
      {"clock-uncertainty", "warning",
       "a rank would be a late rank, but its median skew is within the clock uncertainty between "
       "its host and those of the ranks that arrived before it (2+ clock domains)",
       "synchronize the hosts' clocks (chrony, PTP) to tell late ranks from clock offsets"},
  };
  return rules;
}

const FindingRule* findingRule(std::string_view id) {
  for (const FindingRule& rule : findingRules()) {
    if (rule.id == id) return &rule;
  }
  return nullptr;
}

namespace detail {

Finding makeFinding(std::string_view rule, std::string message, std::string evidence) {
  // Every caller names a rule of the table; an unknown one would be a bug, shown loudly.
  const FindingRule* known = findingRule(rule);
  Finding f;
  f.severity = known ? known->severity : "problem";
  f.rule = rule;
  f.message = std::move(message);
  f.evidence = std::move(evidence);
  if (known != nullptr) f.action = known->action;
  return f;
}

void droppedFinding(const std::map<int, int64_t>& dropped, std::string_view rule,
                    std::string_view what, std::vector<Finding>* findings) {
  if (dropped.empty()) return;
  findings->push_back(makeFinding(rule, droppedTotal(dropped, what), droppedPerRank(dropped)));
}

}  // namespace detail
}  // namespace ringside::analyzer
