// analyzer/analysis_autopsy.cpp — the autopsy stage of analyze(): hang.h's verdicts on a trace.
// What the trace holds after a hang (docs/analyzer.md, "The autopsy"): the calls of the ranks
// that waited, never returned (end_ns NULL, when the merge read a live or killed rank's file) or
// failed (status 1, Gloo's timeout or a peer's reset); the rank that never joined has no row for
// that seq; a rank killed or crashed is in meta cut_off_ranks. The flight record, when the
// trace has one (docs/flight-recorder.md), adds what the trace rows lack: each rank's ring at
// its latest dump (calls still open there, their messages), how the rank ended (rank_exit) and
// what its dump said (flight_dump.detail).
#include "analysis_autopsy.h"

#include <algorithm>
#include <set>
#include <utility>

#include "ringside/analyzer/hang_flight.h"
#include "ringside/storage/trace_reader.h"

#include "analysis_state.h"
#include "findings_internal.h"

namespace ringside::analyzer::detail {

void AutopsyTails::add(const storage::CollectiveRow& row, int comm_id, int32_t instance,
                       std::string_view op, std::string_view dtype) {
  uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(row.rank)) << 32) |
                 static_cast<uint32_t>(comm_id);
  if (key != last_key_) {
    last_ring_ = &rings_[key];
    last_key_ = key;
  }
  Ring& ring = *last_ring_;
  AutopsyCall& c = ring.calls[static_cast<size_t>(ring.next)];
  ring.next = (ring.next + 1) % kTail;
  ring.count = std::min(ring.count + 1, kTail);
  c.instance = instance;
  c.root = row.root;
  c.failed = row.status != 0;
  c.start_ns = row.start_ns;
  c.end_ns = row.end_ns;
  c.bytes = row.bytes;
  c.op = row.op == op ? std::string() : std::string(row.op);
  c.dtype = row.dtype == dtype ? std::string() : std::string(row.dtype);
  if (unfinished.size() <= static_cast<size_t>(instance)) unfinished.resize(instance + 1, 0);
  if (c.failed || row.end_ns < row.start_ns) unfinished[static_cast<size_t>(instance)] = 1;
}

std::map<int, std::vector<const AutopsyTails::Ring*>> AutopsyTails::byRank() const {
  std::map<int, std::vector<const Ring*>> out;
  for (const auto& [key, ring] : rings_) out[static_cast<int>(key >> 32)].push_back(&ring);
  return out;
}

void autopsyTransfer(AnalysisState& s, const storage::TransferRow& row, bool send,
                     int32_t instance) {
  AutopsyState& a = s.autopsy;
  if (!send && row.dst_rank >= 0) {  // checked against the trace's ranks by the caller
    if (a.receives.size() <= static_cast<size_t>(row.dst_rank)) a.receives.resize(row.dst_rank + 1, 0);
    a.receives[static_cast<size_t>(row.dst_rank)] = 1;
  }
  const std::vector<char>& unfinished = a.tails.unfinished;
  if (static_cast<size_t>(instance) >= unfinished.size() || !unfinished[static_cast<size_t>(instance)]) return;
  const CollectiveInstance& c = s.out->collectives[static_cast<size_t>(instance)];
  hang::Message m;
  m.comm = c.comm;
  m.seq = c.seq;
  m.send = send;
  m.peer = send ? row.dst_rank : row.src_rank;
  m.bytes = row.bytes;
  m.posted_ns = row.start_ns;
  m.done_ns = row.end_ns >= row.start_ns ? row.end_ns : -1;
  a.messages[send ? row.src_rank : row.dst_rank].push_back(std::move(m));
}

