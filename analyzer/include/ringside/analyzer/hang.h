// ringside/analyzer/hang.h — the autopsy of a hung or desynchronized job: which rank is to blame.
//
// judgeHang() is a pure function of the ranks' recent calls and messages and of their liveness.
// Two callers feed it: analyze() from a trace's tables (the tail of each rank's collectives and
// transfers, the flight record when there is one), and `ringside record`'s watchdog from the
// live per-rank states. Nothing here reads a file, prints or keeps state; no allocation grows
// beyond the input (rank lists in the text are written as ranges: "0-1233,1235-4095").
// Thread-safe (no shared state); never throws on odd input (unknown ranks, duplicate seqs,
// negative times are tolerated: a duplicate (rank, comm, seq) keeps the last one given).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ringside::analyzer::hang {

// Where one rank's call of a collective stands (flight_call.state, docs/schema.md).
enum class CallState { kQueued, kEntered, kTransferring, kDone, kFailed };
const char* callStateName(CallState state);  // "queued", "entered", ...
// "queued", ... -> *state; false (and *state untouched) for anything else.
bool parseCallState(std::string_view text, CallState* state);

// One rank's call of one collective.
struct Call {
  std::string comm;            // communicator id, equal across its ranks
  int64_t seq = -1;            // call number within comm: matches calls across ranks
  std::string op;              // allreduce, broadcast, allgather, ... (send/recv are not judged)
  std::string library;         // gloo, nccl, ...
  int64_t bytes = 0;           // this rank's payload
  std::string dtype;           // "" unknown
  int root = -1;               // rooted ops; -1 none
  CallState state = CallState::kEntered;
  int64_t enter_ns = -1;       // entered (one clock for all ranks: the caller aligns them)
  int64_t exit_ns = -1;        // returned or failed; -1 while open
  int64_t step = -1;           // training step, -1 unknown
  bool open() const { return state != CallState::kDone && state != CallState::kFailed; }
};

// One message of a collective, as one side saw it.
struct Message {
  std::string comm;
  int64_t seq = -1;            // the collective it belongs to; -1 unknown (not judged)
  int peer = -1;               // the other rank
  bool send = true;            // true: this rank sent it to peer; false: received from peer
  int64_t bytes = 0;
  int64_t posted_ns = -1;
  int64_t done_ns = -1;        // -1: never completed
};

// How a rank's process stands (or ended).
enum class Liveness {
  kRunning,   // alive as far as anyone knows (a live job, or a trace closed cleanly at its end)
  kExited,    // ended by itself: exit_status
  kSignaled,  // died of signal `signal`
  kCutOff,    // its record ends early without an end record (killed, crashed)
  kMissing,   // nothing of it was seen
};
const char* livenessName(Liveness liveness);  // "running", "exited", ...

struct Rank {
  int rank = -1;
  Liveness liveness = Liveness::kRunning;
  int exit_status = -1;        // kExited
  int signal = -1;             // kSignaled
  int64_t last_seen_ns = -1;   // its last recorded event; -1 unknown
  std::string detail;          // thread state, Python stack (flight_dump.detail): shown as given
  std::vector<Call> calls;     // its recent calls, any order (the tail is enough)
  std::vector<Message> messages;  // its recent messages, any order
  // false: its receives are not recorded (a trace of senders only), so a message sent to it
  // and not received says nothing (messages-undelivered is not judged for it).
  bool receives_recorded = true;
  // Where its record ends (its last row, its exit): a message it shows open is known open until
  // then, not after (ranks flushed at different times, a live rank merged). -1: until now_ns
  // (a live ring).
  int64_t seen_until_ns = -1;
};

// A link (or a peer) is blamed only for a wait no healthy one needs: a record can end (a dump, a
// kill, a closed recording window) while a message is merely in flight. A link is stalled, a
// message lost, a peer silent, only after waiting at least kStallFactor times the slowest
// delivery of a message of similar size the record shows (on any link: both ends posted ->
// the receive completed), and never less than Input::min_stall_ns. Shorter waits are "in
// flight at the end" and blame nobody. docs/analyzer.md ("The autopsy") gives the reasoning.
inline constexpr int64_t kMinStallNs = 1'000'000'000;  // 1 s: the default floor
inline constexpr int64_t kStallFactor = 4;

struct Input {
  std::vector<Rank> ranks;     // any order; at most one entry per rank id
  int64_t now_ns = -1;         // when judged (waits are measured to it); -1: the latest time seen
  // The floor of the wait that can blame a link or a peer (see kStallFactor). The watchdog,
  // which judges only after --hang-timeout without progress, passes the smaller of that and 1 s.
  int64_t min_stall_ns = kMinStallNs;
  // Ranks that belong to a communicator beyond those with calls on it (a rank that died before
  // recording any call): communicator -> ranks, each with an entry in `ranks`.
  std::map<std::string, std::vector<int>> members;
};

// The rule ids a Verdict carries: Finding::rule in the analyzer, stable in the JSON report.
inline constexpr std::string_view kStuckCollective = "stuck-collective";
inline constexpr std::string_view kCollectiveMismatch = "collective-mismatch";
inline constexpr std::string_view kRankExited = "rank-exited";
inline constexpr std::string_view kUndelivered = "messages-undelivered";  // sent, never received
inline constexpr std::string_view kNeverSent = "peer-never-sent";        // awaited, never sent

struct Verdict {
  std::string rule;            // one of the k* ids above
  std::vector<int> culprits;   // the ranks to blame (for kUndelivered: the receiving ranks)
  std::vector<int> waiting;    // the ranks left waiting in the collective
  std::string comm;
  int64_t seq = -1;
  std::string op;
  int64_t bytes = 0;
  int64_t step = -1;           // -1 unknown
  int64_t waited_ns = -1;      // the longest wait of a waiting rank, to now_ns or its failure
  int64_t entered_ns = -1;     // when the first waiting rank entered (for the viewer)
  std::vector<int> links_from; // kUndelivered: sending ranks, paired with culprits by index
  std::vector<std::string> sides;  // kCollectiveMismatch: "ranks 0-2: allreduce 4 KiB f32"
  std::vector<std::string> last_seen;  // per culprit: its last completed call, message, detail
  std::string message;         // one line, names the culprit, op, seq and step
  std::string evidence;        // the numbers behind it (one paragraph)
};

// The verdicts, root causes first: collective-mismatch, rank-exited, stuck-collective, then
// messages-undelivered and peer-never-sent. Empty for a healthy record: every collective
// completed, or only calls still open on every rank of their communicator while all are alive
// and their messages in flight (waits shorter than the stall bound above). At most one verdict
// per (rule, communicator).
std::vector<Verdict> judgeHang(const Input& input);

// True for the k* rule ids above (the autopsy's findings come first in every report).
bool isVerdictRule(std::string_view rule);

// "0-3,5,7,8" (runs of three or more as ranges) for sorted or unsorted ranks (duplicates dropped):
// summary.h's formatRankList, the form every report uses.
std::string rankRanges(std::vector<int> ranks);

}  // namespace ringside::analyzer::hang
