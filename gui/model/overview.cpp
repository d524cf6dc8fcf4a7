// gui/model/overview.cpp — the ranks x time overview (timeline_model.h, Overview).
#include <algorithm>
#include <cstdint>
#include <map>

#include "ringside/gui/timeline_model.h"

namespace ringside::gui {
namespace {

// Adds the part of [a, b) inside the overview's range to `acc` (ns per bin).
void addSpan(const Overview& o, int64_t a, int64_t b, double* acc) {
  if (b <= a) return;
  const int64_t range_end = o.start_ns + o.bin_ns * o.bins;
  a = std::max(a, o.start_ns);
  b = std::min(b, range_end);
  if (b <= a) return;
  // Offsets from the start are below bins * bin_ns: no overflow.
  const int64_t first = (a - o.start_ns) / o.bin_ns, last = std::min<int64_t>(o.bins - 1, (b - 1 - o.start_ns) / o.bin_ns);
  for (int64_t k = first; k <= last; ++k) {
    const int64_t lo = std::max(a, o.start_ns + k * o.bin_ns), hi = std::min(b, o.start_ns + (k + 1) * o.bin_ns);
    if (hi > lo) acc[k] += static_cast<double>(hi - lo);
  }
}

}  // namespace

Overview buildOverview(const TimelineModel& model, int bins, int max_rows) {
  Overview o;
  std::vector<int> rank_lanes;
  for (size_t i = 0; i < model.lanes.size(); ++i) {
    if (model.lanes[i].kind == LaneKind::kRank) rank_lanes.push_back(static_cast<int>(i));
  }
  const int64_t span = model.end_ns - model.start_ns;
  if (rank_lanes.empty() || span <= 0 || bins <= 0 || max_rows <= 0) return o;
  o.start_ns = model.start_ns;
  o.bin_ns = std::max<int64_t>(1, (span + bins - 1) / bins);
  o.bins = static_cast<int>((span + o.bin_ns - 1) / o.bin_ns);
  const int n = static_cast<int>(rank_lanes.size());
  o.rows = std::min(n, max_rows);
  const size_t cells = static_cast<size_t>(o.rows) * static_cast<size_t>(o.bins);
  std::vector<double> wait(cells, 0.0), move(cells, 0.0);
  o.first_lane.assign(static_cast<size_t>(o.rows), -1);
  o.last_lane.assign(static_cast<size_t>(o.rows), -1);
  o.first_rank.assign(static_cast<size_t>(o.rows), INT32_MAX);
  o.last_rank.assign(static_cast<size_t>(o.rows), -1);
  std::vector<int> ranks_in_row(static_cast<size_t>(o.rows), 0);
  const auto& instances = model.analysis.collectives;
  for (int k = 0; k < n; ++k) {
    const int row = static_cast<int>(static_cast<int64_t>(k) * o.rows / n);  // consecutive lanes
    const size_t r = static_cast<size_t>(row);
    const Lane& lane = model.lanes[static_cast<size_t>(rank_lanes[static_cast<size_t>(k)])];
    if (o.first_lane[r] < 0) o.first_lane[r] = rank_lanes[static_cast<size_t>(k)];
    o.last_lane[r] = rank_lanes[static_cast<size_t>(k)];
    o.first_rank[r] = std::min(o.first_rank[r], lane.rank);
    o.last_rank[r] = std::max(o.last_rank[r], lane.rank);
    ++ranks_in_row[r];
    double* w = wait.data() + r * static_cast<size_t>(o.bins);
    double* m = move.data() + r * static_cast<size_t>(o.bins);
    // The lane's calls from its sources: a lane the overview covers is not built for it.
    for (const TimelineEvent& e : model.callsOf(static_cast<size_t>(rank_lanes[static_cast<size_t>(k)]))) {
      int64_t arrived = e.start_ns;  // when everyone was in: the waiting ends there
      if (e.collective >= 0 && static_cast<size_t>(e.collective) < instances.size()) {
        arrived = std::clamp(instances[static_cast<size_t>(e.collective)].last_start_ns, e.start_ns, e.end_ns);
      }
      addSpan(o, e.start_ns, arrived, w);
      addSpan(o, arrived, e.end_ns, m);
    }
  }
  for (int k : ranks_in_row) o.most_ranks_in_row = std::max(o.most_ranks_in_row, k);
  o.wait.resize(cells);
  o.move.resize(cells);
  for (size_t c = 0; c < cells; ++c) {
    const double per = static_cast<double>(o.bin_ns) * ranks_in_row[c / static_cast<size_t>(o.bins)];
    // Overlapping calls on one rank (sub-rows) may sum past the bin: a share is at most 1.
    const double wv = std::min(1.0, wait[c] / per), mv = std::min(1.0 - wv, move[c] / per);
    o.wait[c] = static_cast<float>(wv);
    o.move[c] = static_cast<float>(std::max(0.0, mv));
  }
  std::map<int, int64_t> late;
  for (const analyzer::CollectiveInstance& c : instances) {
    if (c.ranks >= 2 && c.arrival_skew_ns > 0 && c.straggler_rank >= 0) ++late[c.straggler_rank];
  }
  for (const auto& [rank, count] : late) {
    if (count > o.latest_count) {
      o.latest_rank = rank;
      o.latest_count = count;
    }
  }
  return o;
}

}  // namespace ringside::gui

namespace ringside::gui {

std::vector<uint8_t> overviewRgba(const Overview& o, int width, bool dark) {
  std::vector<uint8_t> px;
  if (o.rows <= 0 || o.bins <= 0 || width <= 0) return px;
  px.resize(static_cast<size_t>(width) * static_cast<size_t>(o.rows) * 4);
  const float bg[3] = {dark ? 38.0f : 236.0f, dark ? 40.0f : 236.0f, dark ? 46.0f : 240.0f};
  const float waiting[3] = {245, 140, 30}, moving[3] = {50, 120, 235};
  for (int row = 0; row < o.rows; ++row) {
    for (int x = 0; x < width; ++x) {
      // Bins [b0, b1) under this column; at least one.
      const int b0 = static_cast<int>(static_cast<int64_t>(x) * o.bins / width);
      const int b1 = std::max(b0 + 1, static_cast<int>(static_cast<int64_t>(x + 1) * o.bins / width));
      float w = 0, m = 0;
      for (int b = b0; b < b1 && b < o.bins; ++b) {
        w += o.waitAt(row, b);
        m += o.moveAt(row, b);
      }
      w /= static_cast<float>(b1 - b0);
      m /= static_cast<float>(b1 - b0);
      const float rest = std::max(0.0f, 1.0f - w - m);
      uint8_t* p = px.data() + (static_cast<size_t>(row) * static_cast<size_t>(width) + static_cast<size_t>(x)) * 4;
      for (int c = 0; c < 3; ++c) {
        p[c] = static_cast<uint8_t>(std::clamp(bg[c] * rest + waiting[c] * w + moving[c] * m, 0.0f, 255.0f));
      }
      p[3] = 255;
    }
  }
  return px;
}

}  // namespace ringside::gui
