// analyzer/analysis_algorithm.cpp — the rules that judge how the all-reduces are done, under the
// alpha-beta model (analysis_model.cpp): "algorithm" (would ringside's ring or tree be faster
// at these sizes and rank counts?) and "bucketing" (would fewer, larger all-reduces be faster?).
// Both scale the measured times by the model's ratios rather than trusting the model's absolute
// times: the model knows the links, the measurement knows everything else the library costs.
#include <algorithm>
#include <map>

#include "analysis_state.h"
#include "findings_internal.h"
#include "ringside/collective/topology_file.h"
#include "ringside/format/units.h"

namespace ringside::analyzer::detail {
namespace {

using format::fixed;

// A predicted saving below these is noise, or not worth a finding.
constexpr double kMinSavingShare = 0.2;
constexpr int64_t kMinSavingNs = 1'000'000;

using collective::Algorithm;
using Algo = Algorithm;  // ring or tree here; kDefault: neither, or not known

const char* algoName(Algo a) { return collective::name(a); }

// The all-reduce algorithm an instance ran, when it is one this rule compares (ring or tree).
Algo allreduceAlgo(const CollectiveInstance& c) {
  const Algo a = allreduceAlgorithm(c);
  return a == Algo::kRing || a == Algo::kTree ? a : Algo::kDefault;
}

struct Model {
  double alpha_ns = -1, beta_ns = -1;
  TreeLinksOf tree_links{nullptr};
  bool ok() const { return alpha_ns >= 0 && beta_ns > 0; }
  double ns(Algo a, int n, int64_t bytes) const {
    return a == Algo::kTree ? collective::treeAllreduceTime(n, bytes, alpha_ns, beta_ns, tree_links(n))
                            : collective::ringAllreduceTime(n, static_cast<double>(bytes), alpha_ns, beta_ns);
  }
  // The share of the modelled time that is latency terms: >= 0.5 latency-bound.
  double latencyShare(Algo a, int n, int64_t bytes) const {
    const double all = ns(a, n, bytes), bytes_free = a == Algo::kTree
                                                         ? collective::treeAllreduceTime(n, int64_t{0}, alpha_ns, 0, tree_links(n))
                                                         : collective::ringAllreduceTime(n, 0.0, alpha_ns, 0);
    return all > 0 ? bytes_free / all : 0;
  }
};

Model modelOf(const AnalysisState& s) {
  const Analysis& a = *s.out;
  Model m;
  m.tree_links = TreeLinksOf(s.options.topology);
  if (a.alpha_s >= 0 && a.beta_s_per_byte > 0) {
    m.alpha_ns = a.alpha_s * 1e9;
    m.beta_ns = a.beta_s_per_byte * 1e9;
  }
  return m;
}

std::string modelText(const Analysis& a) {
  return a.model_source + " model: alpha " +
         format::duration(static_cast<int64_t>(a.alpha_s * 1e9)) + ", link " +
         format::rate(1 / a.beta_s_per_byte, 3);
}

// Sizes seen, for evidence: "132 KiB" or "4.0 MiB-4.2 MiB".
struct SizeRange {
  int64_t lo = INT64_MAX, hi = 0, calls = 0;
  void add(int64_t bytes) {
    lo = std::min(lo, bytes);
    hi = std::max(hi, bytes);
    ++calls;
  }
  std::string text() const {
    return lo == hi ? format::bytes(lo) : format::bytes(lo) + "-" + format::bytes(hi);
  }
};

// One library's all-reduces: measured, and predicted per algorithm (measured x model ratio).
struct AlgoTotals {
  Algo own = Algo::kDefault;
  int ranks = 0;
  int64_t calls = 0;
  double measured_ns = 0, predicted_ns[3] = {0, 0, 0};  // by Algo (kRing 1, kTree 2)
  double helped_ns = 0;  // measured time of the calls the other algorithm would speed up
  double ratio_lo = 1e300, ratio_hi = 0;                // best other / own, over the calls
  SizeRange latency_bound, bandwidth_bound;
};

}  // namespace

// "ringside record --ranks 4 --allreduce tree -o tree.sqlite -- CMD", then the diff.
std::string abCommand(const AnalysisState& s, const std::string& name, int ranks) {
  std::string cmd = s.meta.command_line.empty() ? "<the job's command>" : s.meta.command_line;
  if (cmd.size() > 300) cmd = cmd.substr(0, 300) + "...";
  const std::string trace = s.options.trace_path.empty() ? "TRACE" : s.options.trace_path;
  // One host: record starts the ranks itself; several: under the job's own launcher.
  const std::string launch =
      s.out->hosts.size() <= 1 ? "--ranks " + std::to_string(ranks) + " " : "";
  return "confirm with an A/B run: ringside record " + launch + "--allreduce " + name + " -o " +
         name + ".sqlite -- " + cmd + "; then ringside diff " + trace + " " + name + ".sqlite";
}

namespace {

std::map<std::string, AlgoTotals> allreduceTotals(const Analysis& a, const Model& m) {
  std::map<std::string, AlgoTotals> by_library;
  for (const CollectiveInstance& c : a.collectives) {
    const Algo own = allreduceAlgo(c);
    if (own == Algo::kDefault || c.ranks < 2 || c.duration_ns <= 0 || c.bytes <= 0) continue;
    AlgoTotals& t = by_library[c.library];
    if (t.calls > 0 && (t.own != own || t.ranks != c.ranks)) continue;  // one kind per library
    t.own = own;
    t.ranks = c.ranks;
    const double own_ns = m.ns(own, c.ranks, c.bytes);
    if (!(own_ns > 0)) continue;
    ++t.calls;
    const auto measured = static_cast<double>(c.duration_ns);
    t.measured_ns += measured;
    for (Algo algo : {Algo::kRing, Algo::kTree}) {
      const double ratio = m.ns(algo, c.ranks, c.bytes) / own_ns;
      t.predicted_ns[static_cast<int>(algo)] += measured * ratio;
      if (algo == own) continue;
      t.ratio_lo = std::min(t.ratio_lo, ratio);
      t.ratio_hi = std::max(t.ratio_hi, ratio);
      if (ratio < 0.95) t.helped_ns += measured;  // within 5%: on par
    }
    (m.latencyShare(own, c.ranks, c.bytes) >= 0.5 ? t.latency_bound : t.bandwidth_bound)
        .add(c.bytes);
  }
  return by_library;
}

}  // namespace

collective::TreeLinks TreeLinksOf::operator()(int ranks) const {
  if (ranks == ranks_) return links_;
  ranks_ = ranks;
  links_ = collective::TreeLinks::kSharedNic;
  // A link per rank pair needs at least n(n-1)/2 links: most topologies fail here at once.
  const auto n = static_cast<int64_t>(ranks);
  if (topology_ == nullptr || ranks < 2 || static_cast<int64_t>(topology_->links.size()) < n * (n - 1) / 2)
    return links_;
  for (int i = 0; i < ranks; ++i) {
    for (int j = i + 1; j < ranks; ++j) {
      if (topology_->nodeOf(i) == topology_->nodeOf(j) || topology_->linkBetween(i, j) == nullptr)
        return links_;
    }
  }
  links_ = collective::TreeLinks::kPerPeer;
  return links_;
}

void algorithmFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  const Model m = modelOf(s);
  if (!m.ok()) return;
  for (const auto& [library, t] : allreduceTotals(a, m)) {
    if (t.calls == 0) continue;
    const Algo other = t.own == Algo::kRing ? Algo::kTree : Algo::kRing;
    const double predicted = t.predicted_ns[static_cast<int>(other)];
    const double saving = t.measured_ns - predicted;
    // 20% on the calls it speeds up (a tree at 4 MiB), net of those it slows down: sizes where
    // the two are on par must not hide the gain where they are not.
    if (saving < kMinSavingShare * t.helped_ns || saving < kMinSavingNs) continue;
    const auto calls = static_cast<double>(t.calls);
    std::string bound;
    if (t.latency_bound.calls > 0)
      bound += std::to_string(t.latency_bound.calls) + " latency-bound (" +
               t.latency_bound.text() + ")";
    if (t.bandwidth_bound.calls > 0)
      bound += (bound.empty() ? "" : ", ") + std::to_string(t.bandwidth_bound.calls) +
               " bandwidth-bound (" + t.bandwidth_bound.text() + ")";
    const std::string ratio = t.ratio_lo >= t.ratio_hi - 0.005
                                  ? fixed(t.ratio_lo, 2)
                                  : fixed(t.ratio_lo, 2) + "-" + fixed(t.ratio_hi, 2);
    Finding f = makeFinding(
        "algorithm",
        "allreduce " + library + ": " + algoName(other) + " predicted " +
            fixed(100 * saving / t.measured_ns, 0) + "% faster than its " + algoName(t.own) +
            " (" + format::duration(static_cast<int64_t>(saving / calls)) + " per call, " +
            format::duration(static_cast<int64_t>(saving)) + " in all)",
        std::to_string(t.calls) + " calls on " + std::to_string(t.ranks) + " ranks: " + bound +
            "; measured " + format::duration(static_cast<int64_t>(t.measured_ns)) +
            ", predicted with " + algoName(other) + " " +
            format::duration(static_cast<int64_t>(predicted)) + " (" + modelText(a) + "; " +
            algoName(other) + "/" + algoName(t.own) + " time " + ratio + " at these sizes)");
    // A bench trace measures the algorithms already: no A/B run to suggest.
    if (!benchTrace(s)) f.action = abCommand(s, algoName(other), t.ranks);
    f.cost_ns = static_cast<int64_t>(saving);
    findings->push_back(std::move(f));
  }
}

