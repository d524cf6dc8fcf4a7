// analyzer/hang.h — who holds up a hung collective: the verdict of `ringside record`'s watchdog
// (live rings) and the autopsy (a trace's flight tables) alike. Pure: no I/O, no clock.
//
// The rule: on each communicator, the lowest seq that some rank has entered and not left is the
// stuck point. Ranks of the communicator that never entered it (their highest seq there is lower)
// are the culprits (`stuck`); when every member entered it but they disagree on op, bytes, dtype
// or root it is a `mismatch`; a culprit whose process ended is `exited`. Members are the ranks with
// a call on the communicator, plus 0..world_size-1 when the communicator spans the world.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/storage/records.h"

namespace ringside::analyzer {

struct HangRank {
  int32_t rank = -1;
  bool ended = false;                        // its process is gone (exit, signal, vanished)
  std::vector<storage::FlightCallRow> calls;  // its ring's calls (any order)
};

struct HangVerdict {
  enum class Kind { kNone, kStuck, kMismatch, kExited };
  Kind kind = Kind::kNone;
  std::string comm;
  int64_t seq = -1;
  std::string op;          // the op the waiting ranks entered
  int64_t bytes = -1;
  std::string dtype;
  int64_t step = storage::kNone;  // the waiting ranks' step marker at the call, kNone if none
  int64_t since_ns = 0;   // when the first waiting rank entered it (rank clock)
  std::vector<int32_t> culprits;  // ranks that never entered it (stuck, exited) or disagree
  std::vector<int32_t> waiting;   // ranks inside it
  // Each culprit's last call on comm ("allreduce #41 done"), for mismatch: what it entered.
  std::vector<std::string> culprit_calls;
};

// The verdict over the ranks' rings; kNone when no call is open.
HangVerdict judgeHang(const std::vector<HangRank>& ranks, int32_t world_size);

// "hang: rank 1 never entered allreduce #42 (comm gloo/3/0, 4096 bytes f32, step 5); ranks 0,2
// waiting for 5.0 s" — the one line the watchdog prints and stores. `now_ns` on the ranks' clock.
std::string verdictLine(const HangVerdict& v, int64_t now_ns);

}  // namespace ringside::analyzer
