#include "ringside/gui/lod.h"

#include <algorithm>
#include <cmath>

namespace ringside::gui {

float TimeAxis::toX(int64_t t) const {
  return x0 + static_cast<float>(static_cast<double>(t - t0) / nsPerPixel());
}

int64_t TimeAxis::toTime(float x) const {
  return t0 + static_cast<int64_t>(std::llround(static_cast<double>(x - x0) * nsPerPixel()));
}

std::vector<DrawItem> lodEvents(const EventRow& row, const TimeAxis& axis, float min_px) {
  std::vector<DrawItem> items;
  const auto& ev = row.events;
  if (ev.empty() || axis.t1 <= axis.t0 || axis.width <= 0) return items;
  // First event that may reach into the view: its running max end is >= t0.
  auto first = std::lower_bound(row.max_end_prefix.begin(), row.max_end_prefix.end(), axis.t0);
  const float left = axis.x0, right = axis.x0 + axis.width;
  DrawItem block;
  bool open = false;
  auto flush = [&] {
    if (open) items.push_back(block);
    open = false;
  };
  // Durations below this are narrower than min_px at this zoom, however they are clipped.
  const double narrow_ns = static_cast<double>(min_px) * axis.nsPerPixel() * 0.999;
  const size_t chunk = EventRow::kChunk;
  for (size_t i = static_cast<size_t>(first - row.max_end_prefix.begin()); i < ev.size(); ++i) {
    // A whole chunk of narrow events that all start before the open block's reach merges into
    // it, exactly as the loop below would do one by one (the block only grows).
    // Every event of such a chunk is narrow and starts within min_px of the latest end before it,
    // so one by one each would join the block: join them all at once.
    while (open && i % chunk == 0 && i / chunk < row.chunks.size() && ev[i].start_ns >= axis.t0 &&
           axis.toX(ev[i].start_ns) <= block.x1 + min_px) {
      auto fits = [&](const EventRow::ChunkSummary& c) {
        return static_cast<double>(c.max_duration) < narrow_ns && static_cast<double>(c.max_gap) < narrow_ns &&
               c.last_start <= axis.t1;
      };
      const bool big = i % EventRow::kBigChunk == 0 && i / EventRow::kBigChunk < row.big_chunks.size() &&
                       fits(row.big_chunks[i / EventRow::kBigChunk]);
      const EventRow::ChunkSummary& c = big ? row.big_chunks[i / EventRow::kBigChunk] : row.chunks[i / chunk];
      if (!big && !fits(c)) break;
      const size_t size = big ? EventRow::kBigChunk : chunk;
      block.x1 = std::max(block.x1, std::min(right, axis.toX(c.max_end)));
      block.end_ns = std::max(block.end_ns, c.max_end);
      block.count += static_cast<int>(size);
      i += size;
      if (i >= ev.size()) break;
    }
    if (i >= ev.size()) break;
    const TimelineEvent& e = ev[i];
    if (e.start_ns > axis.t1) break;
    if (e.end_ns < axis.t0) continue;  // behind a long earlier event
    float x0 = std::max(left, axis.toX(e.start_ns));
    float x1 = std::min(right, axis.toX(e.end_ns));
    if (x1 - x0 >= min_px) {
      flush();
      items.push_back({x0, x1, e.start_ns, e.end_ns, static_cast<int>(i), 1});
      continue;
    }
    if (open && x0 <= block.x1 + min_px) {
      block.x1 = std::max(block.x1, x1);
      block.end_ns = std::max(block.end_ns, e.end_ns);
      ++block.count;
      continue;
    }
    flush();
    block = {x0, x1, e.start_ns, e.end_ns, static_cast<int>(i), 1};
    open = true;
  }
  flush();
  // A lone narrow event stays itself; a block is drawn at least min_px wide.
  for (DrawItem& it : items) {
    if (it.x1 - it.x0 < min_px) it.x1 = std::min(right, it.x0 + min_px);
  }
  return items;
}

std::vector<CounterColumn> downsampleCounter(const Counter& counter, const TimeAxis& axis) {
  std::vector<CounterColumn> cols;
  const int64_t n = static_cast<int64_t>(counter.values.size());
  if (n == 0 || axis.t1 <= axis.t0 || axis.width <= 0) return cols;
  const int64_t c_end = counter.start_ns + n * counter.bin_ns;
  const int pixels = static_cast<int>(std::ceil(axis.width));
  cols.reserve(static_cast<size_t>(pixels));
  for (int px = 0; px < pixels; ++px) {
    int64_t a = axis.toTime(axis.x0 + static_cast<float>(px));
    int64_t b = axis.toTime(axis.x0 + static_cast<float>(px + 1));
    if (b <= counter.start_ns || a >= c_end) continue;
    a = std::max(a, counter.start_ns);
    b = std::min(b, c_end);
    int64_t i0 = (a - counter.start_ns) / counter.bin_ns;
    int64_t i1 = std::max(i0, (b - 1 - counter.start_ns) / counter.bin_ns);
    i1 = std::min(i1, n - 1);
    CounterColumn c;
    c.x = axis.x0 + static_cast<float>(px);
    c.min = c.max = counter.values[static_cast<size_t>(i0)];
    for (int64_t i = i0 + 1; i <= i1; ++i) {
      c.min = std::min(c.min, counter.values[static_cast<size_t>(i)]);
      c.max = std::max(c.max, counter.values[static_cast<size_t>(i)]);
    }
    cols.push_back(c);
  }
  return cols;
}

std::vector<LaneLayout> layoutLanes(const TimelineModel& model, const std::vector<bool>& collapsed,
                                    float top, const LayoutOptions& options) {
  std::vector<LaneFlags> flags(model.lanes.size());
  for (size_t i = 0; i < flags.size() && i < collapsed.size(); ++i) flags[i].collapsed = collapsed[i];
  return layoutLanes(model, flags, top, options);
}

std::vector<LaneLayout> layoutLanes(const TimelineModel& model, const std::vector<LaneFlags>& flags,
                                    float top, const LayoutOptions& options) {
  std::vector<LaneLayout> out(model.lanes.size());
  std::vector<size_t> order;
  for (int pass = 0; pass < 2; ++pass) {  // pinned lanes first
    for (size_t i = 0; i < model.lanes.size(); ++i) {
      const bool pinned = i < flags.size() && flags[i].pinned;
      if (pinned == (pass == 0)) order.push_back(i);
    }
  }
  // Folded host groups hide their rank lanes.
  std::vector<char> host_folded;
  for (size_t i = 0; i < model.lanes.size(); ++i) {
    const Lane& lane = model.lanes[i];
    if (lane.kind != LaneKind::kHost || lane.host < 0) continue;
    if (static_cast<size_t>(lane.host) >= host_folded.size()) host_folded.resize(static_cast<size_t>(lane.host) + 1, 0);
    host_folded[static_cast<size_t>(lane.host)] = i < flags.size() && flags[i].collapsed ? 1 : 0;
  }
  float y = top;
  for (size_t i : order) {
    const Lane& lane = model.lanes[i];
    LaneFlags f = i < flags.size() ? flags[i] : LaneFlags{};
    if (lane.kind == LaneKind::kRank && lane.host >= 0 &&
        static_cast<size_t>(lane.host) < host_folded.size() && host_folded[static_cast<size_t>(lane.host)] &&
        !f.pinned) {
      f.hidden = true;
    }
    LaneLayout& l = out[i];
    l.y = y;
    l.header = options.line;
    l.row_height = options.line;
    l.collapsed = f.collapsed;
    if (f.hidden) {
      l.height = 0;
      continue;
    }
    float body = 0;
    if (!l.collapsed && lane.kind != LaneKind::kHost) {  // a host lane is its header only
      body = lane.kind == LaneKind::kRank ? options.line * static_cast<float>(lane.rows.size())
                                          : options.counter_height;
    }
    l.height = l.header + body;
    y += l.height + options.gap;
  }
  return out;
}

Hit hitTest(const TimelineModel& model, const std::vector<LaneLayout>& layout,
            const TimeAxis& axis, float x, float y, float min_px, float slack_px) {
  Hit hit;
  for (size_t i = 0; i < layout.size() && i < model.lanes.size(); ++i) {
    const LaneLayout& l = layout[i];
    if (y < l.y || y >= l.y + l.height) continue;
    hit.lane = static_cast<int>(i);
    const Lane& lane = model.lanes[i];
    float in_body = y - l.y - l.header;
    if (l.collapsed || in_body < 0 || lane.kind != LaneKind::kRank) return hit;
    int row = static_cast<int>(in_body / l.row_height);
    if (row < 0 || row >= static_cast<int>(lane.rows.size())) return hit;
    hit.row = row;
    float best = slack_px + 1;
    for (const DrawItem& it : lodEvents(lane.rows[static_cast<size_t>(row)], axis, min_px)) {
      float d = x < it.x0 ? it.x0 - x : (x > it.x1 ? x - it.x1 : 0.0f);
      if (d <= slack_px && d < best) {
        best = d;
        hit.event = it.first;
        hit.count = it.count;
      }
    }
    return hit;
  }
  return hit;
}

}  // namespace ringside::gui

