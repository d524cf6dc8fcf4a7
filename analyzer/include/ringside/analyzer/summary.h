// analyzer/summary.h — the short run summary `ringside record` prints.
//
// Computed in one streaming pass over a trace through storage::TraceReader;
// holds per-op, per-rank and per-link aggregates and one small record per
// collective instance (memory O(ranks^2 + instances), never O(transfer rows)). Nothing here prints: cli/ formats it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ringside::storage {
class TraceReader;
}

namespace ringside::analyzer {

struct OpTotals {
  std::string op;       // allreduce, broadcast, ...
  std::string library;  // gloo, ...
  // Per instance (one collective matched across ranks by communicator and sequence number),
  // the analyzer's definitions (docs/metrics.md):
  int64_t calls = 0;    // instances
  int64_t bytes = 0;    // sum of the instances' per-rank payloads (max over ranks)
  int64_t time_ns = 0;  // union of the instances' [last entry, last return]: wall time
  int64_t sum_ns = 0;   // sum of the instances' times (last return - last entry)
};

struct RankTotals {
  int rank = -1;
  std::string host;
  int64_t pid = 0;
  int64_t calls = 0;
  int64_t span_ns = 0;        // first collective start to last collective end
  int64_t comm_ns = 0;        // time inside collectives (union of intervals per rank)
  int64_t trace_span_ns = 0;  // rank's first to last recorded event (collectives and the
                              // transfers it recorded); comm_ns / trace_span_ns is its share
  bool cut_off = false;       // rank's file did not end cleanly
};

struct LinkTotals {
  int src = -1;
  int dst = -1;
  int64_t messages = 0;    // side = send rows (recv rows when it has no send rows)
  int64_t bytes = 0;       // side = send rows (recv rows when it has no send rows)
  int64_t busy_ns = 0;     // union of [start,end] of its recv rows (send rows without them)
  bool from_recv = false;  // the link had no send rows: the numbers come from its recv rows
};

struct Summary {
  int world_size = -1;
  int ranks_present = 0;
  std::vector<int> missing_ranks;
  std::vector<int> cut_off_ranks;
  std::vector<std::string> skipped_inputs;  // files the merge could not read (meta skipped_inputs)
  int64_t dropped_events = 0;              // sum of the drop counters in meta
  std::map<int, int64_t> dropped_by_rank;  // ranks that dropped events -> how many
  std::vector<std::string> warnings;       // e.g. "interposition inactive: ..."
  int64_t collectives = 0;                 // collective rows seen
  int64_t transfers = 0;                   // transfer rows seen
  std::vector<OpTotals> ops;               // sorted by time_ns descending
  std::vector<RankTotals> ranks;           // sorted by rank
  std::vector<LinkTotals> links;           // sorted by bytes descending (busiest first)
};

// Returns false and fills *error on a read error.
// Works on a merged trace (per-rank meta keys "rank.<r>.<key>") and on a
// single rank file (unprefixed keys).
bool summarize(storage::TraceReader& reader, Summary* out, std::string* error);

// "0-3,5,7-8": a sorted, de-duplicated, compact list of ranks.
std::string formatRankList(std::vector<int> ranks);

}  // namespace ringside::analyzer