namespace {

hang::Call toCall(const AutopsyCall& a, const CollectiveInstance& c) {
  hang::Call call;
  call.comm = c.comm;
  call.seq = c.seq;
  call.op = a.op.empty() ? c.op : a.op;
  call.library = c.library;
  call.bytes = a.bytes;
  call.dtype = a.dtype.empty() ? c.dtype : a.dtype;
  call.root = a.root;
  call.enter_ns = a.start_ns;
  bool returned = a.end_ns >= a.start_ns;
  call.exit_ns = returned ? a.end_ns : -1;
  call.state = a.failed ? hang::CallState::kFailed
                        : returned ? hang::CallState::kDone : hang::CallState::kEntered;
  call.step = c.step;
  return call;
}

hang::Liveness liveness(const TraceMeta& meta, int rank) {
  if (std::binary_search(meta.cut_off.begin(), meta.cut_off.end(), rank)) return hang::Liveness::kCutOff;
  if (std::binary_search(meta.missing.begin(), meta.missing.end(), rank)) return hang::Liveness::kMissing;
  return hang::Liveness::kRunning;
}

// Ranks of the world that recorded no call at all (cut off before their first flush, missing,
// or silent) are members of every communicator that, with them, spans the world: the world's.
void addSilentRanks(const AnalysisState& s, hang::Input* in) {
  std::set<int> with_calls, silent;
  std::map<std::string, std::set<int>> comm_ranks;
  for (const hang::Rank& r : in->ranks) {
    with_calls.insert(r.rank);
    for (const hang::Call& c : r.calls) comm_ranks[c.comm].insert(r.rank);
  }
  for (const std::vector<int>* list : {&s.meta.cut_off, &s.meta.missing}) silent.insert(list->begin(), list->end());
  for (const storage::RankInfo& info : s.infos) silent.insert(info.rank);
  for (int r : with_calls) silent.erase(r);
  if (silent.empty() || s.meta.world_size <= 0) return;
  for (int r : silent) {
    if (r < 0 || r >= s.meta.world_size) continue;
    hang::Rank rank;
    rank.rank = r;
    rank.liveness = liveness(s.meta, r);
    if (rank.liveness == hang::Liveness::kRunning) rank.liveness = hang::Liveness::kCutOff;
    in->ranks.push_back(std::move(rank));
  }
  for (const auto& [comm, ranks] : comm_ranks) {
    if (ranks.size() + silent.size() == static_cast<size_t>(s.meta.world_size)) {
      in->members[comm].assign(silent.begin(), silent.end());
    }
  }
}

// One rank's flight record: its ring at its latest dump, and how it ended.
struct FlightRank {
  int64_t dump = -1;  // the latest dump
  int64_t dump_ns = -1;  // the latest stamp's time
  std::string detail;  // "reason: detail" of its latest dump that said something
  std::vector<hang::Call> calls;
  std::vector<hang::Message> messages;
  bool exited = false, by_launcher = false;
  int exit_status = -1, signal = 0;
  int64_t exit_ns = -1;
};

struct FlightRecord {
  std::map<int, FlightRank> ranks;
  int64_t watchdog_ns = -1;  // the first watchdog dump: the verdict `record` printed (-1 none)
};

// The trace's flight tables (empty in traces without them). False on a read error.
bool readFlight(storage::TraceReader& reader, FlightRecord* out, std::string* error) {
  auto& ranks = out->ranks;
  bool ok = reader.forEachFlightDump([&](const storage::FlightDumpRow& d) {
    FlightRank& r = ranks[d.rank];
    r.dump = std::max(r.dump, d.dump);
    r.dump_ns = std::max(r.dump_ns, d.time_ns);
    if (!d.detail.empty() && d.reason != "watchdog") r.detail = d.reason + ": " + d.detail;
    if (d.reason == "watchdog" && d.time_ns >= 0 && (out->watchdog_ns < 0 || d.time_ns < out->watchdog_ns)) {
      out->watchdog_ns = d.time_ns;
    }
    return true;
  }, error);
  ok = ok && reader.forEachFlightCall([&](const storage::FlightCallRow& c) {
    auto r = ranks.find(c.rank);
    if (r != ranks.end() && c.dump == r->second.dump) r->second.calls.push_back(hang::fromFlight(c));
    return true;
  }, error);
  ok = ok && reader.forEachFlightMessage([&](const storage::FlightMessageRow& m) {
    auto r = ranks.find(m.rank);
    if (r != ranks.end() && m.dump == r->second.dump) r->second.messages.push_back(hang::fromFlight(m));
    return true;
  }, error);
  return ok && reader.forEachRankExit([&](const storage::RankExitRow& e) {
    FlightRank& r = ranks[e.rank];
    if (r.exited && r.by_launcher) return true;  // the launcher's word wins over the process's
    r.exited = true;
    r.by_launcher = e.source == "launcher";
    r.exit_status = e.exit_status;
    r.signal = e.signal;
    r.exit_ns = e.time_ns;
    return true;
  }, error);
}

// The ring's calls into the rank's: those the trace lacks, and those the trace left open that
// the ring saw end (the trace's step kept, the steps the analyzer found).
void mergeFlightCalls(std::vector<hang::Call>&& ring, hang::Rank* r) {
  std::map<std::pair<std::string, int64_t>, size_t> at;
  for (size_t i = 0; i < r->calls.size(); ++i) at[{r->calls[i].comm, r->calls[i].seq}] = i;
  for (hang::Call& c : ring) {
    auto it = at.find({c.comm, c.seq});
    if (it == at.end()) {
      r->calls.push_back(std::move(c));
    } else if (hang::Call& mine = r->calls[it->second]; mine.open() && !c.open()) {
      if (mine.step >= 0) c.step = mine.step;
      mine = std::move(c);
    }
  }
}

void mergeFlightRank(FlightRank&& f, hang::Rank* r) {
  mergeFlightCalls(std::move(f.calls), r);
  std::set<std::pair<std::string, int64_t>> traced;  // (comm, seq) with the trace's messages
  for (const hang::Message& m : r->messages) traced.insert({m.comm, m.seq});
  for (hang::Message& m : f.messages) {
    if (traced.contains({m.comm, m.seq})) continue;
    if (!m.send) r->receives_recorded = true;  // the ring keeps both directions
    r->messages.push_back(std::move(m));
  }
  if (r->detail.empty()) r->detail = std::move(f.detail);
}

// How the ranks ended, from rank_exit; the waits run to the last exit, when later than every
// call (a rank that waited until it was stopped waited that long).
void applyFlightExits(const FlightRecord& flight, hang::Input* in) {
  int64_t latest = -1, last_exit = -1;
  for (hang::Rank& r : in->ranks) {
    for (const hang::Call& c : r.calls) latest = std::max({latest, c.enter_ns, c.exit_ns});
    auto f = flight.ranks.find(r.rank);
    if (f == flight.ranks.end() || !f->second.exited) continue;
    last_exit = std::max(last_exit, f->second.exit_ns);
    // Stopped by `record --on-hang kill` after the watchdog's verdict: alive at the hang.
    if (flight.watchdog_ns >= 0 && f->second.exit_ns >= flight.watchdog_ns) {
      r.liveness = hang::Liveness::kRunning;
      continue;
    }
    hang::applyExit(f->second.exit_status, f->second.signal, &r);
  }
  if (last_exit > latest && latest >= 0) in->now_ns = last_exit;
}

// Where each rank's record ends: its last row, message or call time, its ring's last stamp, its
// exit. The autopsy takes what a rank shows open as known open only until then.
void setSeenUntil(const FlightRecord& flight, hang::Input* in) {
  for (hang::Rank& r : in->ranks) {
    int64_t t = r.last_seen_ns;
    for (const hang::Call& c : r.calls) t = std::max({t, c.enter_ns, c.exit_ns});
    for (const hang::Message& m : r.messages) t = std::max({t, m.posted_ns, m.done_ns});
    auto f = flight.ranks.find(r.rank);
    if (f != flight.ranks.end()) {
      t = std::max({t, f->second.dump_ns, f->second.exited ? f->second.exit_ns : -1});
    }
    r.seen_until_ns = t;
  }
}

hang::Input autopsyInput(AnalysisState& s) {
  std::map<int, hang::Rank> ranks;
  const std::vector<char>& receives = s.autopsy.receives;
  for (const auto& [rank, rings] : s.autopsy.tails.byRank()) {
    hang::Rank& r = ranks[rank];
    r.rank = rank;
    r.liveness = liveness(s.meta, rank);
    auto acc = s.rank_acc.find(rank);
    if (acc != s.rank_acc.end() && acc->second.events.any()) r.last_seen_ns = acc->second.events.last();
    for (const AutopsyTails::Ring* ring : rings) {
      for (int i = 0; i < ring->count; ++i) {
        const AutopsyCall& a = ring->calls[static_cast<size_t>(i)];
        r.calls.push_back(toCall(a, s.out->collectives[static_cast<size_t>(a.instance)]));
      }
    }
    auto messages = s.autopsy.messages.find(rank);
    if (messages != s.autopsy.messages.end()) r.messages = std::move(messages->second);
    r.receives_recorded = static_cast<size_t>(rank) < receives.size() && receives[static_cast<size_t>(rank)];
  }
  // A flight table that cannot be read leaves the autopsy to the trace's rows, as before it.
  FlightRecord flight;
  std::string ignored;
  if (!readFlight(s.reader, &flight, &ignored)) flight = FlightRecord();
  for (auto& [rank, f] : flight.ranks) {
    if (f.calls.empty() && !ranks.contains(rank)) continue;  // an exit alone: addSilentRanks
    hang::Rank& r = ranks[rank];
    if (r.rank < 0) r.liveness = liveness(s.meta, rank);
    r.rank = rank;
    mergeFlightRank(std::move(f), &r);
  }
  hang::Input in;
  for (auto& [rank, r] : ranks) in.ranks.push_back(std::move(r));
  addSilentRanks(s, &in);
  applyFlightExits(flight, &in);
  setSeenUntil(flight, &in);
  return in;
}

}  // namespace

void autopsyFindings(AnalysisState& s, std::vector<Finding>* findings) {
  s.out->autopsy = hang::judgeHang(autopsyInput(s));
  for (const hang::Verdict& v : s.out->autopsy) {
    Finding f = makeFinding(v.rule, v.message, v.evidence);
    if (v.waited_ns >= 0) f.cost_ns = v.waited_ns * static_cast<int64_t>(v.waiting.size());
    findings->push_back(std::move(f));
  }
}

}  // namespace ringside::analyzer::detail