namespace ringside::gui {

size_t FrameGeometry::itemCount() const {
  size_t n = 0;
  for (const RowGeometry& r : rows) n += r.items.size();
  for (const CounterGeometry& c : counters) n += c.columns.size();
  return n;
}

FrameGeometry buildFrameGeometry(const TimelineModel& model, const std::vector<LaneLayout>& layout,
                                 const TimeAxis& axis, float clip_y0, float clip_y1, float min_px) {
  FrameGeometry g;
  for (size_t i = 0; i < model.lanes.size() && i < layout.size(); ++i) {
    const Lane& lane = model.lanes[i];
    const LaneLayout& l = layout[i];
    if (l.height <= 0 || l.collapsed || l.y > clip_y1 || l.y + l.height < clip_y0) continue;
    if (lane.kind == LaneKind::kRank) {
      for (size_t r = 0; r < lane.rows.size(); ++r) {
        const float y0 = l.y + l.header + l.row_height * static_cast<float>(r);
        if (y0 > clip_y1 || y0 + l.row_height < clip_y0) continue;
        g.rows.push_back({static_cast<int>(i), static_cast<int>(r), y0, y0 + l.row_height,
                          lodEvents(lane.rows[r], axis, min_px)});
      }
    } else if (lane.kind == LaneKind::kLink) {
      g.counters.push_back({static_cast<int>(i), l.y + l.header, l.y + l.height,
                            downsampleCounter(lane.counter, axis)});
    }
  }
  return g;
}

}  // namespace ringside::gui
