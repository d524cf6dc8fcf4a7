// analyzer/analysis_call_rates.h — each link's rate in each collective call, during the transfer
// pass, for the slow-link rule: a link is named only when it was slow in several calls, never on
// the evidence of one (a start-up broadcast scheduled late on a crowded host made a link look
// 5.7x slower than its peers, and DDP makes that broadcast once).
#pragma once

#include <cstdint>
#include <vector>

#include "analysis_state.h"
#include "pending_instances.h"

namespace ringside::analyzer::detail {

// The rule's test, on the rates of one phase group's links: a rate under 1/3 of their median
// (in one call, that is all), and over the trace also further below it than 3 median absolute
// deviations of the rates (the noise): a link that is merely the slowest of a noisy group is not
// slow. In one call the ring's 4 links of an emulated mesh spread so widely (two of them 3x
// faster than the median while the tc-slowed one was 4-1000x slower) that the spread test
// missed the slow link in 6 of 10 calls; the calls' bytes, not their spread, weigh the evidence.
struct RateSpread {
  double median = 0, spread = 0;  // the rates' median and median absolute deviation
  explicit RateSpread(std::vector<double> rates);
  bool underAThird(double rate) const { return rate * 3 < median; }
  bool slow(double rate) const { return underAThird(rate) && median - rate > 3 * spread; }
};

// Buffers, per pending instance, each (link, side, phase)'s bytes and busy time, and judges the
// instance's links once the stream, ordered by start, has passed its last_end_ns: every link
// that moved bytes in it, among >= 3 such links of its phase, counts one judged call in
// LinkAcc::calls, and a slow one when under a third of their median. Calls count by their bytes
// (CallEvidence), so a call of a few bytes, whose rate latency and scheduling set, weighs
// nothing. A message finds its call's share through its GroupTraffic (no search). Memory: 56
// bytes a (link, side, phase) of the instances in flight.
class CallRates {
 public:
  explicit CallRates(AnalysisState& s) : s_(s), pending_(s.out->collectives.size()) {}

  // Judges every instance that ended before `start_ns`.
  void judgeEndedBefore(int64_t start_ns) {
    pending_.endedBefore(start_ns,
                         [this](int32_t instance, Call&& call) { judge(instance, call); });
  }
  // A message of `instance` on link `link` (index into s.links) whose side's traffic for its
  // phase group is `traffic`, moving over [moving, end] when `done`; `phase` its PhaseNames id,
  // -1 none.
  void add(int32_t instance, GroupTraffic& traffic, size_t link, bool send, int phase,
           int64_t bytes, int64_t moving, int64_t end, bool done);
  void judgeAll();  // at the end of the stream

 private:
  struct Piece {  // one side of a link in one phase of the call
    uint32_t link;
    int32_t phase;
    bool send;
    int64_t bytes = 0;
    IntervalUnion busy;
  };
  using Call = std::vector<Piece>;
  struct LinkRate {  // a link's pieces in one phase of a call, both sides
    uint32_t link;
    int64_t sent = 0, received = 0, send_busy = 0, recv_busy = 0;
    // As the rule over the trace (analysis_findings.cpp): bytes from the send rows, busy time
    // from the recv rows where the call has them.
    int64_t bytes() const { return sent > 0 ? sent : received; }
    int64_t busy() const { return recv_busy > 0 ? recv_busy : send_busy; }
    bool judged() const { return bytes() > 0 && busy() > 0; }
    double rate() const { return static_cast<double>(bytes()) / static_cast<double>(busy()); }
  };
  void judge(int32_t instance, const Call& call);
  void judgePhase(int32_t instance, const Call& call, int phase);

  AnalysisState& s_;
  PendingInstances<Call> pending_;
  std::vector<int32_t> rate_of_link_;  // judgePhase's: [link] -> index into its rates, or -1
  std::vector<LinkRate> rates_;        // judgePhase's, reused
};

}  // namespace ringside::analyzer::detail
