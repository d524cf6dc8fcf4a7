// analyzer/step_detection.cpp — the steps of a communicator's calls (step_detection.h).
//
// A training loop issues the same collectives every iteration: DDP one all-reduce per gradient
// bucket (and a broadcast of the buffers before each forward when the model has BatchNorm),
// FSDP its all-gathers and reduce-scatters. Real loops add calls that do not repeat every
// step: an evaluation pass every k steps, the job's own metric collectives, a tail after the
// loop, a first step that differs (DDP's first iteration all-reduces every gradient in one
// bucket). So the step is found from an anchor, not from the whole sequence being periodic:
//
//   1. The anchor is the key (op, bytes) that moves the most bytes among the keys seen twice or
//      more, an all-reduce when there is one: the gradient bucket.
//   2. The step holds q anchors (several buckets of the same size): for each q the blocks
//      between every q-th anchor are hashed (a polynomial prefix hash, O(1) per block); the
//      most frequent block is the candidate step. q is chosen by the shortest description:
//      the block's length plus the number of blocks that differ from it (an evaluation pass
//      every k steps costs one irregular block per k steps, far less than a k-step template).
//   3. The step's first call: the rotation of the block that covers the most calls before the
//      first regular block (setup and DDP's unbucketed first step, found by its bytes per op);
//      ties go to the earliest start.
//   4. A scan from there takes each run of calls equal to the step as a step; between runs,
//      each q anchors still make a step (its calls differ: an evaluation pass before it took
//      its buffer broadcast), and the other calls are left out (evaluation passes, one-off
//      calls) and reported.
//
// Gradient accumulation (no_sync) needs nothing special: the all-reduces come every k-th
// micro-batch, so the block between two anchors is one optimizer step with its k forwards.
#include "step_detection.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <unordered_map>

