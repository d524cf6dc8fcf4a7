// analyzer/analysis_phases.cpp — the phases stage: PhaseStats from each instance's sends
// (analysis_phases.h), fed by the transfer pass.
#include "analysis_phases.h"

#include <algorithm>
#include <tuple>

namespace ringside::analyzer {

void PhaseTotal::add(const PhaseStats& p) {
  const int64_t d = std::max<int64_t>(0, p.end_ns - p.start_ns);
  ++instances;
  total_ns += d;
  wait_ns += p.wait_ns;
  max_ns = std::max(max_ns, d);
  inferred += p.inferred ? 1 : 0;
}

void PhaseTotal::add(const PhaseTotal& t) {
  instances += t.instances;
  total_ns += t.total_ns;
  wait_ns += t.wait_ns;
  max_ns = std::max(max_ns, t.max_ns);
  inferred += t.inferred;
}

}  // namespace ringside::analyzer

namespace ringside::analyzer::detail {

void PhaseBuilder::addSend(int32_t instance, const storage::TransferRow& row, int phase,
                           int64_t end) {
  const CollectiveInstance& c = s_.out->collectives[static_cast<size_t>(instance)];
  if (phase < 0 && !glooRingAllreduce(c)) return;
  if (std::vector<Send>* sends = pending_.get(instance, c.last_end_ns))
    sends->push_back({row.src_rank, phase, row.step, row.start_ns, end});
}

void PhaseBuilder::foldAll() {
  pending_.all(
      [this](int32_t instance, std::vector<Send>&& sends) { fold(instance, std::move(sends)); });
  for (auto& [name, t] : left_out_) s_.out->phases_left_out.push_back(std::move(t));
  left_out_.clear();
}

// The rows of one instance (in rows_) that AnalysisOptions::phase_rows keeps go to
// Analysis::phases, in the order they were made; the others are folded by phase name. The
// instance's extent (its first start, its last end) is kept with its rows when ranks_below > 0.
void PhaseBuilder::keepRows() {
  const PhaseRowsKept& keep = s_.options.phase_rows;
  size_t first_start = rows_.size(), last_end = rows_.size();
  if (keep.ranks_below > 0) {
    for (size_t i = 0; i < rows_.size(); ++i) {
      if (first_start == rows_.size() || rows_[i].start_ns < rows_[first_start].start_ns)
        first_start = i;
      if (last_end == rows_.size() || rows_[i].end_ns > rows_[last_end].end_ns) last_end = i;
    }
  }
  for (size_t i = 0; i < rows_.size(); ++i) {
    PhaseStats& p = rows_[i];
    const bool kept = keep.first < 0 || rows_made_ < keep.first || p.rank < keep.ranks_below ||
                      i == first_start || i == last_end;
    ++rows_made_;
    if (kept) {
      s_.out->phases.push_back(std::move(p));
      continue;
    }
    PhaseTotal& t = left_out_[p.phase];
    if (t.instances == 0) t.phase = p.phase;
    t.add(p);
  }
  rows_.clear();
}

void PhaseBuilder::fold(int32_t instance, std::vector<Send> sends) {
  const CollectiveInstance& c = s_.out->collectives[static_cast<size_t>(instance)];
  orderByRank(&sends);
  const bool infer = glooRingAllreduce(c);
  std::vector<Send>& v = scratch_;
  for (size_t first = 0; first < order_.size();) {
    const int rank = sends[order_[first]].rank;
    v.clear();
    for (; first < order_.size() && sends[order_[first]].rank == rank; ++first)
      v.push_back(sends[order_[first]]);
    if (infer) inferGlooRingPhases(&v);
    addPhaseRows(c, &v, infer);
  }
  keepRows();
}

// order_ = the indices of `sends` by (rank, start), equal ones in the order they came, as a
// stable sort would put them. They come in the stream's order (by start): then a counting sort
// of their indices by rank gives that order in linear passes, and no copy of the sends (the
// stable sort of the 1,024-rank trace's million sends an instance was a sixth of the pass).
void PhaseBuilder::orderByRank(std::vector<Send>* sends) {
  std::vector<Send>& v = *sends;
  order_.resize(v.size());
  int lo = 0, hi = -1;
  if (!v.empty()) {
    auto [min, max] = std::minmax_element(
        v.begin(), v.end(), [](const Send& a, const Send& b) { return a.rank < b.rank; });
    lo = min->rank;
    hi = max->rank;
  }
  const uint64_t range = static_cast<uint64_t>(static_cast<int64_t>(hi) - lo + 1);
  auto by_start = [](const Send& a, const Send& b) { return a.start < b.start; };
  if (v.size() < 2 || range > 2 * v.size() + 64 || !std::is_sorted(v.begin(), v.end(), by_start)) {
    std::stable_sort(v.begin(), v.end(), [](const Send& a, const Send& b) {
      return std::tie(a.rank, a.start) < std::tie(b.rank, b.start);
    });
    for (size_t i = 0; i < v.size(); ++i) order_[i] = static_cast<uint32_t>(i);
    return;
  }
  rank_first_.assign(static_cast<size_t>(range) + 1, 0);  // [rank - lo]: its first slot
  for (const Send& send : v) ++rank_first_[static_cast<size_t>(send.rank - lo) + 1];
  for (size_t r = 1; r < rank_first_.size(); ++r) rank_first_[r] += rank_first_[r - 1];
  for (size_t i = 0; i < v.size(); ++i)
    order_[rank_first_[static_cast<size_t>(v[i].rank - lo)]++] = static_cast<uint32_t>(i);
}

// Gloo's ring all-reduce: the first half of a rank's sends is the reduce-scatter, the rest the
// all-gather; every send is one step. `sends` are one rank's, by start.
void PhaseBuilder::inferGlooRingPhases(std::vector<Send>* sends) {
  const int reduce_scatter = s_.phase_names.id(collective::name(collective::Phase::kReduceScatter));
  const int all_gather = s_.phase_names.id(collective::name(collective::Phase::kAllGather));
  std::vector<Send>& v = *sends;
  const size_t half = (v.size() + 1) / 2;
  for (size_t pos = 0; pos < v.size(); ++pos) {
    v[pos].phase = pos < half ? reduce_scatter : all_gather;
    v[pos].step = static_cast<int>(pos < half ? pos : pos - half);
  }
}

// One PhaseStats per phase of one rank's sends (by start), in phase order: its extent, its steps,
// and the step that stalled longest. The sends are sorted by (phase, step) first (maps per
// instance cost more than the rest of the pass); those of no phase are left out.
void PhaseBuilder::addPhaseRows(const CollectiveInstance& c, std::vector<Send>* sends,
                                bool inferred) {
  std::vector<Send>& v = *sends;
  v.erase(std::remove_if(v.begin(), v.end(), [](const Send& s) { return s.phase < 0; }), v.end());
  // Usually in that order already (by start); the order within a step does not matter.
  auto by_phase_step = [](const Send& a, const Send& b) {
    return std::tie(a.phase, a.step) < std::tie(b.phase, b.step);
  };
  if (!std::is_sorted(v.begin(), v.end(), by_phase_step))
    std::sort(v.begin(), v.end(), by_phase_step);
  for (size_t p0 = 0; p0 < v.size();) {
    size_t p1 = p0;
    int64_t lo = v[p0].start, hi = v[p0].end;
    for (; p1 < v.size() && v[p1].phase == v[p0].phase; ++p1) {
      lo = std::min(lo, v[p1].start);
      hi = std::max(hi, v[p1].end);
    }
    addPhaseRow(c, v.data() + p0, v.data() + p1, lo, hi, inferred);
    p0 = p1;
  }
}

// The PhaseStats of one rank's sends [from, to) of one phase, sorted by step; [lo, hi] their
// extent.
void PhaseBuilder::addPhaseRow(const CollectiveInstance& c, const Send* from, const Send* to,
                               int64_t lo, int64_t hi, bool inferred) {
  PhaseStats p;
  p.comm = c.comm;
  p.seq = c.seq;
  p.rank = from->rank;
  p.phase = s_.phase_names.name(from->phase);
  // A phase's time counts from the moment the last rank entered the call: before that, a
  // rank's first sends sit waiting for its late peers, which is waiting, not moving data
  // (docs/metrics.md). The wait is kept beside it.
  p.start_ns = std::max(lo, std::min(c.last_start_ns, hi));
  p.end_ns = hi;
  p.wait_ns = p.start_ns - lo;
  p.steps = 0;
  int64_t prev = p.start_ns;
  for (const Send* r = from; r != to;) {
    const int step = r->step;
    int64_t end = 0;  // a step's last end (ends are never negative here)
    for (; r != to && r->step == step; ++r) end = std::max(end, r->end);
    ++p.steps;
    int64_t gap = end - prev;
    if (p.slowest_step < 0 || gap > p.slowest_step_ns) {
      p.slowest_step = step;
      p.slowest_step_ns = gap;
    }
    prev = std::max(prev, end);
  }
  p.inferred = inferred;
  if (s_.options.on_phase) {
    s_.options.on_phase(p, static_cast<int32_t>(&c - s_.out->collectives.data()));
  } else {
    rows_.push_back(std::move(p));
  }
}

}  // namespace ringside::analyzer::detail