namespace {

// All-reduces of one communicator and library, in order of entry.
std::map<std::pair<std::string, std::string>, std::vector<const CollectiveInstance*>>
allreducesByComm(const Analysis& a) {
  std::map<std::pair<std::string, std::string>, std::vector<const CollectiveInstance*>> by_comm;
  for (const CollectiveInstance& c : a.collectives) {
    if (allreduceAlgo(c) == Algo::kDefault || c.ranks < 2 || c.duration_ns <= 0) continue;
    by_comm[{c.comm, c.library}].push_back(&c);
  }
  for (auto& [key, list] : by_comm) {
    std::stable_sort(list.begin(), list.end(), [](const auto* x, const auto* y) {
      return x->first_start_ns < y->first_start_ns;
    });
  }
  return by_comm;
}

struct BurstTotals {
  int64_t bursts = 0, calls = 0, bytes = 0;
  double measured_ns = 0, saving_ns = 0;
  std::vector<int64_t> sizes, per_burst, burst_bytes;
};

// One burst: its calls as one all-reduce of their total size, by the model's ratio.
void addBurst(const std::vector<const CollectiveInstance*>& burst, const Model& m,
              BurstTotals* t) {
  constexpr size_t kMinCalls = 3;
  if (burst.size() < kMinCalls) return;
  const Algo algo = allreduceAlgo(*burst.front());
  const int n = burst.front()->ranks;
  double measured = 0, modelled = 0;
  int64_t total = 0;
  for (const CollectiveInstance* c : burst) {
    if (c->ranks != n || allreduceAlgo(*c) != algo) return;
    measured += static_cast<double>(c->duration_ns);
    modelled += m.ns(algo, n, c->bytes);
    total += c->bytes;
  }
  if (!(modelled > 0)) return;
  const double merged = measured * m.ns(algo, n, total) / modelled;
  ++t->bursts;
  t->calls += static_cast<int64_t>(burst.size());
  t->measured_ns += measured;
  t->saving_ns += measured - merged;
  t->per_burst.push_back(static_cast<int64_t>(burst.size()));
  t->burst_bytes.push_back(total);
  for (const CollectiveInstance* c : burst) t->sizes.push_back(c->bytes);
}

}  // namespace

