// analyzer/trace_meta.h — what a trace's meta table says about its ranks (world size, cut-off,
// missing and inactive ranks, drop counters, CUPTI state), read once for analyze() and
// summarize() alike, and the text both give dropped events.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/storage/records.h"

namespace ringside::analyzer::detail {

// What each rank's meta said about GPU recording.
struct GpuMeta {
  std::map<int, std::string> cupti;  // rank -> meta "cupti" ("recording (...)", "busy: ...", ...)
  std::map<int, int64_t> dropped;    // rank -> cupti_records_dropped + gpu_activity_dropped
};

// The largest world a trace may state (merge's limit too); a larger meta world_size is ignored.
inline constexpr int64_t kMaxWorldSize = int64_t{1} << 20;

struct TraceMeta {
  int world_size = -1;                               // meta world_size, else the ranks' largest
  std::vector<int> cut_off, missing;                 // sorted
  std::vector<int> live;  // meta live_ranks: their process still ran when merged (sorted)
  bool rank_file = false;  // a rank file read alone: `missing` are the world's other ranks
  std::map<int, int64_t> dropped;                    // rank -> events_dropped, ranks that dropped
  std::map<std::string, std::vector<int>> inactive;  // interposition "inactive..." -> ranks
  std::vector<std::string> skipped;  // merge meta skipped_inputs: files that could not be read
  // rank -> (wrapped calls, children) of its children forked without exec: not recorded
  std::map<int, std::pair<int64_t, int64_t>> forked;
  GpuMeta gpu;
  // The job's command line (meta command_line, else the lowest rank's), for try lines.
  std::string command_line;
  std::vector<std::string> warnings;  // meta values that were implausible or cut
};

// Why ranks are missing, when the merge skipped inputs: " (2 input files could not be read
// and were skipped: a.sqlite, b.sqlite)"; empty when none was skipped.
std::string skippedInputsNote(const std::vector<std::string>& skipped);

// Works on a merged trace (the merger's keys, per-rank keys "rank.<r>.<key>") and on a single
// rank file (unprefixed keys, the rank from `infos`).
TraceMeta readTraceMeta(const std::map<std::string, std::string>& meta,
                        const std::vector<storage::RankInfo>& infos);

// One line for the forked children's calls of `forked` (not empty): "rank 0: 5 calls in 2
// processes forked without exec were not recorded (...)".
std::string forkedChildrenText(const std::map<int, std::pair<int64_t, int64_t>>& forked);

// What ranks drop when their event buffers fill up.
inline constexpr std::string_view kDroppedEventsText = "events dropped (event buffers full)";

// "<total> <what>": "12 events dropped (event buffers full)".
std::string droppedTotal(const std::map<int, int64_t>& dropped, std::string_view what);
// Per rank, by rank: "5 on rank 1, 7 on rank 3".
std::string droppedPerRank(const std::map<int, int64_t>& dropped);

}  // namespace ringside::analyzer::detail
