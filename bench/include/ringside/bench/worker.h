// ringside/bench/worker.h — one rank of `ringside bench`.
//
// Rendezvous on MASTER_ADDR:MASTER_PORT (RANK, WORLD_SIZE from the
// environment), a reference::Communicator and, for gloo rows, a Gloo context
// over the same rendezvous; α/β by ping-pong between ranks 0 and 1; then every
// size × algorithm: a checked call on fresh inputs, warm-up, timed calls.
// Rank 0 prints the table on stdout as rows finish and writes --json.
// Synchronisation and result gathering go through the Rendezvous, never through
// a collective, so the trace holds only the calls being measured.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ringside/bench/settings.h"
#include "ringside/storage/merge.h"

namespace ringside::bench {

// What a rank borrows from the command that runs it to merge the trace (the
// CLI's rank-file listing, and its merge with a progress line), so that this
// library needs nothing of the CLI.
struct TraceMerger {
  std::string tool_version;  // the merged trace's "tool_version" meta
  // The rank files directly inside `dir`, sorted; false + one line on error.
  std::function<bool(const std::string& dir, std::vector<std::string>* files,
                     std::string* error)>
      list_rank_files;
  // storage::mergeRankFiles; its warnings are printed prefixed "ringside bench: ".
  std::function<storage::MergeResult(storage::MergeOptions options)> merge;
};

// started_by_parent: `ringside bench --ranks N` started this rank (hidden
// --worker) and merges the trace itself. Otherwise an external launcher
// started it: with -o, each rank writes into <output>.ranks and rank 0 merges
// what that folder holds once every rank has closed its file.
// Returns the process exit status: 0 all rows correct, 1 a wrong element or an
// error (reported on stderr, naming the rank), 2 bad usage (kBenchExit*).
int runBenchRank(const BenchSettings& settings, bool started_by_parent,
                 const TraceMerger& merger);

// The local IPv4 address this host uses to reach `master` (loopback when
// `master` is a loopback address), for Gloo's TCP device; "" if unknown.
std::string localAddressToward(const std::string& master);

}  // namespace ringside::bench
