// analyzer/analysis_model.cpp — the model stage: the alpha-beta model, from the topology when
// it states link bandwidths, else fitted to the trace's sends, and each instance's expected
// time (docs/analyzer.md, "Alpha-beta model").
#include <algorithm>

#include "analysis_state.h"
#include "ringside/analyzer/topology.h"
#include "ringside/format/units.h"

namespace ringside::analyzer::detail {
namespace {

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

// A fit needs this much: sizes with a few sends each, spread wide enough that a latency term
// and a per-byte term can be told apart, and enough sends in all.
constexpr int64_t kFitMinSendsPerSize = 3;
constexpr size_t kFitMinSizes = 3;
constexpr int64_t kFitMinSpread = 8;  // largest size / smallest size
constexpr int64_t kFitMinSends = 20;
// A fitted link faster than this, or slower, or a latency above kFitMaxAlphaNs, is no link.
constexpr double kFitMinGbps = 0.001, kFitMaxGbps = 10000, kFitMaxAlphaNs = 1e9;

// A line through (bytes, a low duration of that size: the median of its fastest kept sends). Empty *note: alpha and beta are set; else *note says why there is no model.
void fittedModel(const FitPoints& fit, double* alpha_ns, double* beta_ns, std::string* note) {
  std::vector<std::pair<double, double>> points;
  for (const auto& [bytes, size] : fit.by_bytes) {
    if (size.sends < kFitMinSendsPerSize || size.fastest.empty()) continue;
    points.emplace_back(static_cast<double>(bytes),
                        static_cast<double>(size.fastest[(size.fastest.size() - 1) / 2]));
  }
  const std::string need = " (needs " + std::to_string(kFitMinSizes) + " message sizes with >= " +
                           std::to_string(kFitMinSendsPerSize) + " sends each, spanning " +
                           std::to_string(kFitMinSpread) + "x, and " +
                           std::to_string(kFitMinSends) + " sends)";
  const bool spread = points.size() >= 2 && points.front().first > 0 &&
                      points.back().first >= points.front().first * kFitMinSpread;
  if (points.size() < kFitMinSizes || !spread || fit.sends < kFitMinSends) {
    *note = "too few sizes to fit a model: " + std::to_string(fit.sends) + " sends, " +
            std::to_string(points.size()) + " sizes with >= " +
            std::to_string(kFitMinSendsPerSize) + " sends" + need;
    return;
  }
  // Least squares of the relative error (weights 1/y^2): sizes span decades, and a plain fit
  // would let the largest size alone set both terms (a negative latency, a slow link).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : points) {
    const double w = 1 / std::max(1.0, y * y);
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double den = sw * sxx - sx * sx;
  const double slope = den > 0 ? (sw * sxy - sx * sy) / den : 0;
  const double intercept = (sy - slope * sx) / sw;
  if (!(slope > 0) || !(intercept > 0) || intercept > kFitMaxAlphaNs || 1 / slope < kFitMinGbps ||
      1 / slope > kFitMaxGbps) {
    *note = "no sane model fits this trace's sends: " +
            (slope > 0 ? "latency " + format::duration(static_cast<int64_t>(intercept)) +
                             ", link " + format::rate(1e9 / slope, 3)
                       : std::string("larger sends are not slower"));
    return;
  }
  *alpha_ns = intercept;
  *beta_ns = slope;
}

}  // namespace

void fitModel(AnalysisState& s) {
  Analysis* out = s.out;
  s.topology_model = topologyModel(s.options.topology, out);
  if (!s.topology_model) {
    fittedModel(s.fit, &s.alpha_ns, &s.beta_ns_per_byte, &out->model_note);
    if (s.beta_ns_per_byte > 0) {
      out->model_source = "fitted";
      out->alpha_s = s.alpha_ns * 1e-9;
      out->beta_s_per_byte = s.beta_ns_per_byte * 1e-9;
    }
  }
  s.latency_share.assign(out->collectives.size(), -1.0F);
  for (size_t i = 0; i < out->collectives.size(); ++i) {
    CollectiveInstance& c = out->collectives[i];
    collective::Op op = collective::Op::kUnknown;
    collective::parse(c.op, &op);
    const int steps = collective::modelSteps(op, c.library.find("tree") != std::string::npos, c.ranks);
    double factor = busbwFactor(c.op, c.ranks);
    double latency_ns = 0;
    if (s.topology_model) {
      if (s.slowest_link_gbps[i] > 0) {
        latency_ns = steps * std::max(0.0, s.slowest_link_latency_s[i]) * 1e9;
        c.expected_ns = latency_ns + factor * static_cast<double>(c.bytes) / s.slowest_link_gbps[i];
      }
    } else if (s.beta_ns_per_byte > 0) {
      latency_ns = steps * s.alpha_ns;
      c.expected_ns = latency_ns + factor * static_cast<double>(c.bytes) * s.beta_ns_per_byte;
    }
    if (c.expected_ns > 0) s.latency_share[i] = static_cast<float>(latency_ns / c.expected_ns);
  }
}

}  // namespace ringside::analyzer::detail
