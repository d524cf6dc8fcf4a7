// analyzer/analysis_call_rates.cpp — each link's rate in each call (analysis_call_rates.h), fed
// by the transfer pass.
#include "analysis_call_rates.h"

#include <algorithm>
#include <cmath>

#include "ringside/analyzer/collective_math.h"

namespace ringside::analyzer::detail {

RateSpread::RateSpread(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  median = percentile(rates, 0.5);
  for (double& rate : rates) rate = std::abs(rate - median);
  std::sort(rates.begin(), rates.end());
  spread = percentile(rates, 0.5);
}

void CallRates::add(int32_t instance, GroupTraffic& traffic, size_t link, bool send, int phase,
                    int64_t bytes, int64_t moving, int64_t end, bool done) {
  Call* call =
      pending_.get(instance, s_.out->collectives[static_cast<size_t>(instance)].last_end_ns);
  if (call == nullptr) return;
  // A new piece when the link's side turns to this instance (again, if calls interleave on it:
  // judgePhase adds up a link's pieces).
  if (traffic.call != instance) {
    traffic.call = instance;
    traffic.call_piece = static_cast<uint32_t>(call->size());
    call->push_back({static_cast<uint32_t>(link), phase, send, 0, {}});
  }
  Piece& piece = (*call)[traffic.call_piece];
  piece.bytes = addSaturated(piece.bytes, bytes);
  if (done) piece.busy.add(moving, end);
}

void CallRates::judgeAll() {
  pending_.all([this](int32_t instance, Call&& call) { judge(instance, call); });
}

void CallRates::judge(int32_t instance, const Call& call) {
  std::vector<int> phases;  // a call has one phase or a few
  for (const Piece& p : call) {
    if (std::find(phases.begin(), phases.end(), p.phase) == phases.end()) phases.push_back(p.phase);
  }
  if (rate_of_link_.size() < s_.links.size()) rate_of_link_.resize(s_.links.size(), -1);
  for (int phase : phases) judgePhase(instance, call, phase);
}

void CallRates::judgePhase(int32_t instance, const Call& call, int phase) {
  rates_.clear();
  for (const Piece& p : call) {
    if (p.phase != phase) continue;
    int32_t& index = rate_of_link_[p.link];
    if (index < 0) {
      index = static_cast<int32_t>(rates_.size());
      rates_.push_back({p.link, 0, 0, 0, 0});
    }
    LinkRate& r = rates_[static_cast<size_t>(index)];
    int64_t& bytes = p.send ? r.sent : r.received;
    int64_t& busy = p.send ? r.send_busy : r.recv_busy;
    bytes = addSaturated(bytes, p.bytes);
    busy = addSaturated(busy, p.busy.total());
  }
  std::vector<double> rates;
  for (const LinkRate& r : rates_) {
    rate_of_link_[r.link] = -1;
    if (r.judged()) rates.push_back(r.rate());
  }
  if (rates.size() < 3) return;
  const RateSpread call_rates(std::move(rates));
  const PhaseGroupKey key{s_.group_of[static_cast<size_t>(instance)], phase};
  for (const LinkRate& r : rates_) {
    if (!r.judged()) continue;
    const bool slow = call_rates.underAThird(r.rate());
    CallEvidence& e = entryFor(s_.links[r.link].calls, key);
    ++e.judged;
    e.judged_bytes = addSaturated(e.judged_bytes, r.bytes());
    e.slow += slow ? 1 : 0;
    if (!slow) continue;
    e.slow_bytes = addSaturated(e.slow_bytes, r.bytes());
    e.largest_slow_bytes = std::max(e.largest_slow_bytes, r.bytes());
  }
}

}  // namespace ringside::analyzer::detail
