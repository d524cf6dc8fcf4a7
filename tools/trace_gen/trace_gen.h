// tools/trace_gen/trace_gen.h — synthetic traces in the real schema, for tests and benchmarks.
//
// N ranks on H hosts run C all-reduces (ring or binary tree) grouped into S training steps;
// every rank records its calls and the messages it sends, as the interposer would (RankWriter),
// one rank file per rank. Stragglers arrive late at every call; slow links take longer per byte.
// The message times follow the algorithm's data flow, so a straggler makes the others wait and a
// slow link delays what depends on it. A fault (GenFault) makes the job hang or desync at one
// call, as the autopsy (analyzer/hang.h) must name it. Deterministic for a given seed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ringside::gen {

// A hang or desync injected at call #seq (the job's last: no rank records a call after it).
//   stuck        `rank` never enters it; the others stay in it (their calls never return)
//   dead         `rank` dies before it (its file has no end record: cut off); the others' calls
//                fail 50 ms after they entered (a reset peer is noticed at once)
//   desync-op    `rank` calls allgather where the others call allreduce; no call returns
//   desync-size  `rank` passes twice the others' bytes; no call returns
//   cut          `rank`'s cable goes down as #seq begins: everyone enters it and waits until
//                its call fails 30 s later (Gloo's default timeout); on each link to or from
//                `rank` the first message is posted on both ends (a send row and a recv row)
//                and never completes
// Calls of #seq carry no other messages.
struct GenFault {
  std::string kind;  // "" none, or one of the above
  int rank = -1;
  int64_t seq = -1;
};

struct GenOptions {
  int ranks = 16;
  int hosts = 1;           // ranks are spread in contiguous blocks (host h: ranks h*N/H ...)
  bool tree = false;       // binary-tree all-reduce (reduce, then broadcast) instead of a ring
  int64_t collectives = 8;  // all-reduce calls per rank
  int64_t steps = 2;       // training steps the calls are grouped into (a compute gap between)
  int64_t bytes = 4 << 20;  // payload of each all-reduce, bytes
  double gbps = 10.0;       // link speed, GB/s (1 GB/s = 1 byte/ns)
  int64_t message_us = 5;   // fixed cost of a message, microseconds
  std::map<int, int64_t> stragglers;              // rank -> arrival delay at each call, us
  std::map<std::pair<int, int>, double> slow_links;  // (src, dst) -> time factor (>= 1)
  uint64_t seed = 1;
  bool receives = false;   // also record each message on its receiving rank
  bool fsync = true;       // false (--no-fsync): rank files are never fsynced (tests: 1,024 files)
  bool calls_only = false;  // no messages at all (`record --detail calls`): fast at many ranks
  bool node_folders = false;  // rank files into DIR/node-<host>/, as `record --nnodes` lays them out
  // Every host but host 0 gets clocks of its own, as real machines have: CLOCK_MONOTONIC hours
  // ahead (host h: h hours and up to 1 s), the wall clock up to 10 ms off. All of a rank's times
  // and anchors are on its host's clocks; hostClock() gives the offsets, for tests to check the
  // merge's alignment against.
  bool host_clocks = false;
  GenFault fault;
};

struct HostClock {
  int64_t monotonic_ns = 0;  // the host's CLOCK_MONOTONIC minus the generator's time line
  int64_t wall_ns = 0;       // the host's CLOCK_REALTIME minus the true wall time
};
HostClock hostClock(const GenOptions& o, int host);
// The host of rank r: ranks in contiguous blocks of ceil(ranks / hosts).
int hostOfRank(const GenOptions& o, int r);

// Parses "RANK:DELAY_US" and "A-B:FACTOR" (the command-line forms); false with *error.
bool parseStraggler(const std::string& text, GenOptions* o, std::string* error);
bool parseSlowLink(const std::string& text, GenOptions* o, std::string* error);
// Parses "KIND:RANK@SEQ" (stuck:5@3, dead:..., desync-op:..., desync-size:...).
bool parseFault(const std::string& text, GenOptions* o, std::string* error);

// Writes rank-<r>.sqlite for every rank into `dir` (which must exist; with node_folders into
// `dir`/node-<host>/, created); the paths go to *files.
// Returns false with a one-line *error.
bool writeRankFiles(const GenOptions& o, const std::string& dir, std::vector<std::string>* files,
                    std::string* error);

}  // namespace ringside::gen
