// analyzer/step_detection.cpp — the period of a communicator's calls (step_detection.h).
//
// A training loop issues the same collectives every iteration: DDP one all-reduce per gradient
// bucket, FSDP its all-gathers and reduce-scatters. The sequence of (op, bytes) keys is then
// periodic from the first step on; setup calls (DDP's parameter broadcast) come before it, and a
// job cut off leaves a partial last step. The longest suffix with at least two periods is found
// with the prefix function (Knuth-Morris-Pratt) of the reversed sequence: the smallest period of
// a prefix of length L is L - pi[L-1], and it never shrinks as L grows.
#include "step_detection.h"

#include <algorithm>
#include <map>

namespace ringside::analyzer::detail {
namespace {

// A step must span at least this share of the communicator's calls to be believed.
constexpr double kMinCoverage = 0.5;
// Trailing calls after the last step (a final barrier, an evaluation) tried away.
constexpr size_t kMaxTrailing = 3;
// Between two steps a training job computes; a loop that only calls collectives (a benchmark)
// does not. The median gap between steps must be at least this share of the median step.
constexpr double kMinGapShare = 0.02;

bool sameKey(const SeqCall& a, const SeqCall& b) { return a.op == b.op && a.bytes == b.bytes; }

struct Periodic {
  size_t start = 0;   // first call of the periodic part
  size_t period = 0;  // 0: none
};

// The longest periodic suffix of calls[0, end) with two periods or more.
Periodic periodicSuffix(const std::vector<SeqCall>& calls, size_t end) {
  if (end < 2) return {};
  auto at = [&](size_t j) -> const SeqCall& { return calls[end - 1 - j]; };  // reversed
  std::vector<uint32_t> pi(end, 0);
  for (size_t j = 1; j < end; ++j) {
    uint32_t k = pi[j - 1];
    while (k > 0 && !sameKey(at(j), at(k))) k = pi[k - 1];
    if (sameKey(at(j), at(k))) ++k;
    pi[j] = k;
  }
  for (size_t length = end; length >= 2; --length) {
    const size_t period = length - pi[length - 1];
    if (length >= 2 * period) return {end - length, period};
  }
  return {};
}

// Earlier steps before `start` that moved the same bytes per op as one period, in other calls
// (DDP's first iteration all-reduces every gradient in one bucket). Calls of other ops between
// them (DDP's bucket-rebuild broadcast) are skipped. Returns the ranges, earliest first.
std::vector<DetectedSteps::Range> earlierSteps(const std::vector<SeqCall>& calls, size_t start,
                                               size_t period) {
  std::map<int32_t, int64_t> want;
  for (size_t i = start; i < start + period; ++i) want[calls[i].op] += calls[i].bytes;
  std::vector<DetectedSteps::Range> found;
  std::map<int32_t, int64_t> have;
  size_t last = 0;
  bool open = false;
  for (size_t i = start; i-- > 0;) {
    auto it = want.find(calls[i].op);
    if (it == want.end()) {
      if (open) break;  // a foreign call inside a step: not a step
      continue;
    }
    if (!open) last = i;
    open = true;
    int64_t& got = have[calls[i].op];
    got += calls[i].bytes;
    if (got > it->second) break;
    if (have == want) {
      found.push_back({i, last, true});
      have.clear();
      open = false;
    }
  }
  std::reverse(found.begin(), found.end());
  return found;
}

DetectedSteps stepsOf(const std::vector<SeqCall>& calls, size_t end, Periodic p) {
  DetectedSteps d;
  d.steps = earlierSteps(calls, p.start, p.period);
  for (size_t first = p.start; first < end; first += p.period) {
    const size_t last = std::min(end, first + p.period) - 1;
    d.steps.push_back({first, last, last + 1 - first == p.period});
  }
  d.calls_per_step = static_cast<int64_t>(p.period);
  d.setup_calls = static_cast<int64_t>(d.steps.front().first);
  for (const auto& r : d.steps) d.covered += static_cast<int64_t>(r.last + 1 - r.first);
  return d;
}

// True when the steps leave time between them on the calls' rank (see kMinGapShare).
bool computesBetweenSteps(const std::vector<SeqCall>& calls, const DetectedSteps& d) {
  std::vector<int64_t> gaps, lengths;
  for (size_t k = 1; k < d.steps.size(); ++k) {
    const auto& prev = d.steps[k - 1];
    const SeqCall& next = calls[d.steps[k].first];
    int64_t prev_end = INT64_MIN;
    for (size_t i = prev.first; i <= prev.last; ++i) {
      if (calls[i].rank == next.rank) prev_end = std::max(prev_end, calls[i].end_ns);
    }
    if (prev_end == INT64_MIN || calls[prev.first].rank != next.rank) continue;
    gaps.push_back(std::max<int64_t>(0, next.start_ns - prev_end));
    lengths.push_back(std::max<int64_t>(0, next.start_ns - calls[prev.first].start_ns));
  }
  if (gaps.empty()) return true;
  std::sort(gaps.begin(), gaps.end());
  std::sort(lengths.begin(), lengths.end());
  const double gap = static_cast<double>(gaps[gaps.size() / 2]);
  const double length = static_cast<double>(lengths[lengths.size() / 2]);
  return length <= 0 || gap >= kMinGapShare * length;
}

}  // namespace

DetectedSteps detectPeriodicSteps(const std::vector<SeqCall>& calls) {
  DetectedSteps best;
  const size_t n = calls.size();
  for (size_t trailing = 0; trailing <= kMaxTrailing && trailing + 4 <= n; ++trailing) {
    const size_t end = n - trailing;
    const Periodic p = periodicSuffix(calls, end);
    if (p.period == 0) continue;
    DetectedSteps d = stepsOf(calls, end, p);
    if (d.covered > best.covered) best = std::move(d);
  }
  if (best.steps.empty()) {
    best.note = "no repeating sequence of calls";
  } else if (static_cast<double>(best.covered) < kMinCoverage * static_cast<double>(n)) {
    best = DetectedSteps{};
    best.note = "no sequence of calls repeats over most of the trace";
  } else if (!computesBetweenSteps(calls, best)) {
    best = DetectedSteps{};
    best.note = "calls repeat back to back with no time between them (a benchmark loop?)";
  }
  return best;
}

}  // namespace ringside::analyzer::detail
