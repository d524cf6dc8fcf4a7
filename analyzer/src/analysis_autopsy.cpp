// analyzer/analysis_autopsy.cpp — the autopsy stage of analyze(): hang.h's verdicts on a trace.
// What the trace holds after a hang (docs/analyzer.md, "The autopsy"): the calls of the ranks
// that waited, never returned (end_ns NULL, when the merge read a live or killed rank's file) or
// failed (status 1, Gloo's timeout or a peer's reset); the rank that never joined has no row for
// that seq; a rank killed or crashed is in meta cut_off_ranks.
#include "analysis_autopsy.h"

#include <algorithm>
#include <set>

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

void autopsyTransfer(AnalysisState& s, const storage::TransferRow& row, int32_t instance) {
  AutopsyState& a = s.autopsy;
  bool send = row.side == "send";
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

hang::Input autopsyInput(AnalysisState& s) {
  hang::Input in;
  const std::vector<char>& receives = s.autopsy.receives;
  for (const auto& [rank, rings] : s.autopsy.tails.byRank()) {
    hang::Rank r;
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
    in.ranks.push_back(std::move(r));
  }
  addSilentRanks(s, &in);
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
