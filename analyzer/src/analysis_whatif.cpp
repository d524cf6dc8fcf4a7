// analyzer/analysis_whatif.cpp — the what-if (docs/whatif.md): the job's all-reduces, per
// library, predicted under each all-reduce algorithm ringside has (ring, tree, multipath) on
// this topology. Like the algorithm rule, a prediction scales the measured time by the alpha-beta
// model's ratio (the model knows the links; the measurement knows everything else the library
// costs); multipath's bandwidth term is divided by its rings' total rate over the ring's alone,
// planned on AnalysisOptions::topology (collective/multipath_plan.h, the reference's own planner).
#include <algorithm>
#include <map>
#include <set>

#include "analysis_state.h"
#include "ringside/collective/multipath_plan.h"
#include "ringside/format/units.h"

namespace ringside::analyzer::detail {
namespace {

using Algo = collective::Algorithm;  // ring, tree or multipath here; kDefault: not known
constexpr Algo kAlgos[] = {Algo::kRing, Algo::kTree, Algo::kMultipath};
constexpr int kNoAlgo = -1;

// An algorithm's place in kAlgos (the order of the what-if's columns); kNoAlgo for others.
int indexOf(Algo a) {
  for (int i = 0; i < 3; ++i) {
    if (kAlgos[i] == a) return i;
  }
  return kNoAlgo;
}

const char* whatIfName(Algo a) { return indexOf(a) == kNoAlgo ? "unknown" : collective::name(a); }

// The algorithm an all-reduce ran, when it is one ringside has.
Algo ranAlgo(const CollectiveInstance& c) {
  const Algo a = allreduceAlgorithm(c);
  return indexOf(a) == kNoAlgo ? Algo::kDefault : a;
}

struct Model {
  double alpha_ns = -1, beta_ns = -1;
  double multipath_ratio = -1;  // rings' total rate / the ring's; <= 0 unknown
  TreeLinksOf tree_links{nullptr};
  bool ok() const { return alpha_ns >= 0 && beta_ns > 0; }
  // Modelled time; -1 when this model cannot say (multipath without a plan).
  double ns(Algo a, int n, int64_t bytes) const {
    switch (a) {
      case Algo::kRing: return collective::ringAllreduceTime(n, static_cast<double>(bytes), alpha_ns, beta_ns);
      case Algo::kTree: return collective::treeAllreduceTime(n, bytes, alpha_ns, beta_ns, tree_links(n));
      case Algo::kMultipath:
        return collective::multipathAllreduceTime(n, static_cast<double>(bytes), alpha_ns, beta_ns, multipath_ratio);
      default: break;
    }
    return -1;
  }
};

struct Group {
  WhatIf w;
  Algo ran = Algo::kDefault;
  std::set<int64_t> steps;
  double predicted[3] = {0, 0, 0};
  bool predictable[3] = {true, true, true};
};

std::string modelBasis(const Analysis& a) {
  return a.model_source + " alpha-beta model (alpha " + format::duration(static_cast<int64_t>(a.alpha_s * 1e9)) +
         ", link " + format::rate(1 / a.beta_s_per_byte, 3) + ")";
}

}  // namespace

void buildWhatIf(AnalysisState& s) {
  Analysis& a = *s.out;
  a.what_if.clear();
  Model m;
  m.tree_links = TreeLinksOf(s.options.topology);
  if (a.alpha_s >= 0 && a.beta_s_per_byte > 0) {
    m.alpha_ns = a.alpha_s * 1e9;
    m.beta_ns = a.beta_s_per_byte * 1e9;
  }
  std::map<std::pair<std::string, int>, Group> groups;  // by (library, ranks)
  std::map<int, std::pair<double, std::string>> plans;  // multipath plan per rank count
  for (const CollectiveInstance& c : a.collectives) {
    if (!collective::is(c.op, collective::Op::kAllreduce) || c.ranks < 2 || c.duration_ns <= 0 || c.bytes <= 0 || c.failed) continue;
    Group& g = groups[{c.library, c.ranks}];
    if (g.w.calls == 0) {
      g.ran = ranAlgo(c);
      g.w.library = c.library;
      g.w.ran = whatIfName(g.ran);
      g.w.ranks = c.ranks;
      g.w.min_bytes = c.bytes;
    }
    ++g.w.calls;
    g.w.min_bytes = std::min(g.w.min_bytes, c.bytes);
    g.w.max_bytes = std::max(g.w.max_bytes, c.bytes);
    const auto measured = static_cast<double>(c.duration_ns);
    g.w.measured_ns += measured;
    if (c.step >= 0) g.steps.insert(c.step);
    if (!m.ok()) continue;
    auto& plan = plans[c.ranks];  // planned once per rank count
    if (plan.second.empty()) {
      plan.first = s.options.topology != nullptr
                       ? collective::multipathRateRatio(*s.options.topology, c.ranks, &plan.second)
                       : -1;
      if (s.options.topology != nullptr && !s.options.topology_path.empty())
        plan.second += " (" + s.options.topology_path + ")";
      if (plan.second.empty()) plan.second = "no plan (no topology)";
    }
    Model mm = m;
    mm.multipath_ratio = plan.first;
    const double own = g.ran == Algo::kDefault ? -1 : mm.ns(g.ran, c.ranks, c.bytes);
    for (Algo algo : kAlgos) {
      const int i = indexOf(algo);
      const double t = mm.ns(algo, c.ranks, c.bytes);
      if (t < 0) {
        g.predictable[i] = false;
        continue;
      }
      // Scaled by the model's ratio where the job's own algorithm is known; the model's own time
      // otherwise (an NCCL call whose algorithm no profiler named).
      g.predicted[i] += own > 0 ? measured * t / own : t;
    }
  }
  for (auto& [key, g] : groups) {
    WhatIf& w = g.w;
    w.steps = static_cast<int64_t>(g.steps.size());
    const std::pair<double, std::string>* plan = plans.count(w.ranks) ? &plans[w.ranks] : nullptr;
    w.basis = m.ok() ? modelBasis(a) : "no alpha-beta model (" + (a.model_note.empty() ? std::string("none fitted") : a.model_note) + ")";
    if (plan != nullptr) w.basis += "; multipath: " + plan->second;
    double best = w.measured_ns;
    for (Algo algo : kAlgos) {
      const int i = indexOf(algo);
      WhatIfAlgorithm x;
      x.algorithm = whatIfName(algo);
      x.ran = algo == g.ran;
      if (x.ran) {
        x.predicted_ns = w.measured_ns;
        x.note = "measured";
      } else if (!m.ok()) {
        x.note = "no model";
      } else if (!g.predictable[i]) {
        x.note = "needs a topology (--topology)";
      } else {
        x.predicted_ns = g.predicted[i];
        x.note = g.ran == Algo::kDefault ? "model's own time (the job's algorithm is unknown)" : "measured x model ratio";
        // Within 5 %: on par, not worth an A/B run.
        if (x.predicted_ns < 0.95 * best) {
          best = x.predicted_ns;
          w.best = x.algorithm;
        }
      }
      w.algorithms.push_back(std::move(x));
    }
    if (!w.best.empty()) w.confirm = abCommand(s, w.best, w.ranks);
    a.what_if.push_back(std::move(w));
  }
  // The most time first.
  std::stable_sort(a.what_if.begin(), a.what_if.end(),
                   [](const WhatIf& x, const WhatIf& y) { return x.measured_ns > y.measured_ns; });
}

}  // namespace ringside::analyzer::detail
