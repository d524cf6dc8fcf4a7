// analyzer/hang.cpp — judgeHang() (hang.h): the verdicts of the autopsy, from per-rank calls,
// messages and liveness. Stages, each over one communicator: index the calls by sequence number,
// find the first desync, find the first collective some rank never completed, then ask who is
// missing from it (never entered: stuck or dead) or, when everyone entered, which messages never
// arrived (a wait counts only past the stall bound: hang_delivery.h). docs/analyzer.md ("The
// autopsy") gives the rules in words.
#include "ringside/analyzer/hang.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "hang_delivery.h"

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

// What one link (sender, receiver) of a collective carried, as both ends saw it.
struct LinkFlow {
  int64_t sent = 0, received = 0;  // bytes whose send / receive completed
  int sends_open = 0, receives_open = 0;
  int64_t send_posted = -1, receive_posted = -1;  // the earliest open send / receive posted
  bool posted_unknown = false;     // an open message without its posting time
  int64_t open_bytes = 0;          // the largest open message
  std::vector<const Message*> sends_done;

  void add(const Message& m) {
    const bool done = m.done_ns >= 0;
    if (done) {
      (m.send ? sent : received) += m.bytes;
      if (m.send) sends_done.push_back(&m);
      return;
    }
    ++(m.send ? sends_open : receives_open);
    open_bytes = std::max(open_bytes, m.bytes);
    int64_t& posted = m.send ? send_posted : receive_posted;
    if (m.posted_ns < 0) posted_unknown = true;
    else if (posted < 0 || m.posted_ns < posted) posted = m.posted_ns;
  }
};
using Link = std::pair<int, int>;  // (sender, receiver)

// A link that stopped: sent and never received (the sender's send completed), or stalled (a send
// and its receive both posted and neither completed, with everything sent before received).
enum class LinkFault { kNone, kLost, kStalled };

// True when `rank` is a member of comm whose receives are recorded (Rank::receives_recorded):
// only then does a message it has not received say anything.
bool recordsReceives(const Comm& comm, int rank) {
  auto it = comm.find(rank);
  return it != comm.end() && it->second.rank != nullptr && it->second.rank->receives_recorded;
}

LinkFault linkFault(const Comm& comm, const Link& link, const LinkFlow& f) {
  if (!recordsReceives(comm, link.second)) return LinkFault::kNone;
  if (f.sent > f.received) return LinkFault::kLost;
  return f.sends_open > 0 && f.receives_open > 0 ? LinkFault::kStalled : LinkFault::kNone;
}

// Since when a link's fault or a wait has lasted, and the bytes it waits for; since -1: unknown
// (never judged). A loss runs from the completion of the first send never received (the sends
// in posting order, the received bytes taken from the front); a stall from both ends having
// posted their oldest open message; a wait from the waiting end's oldest open message.
struct Waiting {
  int64_t since = -1, bytes = 0;
  int64_t until = -1;  // how far the record of both ends reaches (knownUntil)
  int64_t lasted() const { return until - since; }
};

Waiting lostSince(LinkFlow& f) {
  std::sort(f.sends_done.begin(), f.sends_done.end(),
            [](const Message* a, const Message* b) { return a->posted_ns < b->posted_ns; });
  int64_t sent = 0;
  for (const Message* m : f.sends_done) {
    sent += m->bytes;
    if (sent > f.received) return {m->done_ns, m->bytes};
  }
  return {};
}

Waiting openSince(const LinkFlow& f, bool sender, bool receiver) {
  if (f.posted_unknown) return {};
  int64_t since = -1;
  for (const auto& [wanted, posted] :
       {std::pair{sender, f.send_posted}, std::pair{receiver, f.receive_posted}}) {
    if (!wanted) continue;
    if (posted < 0) return {};
    since = std::max(since, posted);
  }
  return {since, f.open_bytes};
}

// Judges waits against the stall bound (hang.h, kStallFactor): long enough to blame someone.
struct StallBound {
  const detail::DeliveryTimes& times;
  int64_t now = -1, floor_ns = kMinStallNs;
  int64_t bound(const Waiting& w) const { return times.bound(w.bytes, floor_ns); }
  bool longEnough(const Waiting& w) const { return w.since >= 0 && w.lasted() >= bound(w); }
};

// How far the records of ranks a and b both reach (Rank::seen_until_ns, now for a live one):
// a message open at the end of one rank's record may have completed after it.
int64_t knownUntil(const Comm& comm, int a, int b, int64_t now) {
  int64_t until = now;
  for (int r : {a, b}) {
    auto it = comm.find(r);
    const Rank* rank = it == comm.end() ? nullptr : it->second.rank;
    if (rank != nullptr && rank->seen_until_ns >= 0) until = std::min(until, rank->seen_until_ns);
  }
  return until;
}