// A trace `ringside bench` wrote (meta command_line): its calls are the benchmark's, not a
// job's, so no tuning advice applies.
bool benchTrace(const AnalysisState& s) {
  return s.meta.command_line.rfind("ringside bench", 0) == 0;
}

namespace {

// DDP's default bucket_cap_mb: advice never goes below it.
constexpr int64_t kDdpDefaultCapMb = 25;
// All-reduces smaller than this are the job's own (a loss, a metric, a flag), not DDP buckets:
// DDP fills buckets with gradients up to bucket_cap_mb.
constexpr int64_t kMinBucketBytes = 1024;

// The bursts of DDP buckets of one communicator's all-reduces: per training step when the job
// has steps, else all-reduces that follow each other within the median call time.
void burstsOf(const std::vector<const CollectiveInstance*>& list, bool by_step, const Model& m,
              BurstTotals* t) {
  std::vector<int64_t> durations;
  for (const CollectiveInstance* c : list) durations.push_back(c->duration_ns);
  std::sort(durations.begin(), durations.end());
  const int64_t gap = percentile(durations, 0.5);
  std::vector<const CollectiveInstance*> burst;
  int64_t burst_end = 0;
  for (const CollectiveInstance* c : list) {
    if (c->bytes < kMinBucketBytes || (by_step && c->step < 0)) continue;
    const bool next = by_step ? (!burst.empty() && c->step != burst.back()->step)
                              : (!burst.empty() && c->first_start_ns - burst_end > gap);
    if (next) {
      addBurst(burst, m, t);
      burst.clear();
    }
    burst_end = burst.empty() ? c->last_end_ns : std::max(burst_end, c->last_end_ns);
    burst.push_back(c);
  }
  addBurst(burst, m, t);
}

}  // namespace

