// analyzer/analysis_phases.cpp — the phases stage: PhaseStats from each instance's sends
// (analysis_phases.h), fed by the transfer pass.
#include "analysis_phases.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ringside::analyzer::detail {

void PhaseBuilder::addSend(int32_t instance, const storage::TransferRow& row, int phase,
                           int64_t end) {
  const CollectiveInstance& c = s_.out->collectives[static_cast<size_t>(instance)];
  if ((phase < 0 && !glooRingAllreduce(c)) || phases_written_[static_cast<size_t>(instance)])
    return;
  if (instance != last_pending_instance_ || last_pending_ == nullptr) {
    auto [it, fresh] = pending_.try_emplace(instance);
    if (fresh) ended_.emplace(c.last_end_ns, instance);
    last_pending_ = &it->second;
    last_pending_instance_ = instance;
  }
  last_pending_->push_back({row.src_rank, phase, row.step, row.start_ns, end});
}

void PhaseBuilder::foldAll() {
  while (!ended_.empty()) {
    fold(ended_.top().second);
    ended_.pop();
  }
}

void PhaseBuilder::fold(int32_t instance) {
  auto it = pending_.find(instance);
  if (it == pending_.end()) return;
  std::vector<Send> sends = std::move(it->second);
  pending_.erase(it);
  phases_written_[static_cast<size_t>(instance)] = true;
  if (instance == last_pending_instance_) {
    last_pending_ = nullptr;
    last_pending_instance_ = -1;
  }
  const CollectiveInstance& c = s_.out->collectives[static_cast<size_t>(instance)];
  std::stable_sort(sends.begin(), sends.end(), [](const Send& a, const Send& b) {
    return std::tie(a.rank, a.start) < std::tie(b.rank, b.start);
  });
  bool infer = glooRingAllreduce(c);
  if (infer) inferGlooRingPhases(&sends);
  addPhaseRows(c, sends, infer);
}

// Gloo's ring all-reduce: the first half of a rank's sends is the reduce-scatter, the rest the
// all-gather; every send is one step. `sends` is sorted by rank.
void PhaseBuilder::inferGlooRingPhases(std::vector<Send>* sends) {
  int reduce_scatter = s_.phase_names.id("reduce-scatter");
  int all_gather = s_.phase_names.id("all-gather");
  std::vector<Send>& v = *sends;
  for (size_t first = 0; first < v.size();) {
    size_t last = first;
    while (last < v.size() && v[last].rank == v[first].rank) ++last;
    size_t half = (last - first + 1) / 2;
    for (size_t k = first; k < last; ++k) {
      size_t pos = k - first;
      v[k].phase = pos < half ? reduce_scatter : all_gather;
      v[k].step = static_cast<int>(pos < half ? pos : pos - half);
    }
    first = last;
  }
}

// One PhaseStats per (rank, phase): its extent, its steps, and the step that stalled longest.
void PhaseBuilder::addPhaseRows(const CollectiveInstance& c, const std::vector<Send>& sends,
                                bool inferred) {
  using RankPhase = std::pair<int, int>;
  std::map<RankPhase, std::map<int, int64_t>> step_end;  // step -> its last end
  std::map<RankPhase, std::pair<int64_t, int64_t>> extent;
  for (const Send& r : sends) {
    if (r.phase < 0) continue;
    auto key = std::make_pair(r.rank, r.phase);
    auto [e, fresh] = extent.try_emplace(key, r.start, r.end);
    if (!fresh) {
      e->second.first = std::min(e->second.first, r.start);
      e->second.second = std::max(e->second.second, r.end);
    }
    int64_t& end = step_end[key][r.step];
    end = std::max(end, r.end);
  }
  for (const auto& [key, ext] : extent) {
    PhaseStats p;
    p.comm = c.comm;
    p.seq = c.seq;
    p.rank = key.first;
    p.phase = s_.phase_names.name(key.second);
    // A phase's time counts from the moment the last rank entered the call: before that, a
    // rank's first sends sit waiting for its late peers, which is waiting, not moving data
    // (docs/metrics.md). The wait is kept beside it.
    p.start_ns = std::max(ext.first, std::min(c.last_start_ns, ext.second));
    p.end_ns = ext.second;
    p.wait_ns = p.start_ns - ext.first;
    const auto& steps = step_end[key];
    p.steps = static_cast<int>(steps.size());
    int64_t prev = p.start_ns;
    for (const auto& [step, end] : steps) {
      int64_t gap = end - prev;
      if (p.slowest_step < 0 || gap > p.slowest_step_ns) {
        p.slowest_step = step;
        p.slowest_step_ns = gap;
      }
      prev = std::max(prev, end);
    }
    p.inferred = inferred;
    s_.out->phases.push_back(std::move(p));
  }
}

}  // namespace ringside::analyzer::detail