// The ranks to blame for waits no stopped link explains, from the wait-for graph of the ranks
// in the call (a rank waits on a peer whose message it awaits, or on a peer that has not posted
// the receive of its open send). A rank that waits on nothing but is waited on never sent what
// the others wait for; every rank behind it, or behind a stopped link's ends (`held`), is
// explained. Ranks left over wait only on each other: those on the cycles (and between them)
// are named, the ranks merely queued behind a cycle are peeled off (nobody left waits on them).
std::vector<int> silentRanks(const std::map<int, std::set<int>>& waits_on, const std::set<int>& held) {
  std::set<int> silent, resolved(held.begin(), held.end());
  std::map<int, std::vector<int>> waited_by;
  for (const auto& [r, peers] : waits_on) {
    for (int p : peers) {
      waited_by[p].push_back(r);
      if (!held.contains(p) && !waits_on.contains(p)) silent.insert(p);
    }
  }
  resolved.insert(silent.begin(), silent.end());
  std::vector<int> todo(resolved.begin(), resolved.end());
  while (!todo.empty()) {  // everyone behind a root is explained by it
    int p = todo.back();
    todo.pop_back();
    auto it = waited_by.find(p);
    if (it == waited_by.end()) continue;
    for (int r : it->second) {
      if (resolved.insert(r).second) todo.push_back(r);
    }
  }
  std::map<int, int> waiters;  // left rank -> left ranks waiting on it
  for (const auto& [r, peers] : waits_on) {
    if (resolved.contains(r)) continue;
    waiters.try_emplace(r, 0);
    for (int p : peers) ++waiters[p];  // p is left too: r reaches no root, so neither does p
  }
  for (const auto& [r, n] : waiters) {
    if (n == 0) todo.push_back(r);
  }
  while (!todo.empty()) {  // peel the ranks nobody left waits on: they queue behind the rest
    int r = todo.back();
    todo.pop_back();
    waiters.erase(r);
    for (int p : waits_on.at(r)) {
      auto it = waiters.find(p);
      if (it != waiters.end() && --it->second == 0) todo.push_back(p);
    }
  }
  std::vector<int> out(silent.begin(), silent.end());
  for (const auto& [r, n] : waiters) out.push_back(r);
  std::sort(out.begin(), out.end());
  return out;
}

std::string linkList(const std::vector<Link>& links) {
  constexpr size_t kShown = 16;
  std::string out;
  for (size_t i = 0; i < links.size() && i < kShown; ++i) {
    out += (i ? "," : "") + std::to_string(links[i].first) + "->" + std::to_string(links[i].second);
  }
  if (links.size() > kShown) out += " and " + std::to_string(links.size() - kShown) + " more";
  return out;
}

// The one rank every link touches, when there are several links and exactly one such rank
// (a rank's cable, NIC or host); -1 otherwise.
int commonEnd(const std::vector<Link>& links) {
  if (links.size() < 2) return -1;
  int found = -1;
  for (int candidate : {links[0].first, links[0].second}) {
    bool all = std::all_of(links.begin(), links.end(), [candidate](const Link& l) {
      return l.first == candidate || l.second == candidate;
    });
    if (all && found >= 0) return -1;
    if (all) found = candidate;
  }
  return found;
}

// The links of one collective as they read at the record's end: stopped (a fault that lasted
// past the stall bound), in flight (one that had not: nobody is blamed), and who waits on whom
// for longer than the bound. A stopped link's ends, and a rank waiting only on what is in
// flight, are explained (`held`): nobody behind them is taken for a silent peer.
struct LinkReading {
  std::vector<Link> stopped;
  int lost = 0;                   // of them, sent and never received
  int64_t least_stop_ns = -1;     // the shortest stop among them, and the bound it passed
  int64_t least_stop_bound_ns = -1;
  std::vector<Link> in_flight;
  int64_t in_flight_ns = -1;      // the longest of their waits
  std::set<int> held;
  std::map<int, std::set<int>> waits_on;  // rank -> the peers it waited on past the bound
};

