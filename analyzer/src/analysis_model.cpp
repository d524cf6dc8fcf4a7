// analyzer/analysis_model.cpp — the model stage: the alpha-beta model, from the topology when
// it states link bandwidths, else fitted to the trace's sends, and each instance's expected
// time (docs/analyzer.md, "Alpha-beta model").
#include <algorithm>

#include "analysis_state.h"
#include "ringside/analyzer/topology.h"

namespace ringside::analyzer::detail {
namespace {

// Latency terms of the alpha-beta model: messages on the critical path.
int modelSteps(const std::string& op, const std::string& library, int n) {
  if (n <= 1) return 0;
  bool tree = library.find("tree") != std::string::npos;
  if (op == "allreduce") return tree ? 2 * ceilLog2(n) : 2 * (n - 1);
  if (op == "reducescatter" || op == "allgather" || op == "allgatherv" || op == "alltoall" ||
      op == "alltoallv") {
    return n - 1;
  }
  if (op == "broadcast" || op == "reduce" || op == "barrier") return ceilLog2(n);
  return 1;
}

// The topology's model: the slowest link's bandwidth, the largest latency.
bool topologyModel(const Topology* topo, Analysis* out) {
  if (topo == nullptr) return false;
  double min_bw = -1, max_lat = 0;
  for (const TopologyLink& tl : topo->links) {
    if (tl.bandwidth_gbps > 0)
      min_bw = min_bw < 0 ? tl.bandwidth_gbps : std::min(min_bw, tl.bandwidth_gbps);
    max_lat = std::max(max_lat, tl.latency_s);
  }
  if (min_bw <= 0) return false;
  out->model_source = "topology";
  out->alpha_s = max_lat;
  out->beta_s_per_byte = 1.0 / (min_bw * 1e9);
  return true;
}

// A least-squares line through the sends' (bytes, duration).
void fittedModel(const FitSums& fit, double* alpha_ns, double* beta_ns) {
  if (fit.n < 2) return;
  double n = static_cast<double>(fit.n);
  double den = n * fit.xx - fit.x * fit.x;
  if (den > 0) {
    double slope = (n * fit.xy - fit.x * fit.y) / den;
    double intercept = (fit.y - slope * fit.x) / n;
    if (slope > 0) {
      *beta_ns = slope;
      *alpha_ns = std::max(0.0, intercept);
    }
  }
  // One message size (or small messages slower than large ones): no latency term can be
  // separated; the whole time is charged to bandwidth.
  if (*beta_ns <= 0 && fit.x > 0 && fit.y > 0) {
    *beta_ns = fit.y / fit.x;
    *alpha_ns = 0;
  }
}

}  // namespace

void fitModel(AnalysisState& s) {
  Analysis* out = s.out;
  s.topology_model = topologyModel(s.options.topology, out);
  if (!s.topology_model) {
    fittedModel(s.fit, &s.alpha_ns, &s.beta_ns_per_byte);
    if (s.beta_ns_per_byte > 0) {
      out->model_source = "fitted";
      out->alpha_s = s.alpha_ns * 1e-9;
      out->beta_s_per_byte = s.beta_ns_per_byte * 1e-9;
    }
  }
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    CollectiveInstance& c = out->collectives[i];
    int steps = modelSteps(c.op, c.library, c.ranks);
    double factor = busbwFactor(c.op, c.ranks);
    if (s.topology_model) {
      if (s.slowest_link_gbps[i] > 0) {
        c.expected_ns = steps * std::max(0.0, s.slowest_link_latency_s[i]) * 1e9 +
                        factor * static_cast<double>(c.bytes) / s.slowest_link_gbps[i];
      }
    } else if (s.beta_ns_per_byte > 0) {
      c.expected_ns =
          steps * s.alpha_ns + factor * static_cast<double>(c.bytes) * s.beta_ns_per_byte;
    }
  }
}

}  // namespace ringside::analyzer::detail