namespace ringside::analyzer::detail {
namespace {

// A step must span at least this share of the communicator's calls to be believed.
constexpr double kMinCoverage = 0.5;
// In a step a training job computes; a loop that only calls collectives (a benchmark) does not.
// The median time outside calls must be at least this share of the median step.
constexpr double kMinGapShare = 0.02;
// Anchors per step tried (buckets of one size in a step), and the work allowed for it.
constexpr size_t kMaxAnchorsPerStep = 64;
constexpr size_t kWorkBudget = 64u << 20;

uint64_t mix(uint64_t x) {  // splitmix64's finalizer: spreads small key ids over 64 bits
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The calls as ids of their (op, bytes) keys, with a prefix hash: any range's hash in O(1).
struct Keyed {
  std::vector<uint32_t> id;          // per call
  std::vector<int64_t> count, bytes;  // per key: calls, bytes summed
  std::vector<char> allreduce;        // per key
  std::vector<uint64_t> h, pw;        // h[i]: hash of calls [0, i); pw[k]: base^k

  uint64_t range(size_t a, size_t b) const { return h[b] - h[a] * pw[b - a]; }
  bool equal(size_t a, size_t b, size_t len) const {
    if (range(a, a + len) != range(b, b + len)) return false;
    return std::equal(id.begin() + static_cast<std::ptrdiff_t>(a),
                      id.begin() + static_cast<std::ptrdiff_t>(a + len),
                      id.begin() + static_cast<std::ptrdiff_t>(b));
  }
};

Keyed keyCalls(const std::vector<SeqCall>& calls) {
  constexpr uint64_t kBase = 0x100000001b3ULL;
  Keyed k;
  std::map<std::pair<int32_t, int64_t>, uint32_t> ids;
  k.id.reserve(calls.size());
  k.h.assign(calls.size() + 1, 0);
  k.pw.assign(calls.size() + 1, 1);
  for (size_t i = 0; i < calls.size(); ++i) {
    const SeqCall& c = calls[i];
    auto [it, fresh] = ids.try_emplace({c.op, c.bytes}, static_cast<uint32_t>(ids.size()));
    if (fresh) {
      k.count.push_back(0);
      k.bytes.push_back(0);
      k.allreduce.push_back(c.allreduce ? 1 : 0);
    }
    const uint32_t id = it->second;
    ++k.count[id];
    k.bytes[id] += c.bytes;
    k.id.push_back(id);
    k.h[i + 1] = k.h[i] * kBase + mix(id);
    k.pw[i + 1] = k.pw[i] * kBase;
  }
  return k;
}

// The anchor key (step 1 above); -1: no key repeats.
int64_t anchorKey(const Keyed& k) {
  int64_t best = -1;
  for (size_t id = 0; id < k.count.size(); ++id) {
    if (k.count[id] < 2) continue;
    const auto b = static_cast<size_t>(best);
    if (best < 0 || std::make_pair(k.allreduce[id], k.bytes[id]) >
                        std::make_pair(k.allreduce[b], k.bytes[b])) {
      best = static_cast<int64_t>(id);
    }
  }
  return best;
}

struct Block {
  size_t start = 0;  // first regular block: its first call (an anchor)
  size_t length = 0;
};

// Step 2 above: the most frequent block between every q-th anchor, for the best q.
Block stepBlock(const Keyed& k, const std::vector<size_t>& pos) {
  const size_t m = pos.size();
  const size_t budget = std::max<size_t>(1, kWorkBudget / std::max<size_t>(1, m));
  const size_t max_q = std::min({kMaxAnchorsPerStep, m - 1, budget});
  Block best;
  size_t best_score = SIZE_MAX;
  std::unordered_map<uint64_t, std::pair<size_t, size_t>> seen;  // hash -> (count, first j)
  for (size_t q = 1; q <= max_q; ++q) {
    const size_t blocks = (m - 1) / q;
    seen.clear();
    size_t top = 0, top_j = 0;
    for (size_t j = 0; j < blocks; ++j) {
      const size_t a = pos[j * q], b = pos[(j + 1) * q];
      const uint64_t key = k.range(a, b) ^ mix(b - a);
      auto [it, fresh] = seen.try_emplace(key, 0, j);
      if (++it->second.first > top || (it->second.first == top && it->second.second < top_j)) {
        top = it->second.first;
        top_j = it->second.second;
      }
    }
    const size_t length = pos[(top_j + 1) * q] - pos[top_j * q];
    const size_t score = length + (blocks - top);
    if (score < best_score) {
      best_score = score;
      best = {pos[top_j * q], length};
    }
  }
  return best;
}

// Earlier steps before `start` that moved the same bytes per op as one period, in other calls
// (DDP's first iteration all-reduces every gradient in one bucket). Before a step is open, calls
// of a key the period lacks that are not all-reduces (DDP's bucket-rebuild broadcast) are passed
// over. Returns the ranges, earliest first.
std::vector<DetectedSteps::Range> earlierSteps(const std::vector<SeqCall>& calls,
                                               const Keyed& k, size_t start, size_t period) {
  std::map<int32_t, int64_t> want;
  std::vector<uint32_t> in_period(k.id.begin() + static_cast<std::ptrdiff_t>(start),
                                  k.id.begin() + static_cast<std::ptrdiff_t>(start + period));
  std::sort(in_period.begin(), in_period.end());
  for (size_t i = start; i < start + period; ++i) want[calls[i].op] += calls[i].bytes;
  std::vector<DetectedSteps::Range> found;
  std::map<int32_t, int64_t> have;
  size_t last = 0;
  bool open = false;
  for (size_t i = start; i-- > 0;) {
    auto it = want.find(calls[i].op);
    const bool foreign_key = !std::binary_search(in_period.begin(), in_period.end(), k.id[i]);
    if (it == want.end() || (!open && foreign_key && !calls[i].allreduce)) {
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

int64_t coveredBy(const std::vector<DetectedSteps::Range>& steps) {
  int64_t n = 0;
  for (const auto& r : steps) n += static_cast<int64_t>(r.last + 1 - r.first);
  return n;
}

// Step 3 above: the first call of the step (a rotation of the block) and the earlier steps.
size_t firstCall(const std::vector<SeqCall>& calls, const Keyed& k, Block b,
                 std::vector<DetectedSteps::Range>* earlier) {
  size_t best = b.start;
  int64_t best_cover = -1;
  size_t best_first = SIZE_MAX;
  for (size_t back = 0; back < b.length && back <= b.start; ++back) {
    // calls [start - back, start) must be the block's last `back` calls
    if (back > 0 && k.id[b.start - back] != k.id[b.start + b.length - back]) break;
    const size_t start = b.start - back;
    std::vector<DetectedSteps::Range> e = earlierSteps(calls, k, start, b.length);
    const int64_t cover = static_cast<int64_t>(back) + coveredBy(e);
    const size_t first = e.empty() ? start : e.front().first;
    if (cover > best_cover || (cover == best_cover && first < best_first)) {
      best = start;
      best_cover = cover;
      best_first = first;
      *earlier = std::move(e);
    }
  }
  return best;
}

// Calls between runs that still hold a step's anchors (a step whose calls differ: an
// evaluation pass took the buffers' broadcast before its forward): each q anchors there make a
// step, spanning the calls before its first anchor and after its last that are the step's.
void irregularSteps(const Keyed& k, uint32_t anchor, size_t start, size_t period, size_t from,
                    size_t to, DetectedSteps* d) {
  std::vector<size_t> offsets;  // the anchors' places in the step
  for (size_t i = 0; i < period; ++i) {
    if (k.id[start + i] == anchor) offsets.push_back(i);
  }
  std::vector<size_t> anchors;
  for (size_t i = from; i < to; ++i) {
    if (k.id[i] == anchor) anchors.push_back(i);
  }
  size_t next = from;  // first call not yet in a step
  for (size_t g = 0; !offsets.empty() && g + offsets.size() <= anchors.size();
       g += offsets.size()) {
    // Back from the first anchor and on from the last while the calls are the step's.
    const size_t a0 = anchors[g], a1 = anchors[g + offsets.size() - 1];
    size_t first = a0, last = a1;
    while (first > next && a0 - first < offsets.front() &&
           k.id[first - 1] == k.id[start + offsets.front() - (a0 - first) - 1]) {
      --first;
    }
    while (last + 1 < to && last - a1 < period - 1 - offsets.back() &&
           k.id[last + 1] == k.id[start + offsets.back() + (last - a1) + 1]) {
      ++last;
    }
    for (size_t i = next; i < first; ++i) d->left_out.push_back(i);
    d->steps.push_back({first, last, true});
    next = last + 1;
  }
  for (size_t i = next; i < to; ++i) d->left_out.push_back(i);
}

// Step 4 above: the steps from `start`, each a run of calls equal to [start, start + period);
// between runs, irregularSteps().
void scanSteps(const Keyed& k, uint32_t anchor, size_t start, size_t period, DetectedSteps* d) {
  const size_t n = k.id.size();
  size_t i = start, gap = start;  // gap: first call since the last step matched
  while (i + period <= n) {
    if (!k.equal(start, i, period)) {
      ++i;
      continue;
    }
    if (gap < i) irregularSteps(k, anchor, start, period, gap, i, d);
    d->steps.push_back({i, i + period - 1, true});
    i += period;
    gap = i;
  }
  // A job cut off mid-step: the rest begins like a step and holds half of one or more.
  const size_t rest = n - i;
  if (gap == i && rest > 0 && 2 * rest >= period && k.equal(start, i, rest)) {
    d->steps.push_back({i, n - 1, false});
  } else if (gap < n) {
    irregularSteps(k, anchor, start, period, gap, n, d);
  }
}

// True when a step leaves its rank time outside calls (see kMinGapShare), on the calls' rank:
// from one step's first call to the next step's, the time in none of the step's calls. Where in
// the step the compute falls does not matter (with BatchNorm it is between the broadcast and
// the gradient all-reduce, not between steps).
bool computesBetweenSteps(const std::vector<SeqCall>& calls, const DetectedSteps& d) {
  std::vector<int64_t> outside, lengths;
  for (size_t k = 1; k < d.steps.size(); ++k) {
    const auto& prev = d.steps[k - 1];
    const SeqCall& next = calls[d.steps[k].first];
    const SeqCall& first = calls[prev.first];
    if (first.rank != next.rank || next.start_ns <= first.start_ns) continue;
    int64_t busy = 0, until = first.start_ns;  // union of the rank's calls, in entry order
    for (size_t i = prev.first; i <= prev.last; ++i) {
      const SeqCall& c = calls[i];
      if (c.rank != first.rank) continue;
      const int64_t from = std::max(until, c.start_ns), to = std::min(c.end_ns, next.start_ns);
      if (to > from) busy += to - from;
      until = std::max(until, to);
    }
    const int64_t length = next.start_ns - first.start_ns;
    outside.push_back(std::max<int64_t>(0, length - busy));
    lengths.push_back(length);
  }
  if (outside.empty()) return true;
  std::sort(outside.begin(), outside.end());
  std::sort(lengths.begin(), lengths.end());
  const double out = static_cast<double>(outside[outside.size() / 2]);
  const double length = static_cast<double>(lengths[lengths.size() / 2]);
  return length <= 0 || out >= kMinGapShare * length;
}

DetectedSteps periodicSteps(const std::vector<SeqCall>& calls) {
  DetectedSteps d;
  const Keyed k = keyCalls(calls);
  const int64_t anchor = anchorKey(k);
  if (anchor < 0) return d;
  std::vector<size_t> pos;
  for (size_t i = 0; i < k.id.size(); ++i) {
    if (k.id[i] == static_cast<uint32_t>(anchor)) pos.push_back(i);
  }
  const Block b = stepBlock(k, pos);
  if (b.length == 0) return d;
  const size_t start = firstCall(calls, k, b, &d.steps);
  const size_t first = d.steps.empty() ? start : d.steps.front().first;
  for (size_t i = first; i < start; ++i) {  // between the earlier steps and the periodic part
    const bool inside = std::any_of(d.steps.begin(), d.steps.end(), [&](const auto& r) {
      return r.first <= i && i <= r.last;
    });
    if (!inside) d.left_out.push_back(i);
  }
  scanSteps(k, static_cast<uint32_t>(anchor), start, b.length, &d);
  std::sort(d.left_out.begin(), d.left_out.end());
  d.calls_per_step = static_cast<int64_t>(b.length);
  d.setup_calls = static_cast<int64_t>(first);
  d.covered = coveredBy(d.steps);
  const int64_t after_setup = static_cast<int64_t>(calls.size()) - d.setup_calls;
  d.confidence = after_setup > 0 ? static_cast<double>(d.covered) / static_cast<double>(after_setup)
                                 : 0.0;
  return d;
}

}  // namespace

DetectedSteps detectPeriodicSteps(const std::vector<SeqCall>& calls) {
  DetectedSteps best = calls.size() >= 2 ? periodicSteps(calls) : DetectedSteps{};
  const size_t n = calls.size();
  if (best.steps.size() < 2) {
    best = DetectedSteps{};
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