LinkReading readLinks(const Comm& comm, std::map<Link, LinkFlow>& flows, const StallBound& stall) {
  LinkReading out;
  std::set<int> in_flight_waiters;
  for (auto& [link, f] : flows) {
    if (!comm.contains(link.first)) continue;
    const LinkFault fault = linkFault(comm, link, f);
    if (fault != LinkFault::kNone) {
      Waiting w = fault == LinkFault::kLost ? lostSince(f) : openSince(f, true, true);
      w.until = knownUntil(comm, link.first, link.second, stall.now);
      if (!stall.longEnough(w)) {
        out.in_flight.push_back(link);
        if (w.since >= 0) out.in_flight_ns = std::max(out.in_flight_ns, w.lasted());
        in_flight_waiters.insert(link.second);
        if (fault == LinkFault::kStalled) in_flight_waiters.insert(link.first);  // its send is open
        continue;
      }
      out.stopped.push_back(link);
      out.lost += fault == LinkFault::kLost ? 1 : 0;
      out.held.insert({link.first, link.second});
      if (out.least_stop_ns < 0 || w.lasted() < out.least_stop_ns) {
        out.least_stop_ns = w.lasted();
        out.least_stop_bound_ns = stall.bound(w);
      }
      continue;
    }
    auto wait = [&](int waiter, int peer, Waiting w) {
      w.until = knownUntil(comm, waiter, peer, stall.now);
      if (stall.longEnough(w)) out.waits_on[waiter].insert(peer);
      else in_flight_waiters.insert(waiter);
    };
    if (f.receives_open > 0) wait(link.second, link.first, openSince(f, false, true));
    if (f.sends_open > 0 && f.receives_open == 0 && recordsReceives(comm, link.second)) {
      // its peer has not posted the receive
      wait(link.first, link.second, openSince(f, true, false));
    }
  }
  for (int r : out.held) out.waits_on.erase(r);  // a stopped link's ends are explained by it
  for (int r : in_flight_waiters) {
    if (!out.waits_on.contains(r)) out.held.insert(r);
  }
  return out;
}

// "; link(s) 0->2 in flight at the end ...": what was left unjudged, for a verdict's evidence.
std::string inFlightNote(const LinkReading& links) {
  if (links.in_flight.empty()) return "";
  std::string out = "; link(s) " + linkList(links.in_flight) + " in flight at the end";
  if (links.in_flight_ns >= 0) out += " (for at most " + format::duration(links.in_flight_ns) + ")";
  return out + ", under the stall bound: not judged";
}

void stoppedLinksVerdict(const std::string& name, const LinkReading& r, Verdict* v) {
  const std::vector<Link>& links = r.stopped;
  v->rule = kUndelivered;
  for (const Link& l : links) {
    v->links_from.push_back(l.first);
    v->culprits.push_back(l.second);
  }
  const int stalled = static_cast<int>(links.size()) - r.lost;
  const std::string how = stalled == 0 ? "sent, never received"
                          : r.lost == 0 ? "posted on both ends, never completed"
                                        : "sent and never received, or posted on both ends and never "
                                          "completed";
  v->message = "link(s) " + linkList(links) + " stopped delivering in " + where(*v) + " on " + name +
               ": " + how;
  if (int end = commonEnd(links); end >= 0) v->message += " (each touches rank " + std::to_string(end) + ")";
  v->evidence.clear();
  if (r.lost > 0) v->evidence = "the senders' messages completed, the receivers never got them";
  if (stalled > 0) {
    v->evidence += std::string(r.lost > 0 ? "; on other links " : "") +
                   "the sends and their receives were both posted and neither completed";
  }
  v->evidence += " (a cut link, a NIC or a host that stopped, or the receiving rank's progress); "
                 "each stopped for at least " + format::duration(r.least_stop_ns) +
                 ", past the stall bound of " + format::duration(r.least_stop_bound_ns) + " (" +
                 std::to_string(kStallFactor) +
                 "x the slowest delivery of a similar message, at least the floor); "
                 "the ranks waited up to " + format::duration(v->waited_ns) + inFlightNote(r);
}

// Everyone entered seq and it did not complete: which links stopped, else who never sent.
void undelivered(const std::string& name, const Comm& comm, int64_t seq, const StallBound& stall,
                 std::vector<Verdict>* out) {
  std::map<Link, LinkFlow> flows;
  for (const auto& [rank, m] : comm) {
    if (m.rank == nullptr) continue;
    for (const Message& msg : m.rank->messages) {
      if (msg.comm != name || msg.seq != seq) continue;
      flows[msg.send ? Link{rank, msg.peer} : Link{msg.peer, rank}].add(msg);
    }
  }
  const LinkReading links = readLinks(comm, flows, stall);
  if (!links.stopped.empty()) {
    Verdict v;
    describeWait(name, comm, seq, stall.now, &v);
    stoppedLinksVerdict(name, links, &v);
    out->push_back(std::move(v));
  }
  Verdict silent;
  describeWait(name, comm, seq, stall.now, &silent);
  silent.culprits = silentRanks(links.waits_on, links.held);
  if (!silent.culprits.empty()) {
    silent.rule = kNeverSent;
    addLastSeen(comm, &silent);
    silent.evidence += inFlightNote(links);
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
  std::optional<detail::DeliveryTimes> times;  // built once, when a collective's links are read
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
    if (out.size() != before) continue;
    if (!times) times.emplace(input);
    const StallBound stall{*times, now, std::max<int64_t>(0, input.min_stall_ns)};
    undelivered(name, comm, seq, stall, &out);
  }
  std::stable_sort(out.begin(), out.end(), [](const Verdict& a, const Verdict& b) {
    return order(a.rule) < order(b.rule);
  });
  return out;
}

}  // namespace ringside::analyzer::hang
