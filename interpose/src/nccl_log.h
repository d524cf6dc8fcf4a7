// Ring orders and trees from NCCL's own INFO log. NCCL tells its profiler
// plugin nothing about them, but with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS
// including INIT and GRAPH it prints, per communicator it creates:
//   host:pid:tid [dev] NCCL INFO Channel 00/02 :    0   1   2   3
//   host:pid:tid [dev] NCCL INFO Trees [0] 1/-1/-1->0->-1 [1] -1/-1/-1->0->1
//   host:pid:tid [dev] NCCL INFO ncclCommInitRank comm 0x... rank 0 nranks 4 ... commId 0x8a3b... - Init COMPLETE
// The channel and tree lines a thread printed before its "Init COMPLETE" line
// belong to the communicator that line names: "comm %p" is the ncclComm_t
// the application got (commId is a hash of the unique id, but not the one
// NCCL reports to its profiler).
// When NCCL_DEBUG_FILE names a file (`ringside record --nccl-log` sets one),
// the wrapper reads what this process appended after each communicator
// creation. Not the hot path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::interpose::nccl_log {

struct CommTopology {
  uint64_t comm = 0;               // the ncclComm_t ("comm 0x...") of the Init COMPLETE line
  uint64_t comm_id = 0;            // its "commId 0x..."
  std::vector<std::string> lines;  // "ring 0: 0 1 2 3", "tree 0: 1/-1/-1->0->-1"
};

// Incremental parser of one process's lines (others' pids are skipped).
class Parser {
 public:
  explicit Parser(long pid) : pid_(pid) {}
  // Feeds one line (without the newline). Returns true when it completed a
  // communicator, then taken with take().
  bool feed(const std::string& line);
  CommTopology take();

 private:
  long pid_;
  std::vector<std::pair<long, std::string>> pending_;  // (tid, line) awaiting their Init COMPLETE
  CommTopology done_;
};

// NCCL_DEBUG_FILE with NCCL's %h (host) and %p (pid) expanded; "" when the
// variable is unset or NCCL_DEBUG is not INFO/TRACE.
std::string debugFilePath();

// Reads what was appended to `path` since `*offset` (updated) and returns the
// communicators completed in it.
std::vector<CommTopology> readNew(const std::string& path, long pid, long* offset, Parser* parser);

}  // namespace ringside::interpose::nccl_log
