// analyzer/analysis_call_rates.cpp — each link's rate in each call (analysis_call_rates.h), fed
// by the transfer pass.
#include "analysis_call_rates.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "ringside/analyzer/collective_math.h"

namespace ringside::analyzer::detail {

RateSpread::RateSpread(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  median = percentile(rates, 0.5);
  for (double& rate : rates) rate = std::abs(rate - median);
  std::sort(rates.begin(), rates.end());
  spread = percentile(rates, 0.5);
}

void CallRates::add(int32_t instance, size_t link, bool send, int phase, int64_t bytes,
                    int64_t moving, int64_t end, bool done) {
  Call* call =
      pending_.get(instance, s_.out->collectives[static_cast<size_t>(instance)].last_end_ns);
  if (call == nullptr) return;
  const uint64_t key = (static_cast<uint64_t>(link) << 32) | static_cast<uint32_t>(phase + 1);
  Traffic& t = (*call)[key];
  int64_t& sum = send ? t.sent : t.received;
  sum = addSaturated(sum, bytes);
  if (done) (send ? t.send_busy : t.recv_busy).add(moving, end);
}

void CallRates::judgeAll() {
  pending_.all([this](int32_t instance, Call&& call) { judge(instance, call); });
}

// As the rule over the trace (analysis_findings.cpp): bytes from the send rows, busy time from
// the recv rows where the call has them.
void CallRates::judge(int32_t instance, const Call& call) {
  struct Rate {
    size_t link;
    int64_t bytes;
    double rate;
  };
  std::map<int, std::vector<Rate>> by_phase;
  for (const auto& [key, t] : call) {
    const int64_t bytes = t.sent > 0 ? t.sent : t.received;
    const int64_t busy = t.recv_busy.total() > 0 ? t.recv_busy.total() : t.send_busy.total();
    if (bytes < kMinCallBytes || busy <= 0) continue;
    const int phase = static_cast<int>(static_cast<uint32_t>(key)) - 1;
    by_phase[phase].push_back({static_cast<size_t>(key >> 32), bytes,
                               static_cast<double>(bytes) / static_cast<double>(busy)});
  }
  const int group = s_.group_of[static_cast<size_t>(instance)];
  for (const auto& [phase, links] : by_phase) {
    if (links.size() < 3) continue;
    std::vector<double> rates;
    for (const Rate& r : links) rates.push_back(r.rate);
    const RateSpread spread(std::move(rates));
    for (const Rate& r : links) {
      CallEvidence& e = entryFor(s_.links[r.link].calls, PhaseGroupKey{group, phase});
      const bool slow = spread.slow(r.rate);
      ++e.judged;
      e.judged_bytes = addSaturated(e.judged_bytes, r.bytes);
      e.slow += slow ? 1 : 0;
      e.slow_bytes = addSaturated(e.slow_bytes, slow ? r.bytes : 0);
    }
  }
}

}  // namespace ringside::analyzer::detail
