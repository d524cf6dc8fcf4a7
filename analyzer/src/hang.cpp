// analyzer/hang.cpp — judgeHang() (hang.h): the verdicts of the autopsy, from per-rank calls,
// messages and liveness. Stages, each over one communicator: index the calls by sequence number,
// find the first desync, find the first collective some rank never completed, then ask who is
// missing from it (never entered: stuck or dead) or, when everyone entered, which messages never
// arrived. docs/analyzer.md ("The autopsy") gives the rules in words.
#include "ringside/analyzer/hang.h"

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include "ringside/analyzer/summary.h"  // formatRankList
#include "ringside/format/units.h"

namespace ringside::analyzer::hang {

const char* callStateName(CallState state) {
  switch (state) {
    case CallState::kQueued: return "queued";
    case CallState::kEntered: return "entered";
    case CallState::kTransferring: return "transferring";
    case CallState::kDone: return "done";
    case CallState::kFailed: return "failed";
  }
  return "unknown";
}

bool parseCallState(std::string_view text, CallState* state) {
  for (CallState s : {CallState::kQueued, CallState::kEntered, CallState::kTransferring,
                      CallState::kDone, CallState::kFailed}) {
    if (text == callStateName(s)) {
      *state = s;
      return true;
    }
  }
  return false;
}

const char* livenessName(Liveness liveness) {
  switch (liveness) {
    case Liveness::kRunning: return "running";
    case Liveness::kExited: return "exited";
    case Liveness::kSignaled: return "signaled";
    case Liveness::kCutOff: return "cut off";
    case Liveness::kMissing: return "missing";
  }
  return "unknown";
}

bool isVerdictRule(std::string_view rule) {
  return rule == kStuckCollective || rule == kCollectiveMismatch || rule == kRankExited ||
         rule == kUndelivered || rule == kNeverSent;
}

std::string rankRanges(std::vector<int> ranks) { return formatRankList(std::move(ranks)); }

namespace {

// A rank's Input entry and its calls on one communicator, by seq.
struct Member {
  const Rank* rank = nullptr;
  std::map<int64_t, const Call*> calls;
  int64_t max_seq() const { return calls.empty() ? -1 : calls.rbegin()->first; }
  const Call* at(int64_t seq) const {
    auto it = calls.find(seq);
    return it == calls.end() ? nullptr : it->second;
  }
};
using Comm = std::map<int, Member>;  // rank id -> member

bool pointToPoint(std::string_view op) { return op == "send" || op == "recv"; }
// Ops whose per-rank size differs by design (docs/schema.md, `bytes` per op).
bool sizePerRank(std::string_view op) {
  return op == "gather" || op == "scatter" || (!op.empty() && op.back() == 'v');
}
bool alive(const Rank& r) { return r.liveness == Liveness::kRunning; }

std::string ranksWord(const std::vector<int>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rankRanges(ranks);
}

std::string describe(const Call& c) {
  std::string out = c.op + " " + format::bytes(c.bytes);
  if (!c.dtype.empty()) out += " " + c.dtype;
  if (c.root >= 0) out += " root " + std::to_string(c.root);
  return out;
}

std::string where(const Verdict& v) {
  std::string out = v.op + " #" + std::to_string(v.seq) + " (" + format::bytes(v.bytes);
  if (v.step >= 0) out += ", step " + std::to_string(v.step);
  return out + ")";
}

int64_t latestTime(const Input& in) {
  int64_t t = -1;
  for (const Rank& r : in.ranks) {
    t = std::max(t, r.last_seen_ns);
    for (const Call& c : r.calls) t = std::max({t, c.enter_ns, c.exit_ns});
    for (const Message& m : r.messages) t = std::max({t, m.posted_ns, m.done_ns});
  }
  return t;
}

// Where a culprit was last seen: its last completed call (any communicator), an open call on
// another communicator, its last message, and the detail its dump gave.
std::string lastSeen(const Rank& r, const Verdict& v) {
  const Call* done = nullptr;
  const Call* open_elsewhere = nullptr;
  for (const Call& c : r.calls) {
    if (!c.open() && (done == nullptr || c.exit_ns > done->exit_ns)) done = &c;
    if (c.open() && c.comm != v.comm) open_elsewhere = &c;
  }
  const Message* last = nullptr;
  for (const Message& m : r.messages) {
    int64_t t = std::max(m.done_ns, m.posted_ns);
    if (last == nullptr || t > std::max(last->done_ns, last->posted_ns)) last = &m;
  }
  std::string out = "rank " + std::to_string(r.rank) + " (" + livenessName(r.liveness);
  if (r.liveness == Liveness::kExited) out += ", status " + std::to_string(r.exit_status);
  if (r.liveness == Liveness::kSignaled) out += ", signal " + std::to_string(r.signal);
  out += "): ";
  auto ago = [&](int64_t t) {
    return v.entered_ns >= 0 && t >= 0 ? " " + format::duration(std::abs(v.entered_ns - t)) +
                                             (t <= v.entered_ns ? " before" : " after") +
                                             " the others entered"
                                       : std::string();
  };
  if (done != nullptr) {
    out += "last completed " + done->op + " #" + std::to_string(done->seq) + " on " + done->comm +
           ago(done->exit_ns);
  } else {
    out += "no completed call recorded";
  }
  if (open_elsewhere != nullptr) {
    out += "; inside " + open_elsewhere->op + " #" + std::to_string(open_elsewhere->seq) +
           " on " + open_elsewhere->comm + " since" + ago(open_elsewhere->enter_ns);
  }
  if (last != nullptr) {
    out += std::string("; last message ") + (last->send ? "sent to" : "received from") +
           " rank " + std::to_string(last->peer) + ago(std::max(last->done_ns, last->posted_ns));
  }
  if (!r.detail.empty()) out += "; " + r.detail;
  return out;
}

// The first sequence number where the ranks called different things; false when none.
bool findMismatch(const std::string& name, const Comm& comm, Verdict* v) {
  std::map<int64_t, std::map<std::string, std::vector<int>>> by_seq;
  for (const auto& [rank, m] : comm) {
    for (const auto& [seq, c] : m.calls) {
      std::string sig = c->op + '|' + (sizePerRank(c->op) ? "" : std::to_string(c->bytes)) + '|' +
                        c->dtype + '|' + std::to_string(c->root);
      by_seq[seq][sig].push_back(rank);
    }
  }
  for (const auto& [seq, sigs] : by_seq) {
    if (sigs.size() < 2) continue;
    // The side with the most ranks (ties: the one holding the lowest rank) is taken as right.
    const std::vector<int>* majority = nullptr;
    for (const auto& [sig, ranks] : sigs) {
      if (majority == nullptr || ranks.size() > majority->size() ||
          (ranks.size() == majority->size() && ranks.front() < majority->front())) {
        majority = &ranks;
      }
    }
    v->rule = kCollectiveMismatch;
    v->comm = name;
    v->seq = seq;
    const Call* right = comm.at(majority->front()).at(seq);
    v->op = right->op;
    v->bytes = right->bytes;
    v->step = right->step;
    // No side has more ranks than every other: none is taken as right, each is to blame.
    bool tie = false;
    for (const auto& [sig, ranks] : sigs) tie = tie || (&ranks != majority && ranks.size() == majority->size());
    v->waiting = *majority;
    v->sides.push_back(ranksWord(*majority) + ": " + describe(*right));
    for (const auto& [sig, ranks] : sigs) {
      if (&ranks == majority) continue;
      v->sides.push_back(ranksWord(ranks) + ": " + describe(*comm.at(ranks.front()).at(seq)));
      v->culprits.insert(v->culprits.end(), ranks.begin(), ranks.end());
    }
    if (tie) v->culprits.insert(v->culprits.end(), majority->begin(), majority->end());
    std::sort(v->culprits.begin(), v->culprits.end());
    std::string others;
    for (size_t i = 1; i < v->sides.size(); ++i) others += (i > 1 ? "; " : "") + v->sides[i];
    const std::string step = v->step >= 0 ? " (step " + std::to_string(v->step) + ")" : "";
    v->message = "desync at #" + std::to_string(seq) + step + " on " + name + ": " + others +
                 " where " + v->sides[0];
    v->evidence = "at the same sequence point the ranks called a different op, size, dtype or root" +
                  std::string(tie ? " (as many ranks on each side: none is taken as right)" : "");
    return true;
  }
  return false;
}

// The first collective some rank of comm entered and never completed; -1 when none.
int64_t firstIncomplete(const Comm& comm) {
  int64_t first = -1;
  for (const auto& [rank, m] : comm) {
    for (const auto& [seq, c] : m.calls) {
      if (c->state == CallState::kDone || pointToPoint(c->op)) continue;
      if (first < 0 || seq < first) first = seq;
      break;  // calls are by seq: the first not done is this rank's earliest
    }
  }
  return first;
}

// Fills where, waiting ranks and how long they waited at seq.
void describeWait(const std::string& name, const Comm& comm, int64_t seq, int64_t now,
                  Verdict* v) {
  v->comm = name;
  v->seq = seq;
  for (const auto& [rank, m] : comm) {
    const Call* c = m.at(seq);
    if (c == nullptr) continue;
    if (v->op.empty() || c->bytes > v->bytes) v->bytes = c->bytes;
    if (v->op.empty()) v->op = c->op;
    if (v->step < 0) v->step = c->step;
    if (c->state == CallState::kDone) continue;
    v->waiting.push_back(rank);
    int64_t until = c->open() ? now : c->exit_ns;
    if (c->enter_ns >= 0 && until >= c->enter_ns) v->waited_ns = std::max(v->waited_ns, until - c->enter_ns);
    if (c->enter_ns >= 0 && (v->entered_ns < 0 || c->enter_ns < v->entered_ns)) v->entered_ns = c->enter_ns;
  }
}

void addLastSeen(const Comm& comm, Verdict* v) {
  for (int r : v->culprits) v->last_seen.push_back(lastSeen(*comm.at(r).rank, *v));
  v->evidence = ranksWord(v->waiting) + " waited up to " + format::duration(v->waited_ns);
  for (const std::string& s : v->last_seen) v->evidence += "; " + s;
}

// Ranks of comm that never entered seq (their last call on comm is before it): those that
// ended make a rank-exited verdict, the others a stuck-collective one.
void missingRanks(const std::string& name, const Comm& comm, int64_t seq, int64_t now,
                  std::vector<Verdict>* out) {
  Verdict base;
  describeWait(name, comm, seq, now, &base);
  Verdict dead = base, stuck = base;
  for (const auto& [rank, m] : comm) {
    bool ended = !alive(*m.rank);
    const Call* c = m.at(seq);
    if (m.max_seq() < seq) (ended ? dead : stuck).culprits.push_back(rank);
    // died inside (a queued NCCL call is not inside: its API returned and may have completed)
    else if (ended && c != nullptr && c->open() && c->state != CallState::kQueued) dead.culprits.push_back(rank);
  }
  if (!dead.culprits.empty()) {
    dead.rule = kRankExited;
    addLastSeen(comm, &dead);
    dead.message = ranksWord(dead.culprits) + " ended while " + ranksWord(dead.waiting) +
                   " waited for it in " + where(dead) + " for " + format::duration(dead.waited_ns);
    out->push_back(std::move(dead));
  }
  if (!stuck.culprits.empty()) {
    stuck.rule = kStuckCollective;
    addLastSeen(comm, &stuck);
    stuck.message = ranksWord(stuck.culprits) + " never entered " + where(stuck) + " on " + name +
                    "; " + ranksWord(stuck.waiting) + " waited " + format::duration(stuck.waited_ns);
    out->push_back(std::move(stuck));
  }
}

// Everyone entered seq and it did not complete: which messages never arrived.
void undelivered(const std::string& name, const Comm& comm, int64_t seq, int64_t now,
                 std::vector<Verdict>* out) {
  // (src, dst) -> bytes sent and completed / received and completed / receives left open /
  // sends left open.
  std::map<std::pair<int, int>, int64_t> sent, received, awaited, sending;
  std::set<int> awaiting;  // ranks with a receive left open
  for (const auto& [rank, m] : comm) {
    for (const Message& msg : m.rank->messages) {
      if (msg.comm != name || msg.seq != seq) continue;
      std::pair<int, int> link = msg.send ? std::make_pair(rank, msg.peer) : std::make_pair(msg.peer, rank);
      if (msg.send && msg.done_ns >= 0) sent[link] += msg.bytes;
      if (msg.send && msg.done_ns < 0) sending[link] += std::max<int64_t>(msg.bytes, 1);
      if (!msg.send && msg.done_ns >= 0) received[link] += msg.bytes;
      if (!msg.send && msg.done_ns < 0) {
        awaited[link] += std::max<int64_t>(msg.bytes, 1);
        awaiting.insert(rank);
      }
    }
  }
  Verdict lost, silent;
  describeWait(name, comm, seq, now, &lost);
  describeWait(name, comm, seq, now, &silent);
  for (const auto& [link, bytes] : sent) {
    auto receiver = comm.find(link.second);
    if (receiver == comm.end() || !receiver->second.rank->receives_recorded) continue;
    auto got = received.find(link);
    if (got == received.end() || got->second < bytes) {
      lost.links_from.push_back(link.first);
      lost.culprits.push_back(link.second);
    }
  }
  for (const auto& [link, bytes] : awaited) {
    if (!comm.contains(link.first)) continue;
    // Nothing sent on the link in this call; or everything sent was received, the sender's
    // next sends there were posted and never completed, and the sender itself waits for no one
    // (a cable cut while a message was on its way: the receiver waits, the sender is stuck in
    // its send, and the ranks behind them wait on each other, not on the link).
    auto bytesOn = [&link](const std::map<std::pair<int, int>, int64_t>& by_link) {
      auto it = by_link.find(link);
      return it == by_link.end() ? int64_t{0} : it->second;
    };
    const bool stuck_sending = sending.contains(link) && !awaiting.contains(link.first) &&
                               bytesOn(sent) <= bytesOn(received);
    if (sent.contains(link) && !stuck_sending) continue;
    silent.culprits.push_back(link.first);
  }
  if (!lost.culprits.empty()) {
    lost.rule = kUndelivered;
    std::string links;
    for (size_t i = 0; i < lost.culprits.size(); ++i) {
      links += (i ? "," : "") + std::to_string(lost.links_from[i]) + "->" + std::to_string(lost.culprits[i]);
    }
    lost.message = "link(s) " + links + " stopped delivering in " + where(lost) + " on " + name +
                   ": sent, never received";
    lost.evidence = "the senders' messages completed, the receivers never got them (a link or "
                    "the receiving rank's progress); waited up to " + format::duration(lost.waited_ns);
    out->push_back(std::move(lost));
  }
  std::sort(silent.culprits.begin(), silent.culprits.end());
  silent.culprits.erase(std::unique(silent.culprits.begin(), silent.culprits.end()), silent.culprits.end());
  if (!silent.culprits.empty()) {
    silent.rule = kNeverSent;
    addLastSeen(comm, &silent);
    silent.message = ranksWord(silent.culprits) + " entered " + where(silent) + " on " + name +
                     " but never sent what the others wait for";
    out->push_back(std::move(silent));
  }
}

int order(std::string_view rule) {
  if (rule == kCollectiveMismatch) return 0;
  if (rule == kRankExited) return 1;
  if (rule == kStuckCollective) return 2;
  return rule == kUndelivered ? 3 : 4;
}

}  // namespace

std::vector<Verdict> judgeHang(const Input& input) {
  std::map<std::string, Comm> comms;
  for (const Rank& r : input.ranks) {
    for (const Call& c : r.calls) {
      if (pointToPoint(c.op) || c.seq < 0) continue;
      Member& m = comms[c.comm][r.rank];
      m.rank = &r;
      m.calls[c.seq] = &c;
    }
  }
  for (const auto& [name, ranks] : input.members) {
    for (int id : ranks) {
      for (const Rank& r : input.ranks) {
        if (r.rank == id) comms[name][id].rank = &r;
      }
    }
  }
  const int64_t now = input.now_ns >= 0 ? input.now_ns : latestTime(input);
  std::vector<Verdict> out;
  for (const auto& [name, comm] : comms) {
    Verdict mismatch;
    int64_t seq = firstIncomplete(comm);
    if (findMismatch(name, comm, &mismatch) && (seq < 0 || mismatch.seq <= seq)) {
      Verdict wait;  // how long the ranks waited there; the sides stay as findMismatch made them
      describeWait(name, comm, mismatch.seq, now, &wait);
      mismatch.waited_ns = wait.waited_ns;
      mismatch.entered_ns = wait.entered_ns;
      if (wait.waited_ns >= 0) mismatch.evidence += "; the ranks waited up to " + format::duration(wait.waited_ns);
      out.push_back(std::move(mismatch));
      continue;
    }
    if (seq < 0) continue;
    size_t before = out.size();
    missingRanks(name, comm, seq, now, &out);
    if (out.size() == before) undelivered(name, comm, seq, now, &out);
  }
  std::stable_sort(out.begin(), out.end(), [](const Verdict& a, const Verdict& b) {
    return order(a.rule) < order(b.rule);
  });
  return out;
}

}  // namespace ringside::analyzer::hang