// Bursts of DDP buckets (burstsOf). The advice is checked against what the trace shows of the
// job's settings: the buckets it saw bound its bucket_cap_mb from below, DDP's default (25 MB)
// bounds the advice from below, and a step with one bucket gets none.
void bucketingFindings(const AnalysisState& s, std::vector<Finding>* findings) {
  const Analysis& a = *s.out;
  const Model m = modelOf(s);
  if (!m.ok() || benchTrace(s)) return;
  std::map<std::string, BurstTotals> by_library;
  const bool by_step = a.steps.steps.size() >= 2;
  for (const auto& [key, list] : allreducesByComm(a)) {
    burstsOf(list, by_step, m, &by_library[key.second]);
  }
  for (auto& [library, t] : by_library) {
    if (t.bursts == 0 || t.saving_ns < kMinSavingShare * t.measured_ns ||
        t.saving_ns < kMinSavingNs)
      continue;
    for (auto* v : {&t.sizes, &t.per_burst, &t.burst_bytes}) std::sort(v->begin(), v->end());
    if (percentile(t.per_burst, 0.5) < 2) continue;  // one bucket per step already
    const int64_t burst_bytes = percentile(t.burst_bytes, 0.5);
    const int64_t largest = t.sizes.back();
    const int64_t cap_mb = std::max(kDdpDefaultCapMb, (burst_bytes + (1 << 20) - 1) >> 20);
    if ((cap_mb << 20) <= largest) continue;  // the job's cap is that large already
    Finding f = makeFinding(
        "bucketing",
        "allreduce " + library + ": " + std::to_string(percentile(t.per_burst, 0.5)) +
            " gradient all-reduces per " + (by_step ? "step" : "burst") + " (median " +
            format::bytes(percentile(t.sizes, 0.5)) + "); one per " + (by_step ? "step" : "burst") +
            " predicted " + fixed(100 * t.saving_ns / t.measured_ns, 0) + "% faster (" +
            format::duration(static_cast<int64_t>(t.saving_ns)) + " in all)",
        std::to_string(t.calls) + " calls in " + std::to_string(t.bursts) + " " +
            (by_step ? "steps" : "bursts of back-to-back calls") + ", median " +
            format::bytes(burst_bytes) + " per " + (by_step ? "step" : "burst") +
            ", largest bucket " + format::bytes(largest) + " (all-reduces under " +
            format::bytes(kMinBucketBytes) + " are the job's own, not buckets); measured " +
            format::duration(static_cast<int64_t>(t.measured_ns)) + " (" + modelText(a) + ")");
    f.action = "raise DDP's bucket_cap_mb (DistributedDataParallel(..., bucket_cap_mb=" +
               std::to_string(cap_mb) + "); the largest bucket seen is " + format::bytes(largest) +
               ", DDP's default 25) so that a step's gradients go in fewer all-reduces; confirm "
               "with ringside diff";
    f.cost_ns = static_cast<int64_t>(t.saving_ns);
    findings->push_back(std::move(f));
  }
}

// The share of the collectives' time spent in bandwidth-bound instances; -1 without a model.
double bandwidthBoundShare(const AnalysisState& s) {
  double bandwidth = 0, all = 0;
  for (size_t i = 0; i < s.out->collectives.size() && i < s.latency_share.size(); ++i) {
    if (s.latency_share[i] < 0) continue;
    const auto ns = static_cast<double>(s.out->collectives[i].duration_ns);
    all += ns;
    if (s.latency_share[i] < 0.5F) bandwidth += ns;
  }
  return all > 0 ? bandwidth / all : -1;
}

}  // namespace ringside::analyzer::detail
