#include "ringside/gui/lod.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

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
      // Rows counted, built or not: a lane's rows are built when a frame draws them.
      body = lane.kind == LaneKind::kRank ? options.line * static_cast<float>(model.rowCount(i))
                                          : options.counter_height;
    }
    l.height = l.header + body;
    y += l.height + options.gap;
  }
  return out;
}

int laneAt(std::span<const LaneLayout> layout, float y) {
  for (size_t i = 0; i < layout.size(); ++i) {
    if (y >= layout[i].y && y < layout[i].y + layout[i].height) return static_cast<int>(i);
  }
  return -1;
}

Hit hitRankLane(const Lane& lane, int index, const LaneLayout& l, const TimeAxis& axis, float x,
                float y, float min_px, float slack_px) {
  Hit hit;
  hit.lane = index;
  const float in_body = y - l.y - l.header;
  if (l.collapsed || in_body < 0) return hit;
  const int row = static_cast<int>(in_body / l.row_height);
  if (row < 0 || row >= static_cast<int>(lane.rows.size())) return hit;
  hit.row = row;
  float best = slack_px + 1;
  for (const DrawItem& it : lodEvents(lane.rows[static_cast<size_t>(row)], axis, min_px)) {
    const float d = x < it.x0 ? it.x0 - x : (x > it.x1 ? x - it.x1 : 0.0f);
    if (d <= slack_px && d < best) {
      best = d;
      hit.event = it.first;
      hit.count = it.count;
    }
  }
  return hit;
}

Hit hitTest(const TimelineModel& model, const std::vector<LaneLayout>& layout, const TimeAxis& axis,
            float x, float y, float min_px, float slack_px) {
  const size_t n = std::min(layout.size(), model.lanes.size());
  const int i = laneAt(std::span<const LaneLayout>(layout).first(n), y);
  if (i < 0) return Hit{};
  const Lane& lane = model.lanes[static_cast<size_t>(i)];
  if (lane.kind != LaneKind::kRank) return Hit{i, -1, -1, 0};
  model.buildLane(static_cast<size_t>(i));
  return hitRankLane(lane, i, layout[static_cast<size_t>(i)], axis, x, y, min_px, slack_px);
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
      model.buildLane(i);  // in view: its rows are built now, if they were not (loaded on demand)
      for (size_t r = 0; r < lane.rows.size(); ++r) {
        const float y0 = l.y + l.header + l.row_height * static_cast<float>(r);
        if (y0 > clip_y1 || y0 + l.row_height < clip_y0) continue;
        g.rows.push_back({static_cast<int>(i), static_cast<int>(r), y0, y0 + l.row_height,
                          lodEvents(lane.rows[r], axis, min_px)});
      }
    } else if (lane.kind == LaneKind::kLink) {
      g.counters.push_back({static_cast<int>(i), l.y + l.header, l.y + l.height, linkLevel(lane, axis),
                            downsampleLink(lane, axis)});
    }
  }
  return g;
}

}  // namespace ringside::gui

namespace ringside::gui {

double FrameGeometry::linkTop() const {
  double top = 0;
  for (const CounterGeometry& c : counters) {
    for (const CounterColumn& col : c.columns) top = std::max(top, col.max);
  }
  return top;
}

const char* linkLevelName(LinkLevel level) {
  switch (level) {
    case LinkLevel::kCounter: return "bins";
    case LinkLevel::kFine: return "fine bins";
    case LinkLevel::kMessages: return "messages";
  }
  return "bins";
}

LinkLevel linkLevel(const Lane& lane, const TimeAxis& axis) {
  const double ns_px = axis.nsPerPixel();
  if (lane.messages.empty() || static_cast<double>(lane.counter.bin_ns) <= ns_px) return LinkLevel::kCounter;
  if (!lane.fine.values.empty() && static_cast<double>(lane.fine.bin_ns) <= ns_px) return LinkLevel::kFine;
  return LinkLevel::kMessages;
}

namespace {

// The first message that may reach into [t0, ...]: its running max end is >= t0.
size_t firstMessage(const Lane& lane, int64_t t0) {
  auto it = std::lower_bound(lane.messages_max_end.begin(), lane.messages_max_end.end(), t0);
  return static_cast<size_t>(it - lane.messages_max_end.begin());
}

// The messages in view binned one column per pixel: each message's bytes spread evenly over its
// [start, end] (an instant one lands in its column), as the analysis spreads them over its bins.
std::vector<CounterColumn> binMessages(const Lane& lane, const TimeAxis& axis) {
  std::vector<CounterColumn> cols;
  const Counter& c = lane.counter;
  const int pixels = static_cast<int>(std::ceil(axis.width));
  if (pixels <= 0) return cols;
  const double ns_px = axis.nsPerPixel();
  std::vector<double> acc(static_cast<size_t>(pixels) + 1, 0.0), slope(static_cast<size_t>(pixels) + 2, 0.0);
  const double t0 = static_cast<double>(axis.t0);
  auto column = [&](double t) {
    return std::clamp(static_cast<int64_t>(std::floor((t - t0) / ns_px)), int64_t{0}, int64_t{pixels - 1});
  };
  for (size_t i = firstMessage(lane, axis.t0); i < lane.messages.size(); ++i) {
    const LinkMessage& m = lane.messages[i];
    if (m.start_ns > axis.t1) break;
    if (m.end_ns < axis.t0 || m.bytes <= 0) continue;
    const double s = static_cast<double>(std::max(m.start_ns, axis.t0));
    const double e = static_cast<double>(std::min(m.end_ns, axis.t1));
    if (m.end_ns <= m.start_ns) {
      acc[static_cast<size_t>(column(s))] += static_cast<double>(m.bytes);
      continue;
    }
    const double rate = static_cast<double>(m.bytes) / static_cast<double>(m.end_ns - m.start_ns);  // bytes/ns
    const int64_t cs = column(s), ce = column(e);
    if (cs == ce) {
      acc[static_cast<size_t>(cs)] += rate * (e - s);
      continue;
    }
    acc[static_cast<size_t>(cs)] += rate * (t0 + static_cast<double>(cs + 1) * ns_px - s);
    acc[static_cast<size_t>(ce)] += rate * (e - (t0 + static_cast<double>(ce) * ns_px));
    // Whole columns in between: rate x column width each, through a difference array.
    slope[static_cast<size_t>(cs + 1)] += rate * ns_px;
    slope[static_cast<size_t>(ce)] -= rate * ns_px;
  }
  const int64_t c_end = c.start_ns + static_cast<int64_t>(c.values.size()) * c.bin_ns;
  cols.reserve(static_cast<size_t>(pixels));
  double run = 0;
  for (int px = 0; px < pixels; ++px) {
    run += slope[static_cast<size_t>(px)];
    const int64_t a = axis.toTime(axis.x0 + static_cast<float>(px));
    const int64_t b = axis.toTime(axis.x0 + static_cast<float>(px + 1));
    if (b <= c.start_ns || a >= c_end) continue;  // outside the trace, as downsampleCounter
    const double bytes_per_s = (acc[static_cast<size_t>(px)] + run) / ns_px * 1e9;
    cols.push_back({axis.x0 + static_cast<float>(px), bytes_per_s, bytes_per_s});
  }
  return cols;
}

}  // namespace

std::vector<CounterColumn> downsampleLink(const Lane& lane, const TimeAxis& axis) {
  if (axis.t1 <= axis.t0 || axis.width <= 0) return {};
  switch (linkLevel(lane, axis)) {
    case LinkLevel::kCounter: return downsampleCounter(lane.counter, axis);
    case LinkLevel::kFine: return downsampleCounter(lane.fine, axis);
    case LinkLevel::kMessages: return binMessages(lane, axis);
  }
  return {};
}

MessageSpan messagesIn(const Lane& lane, int64_t t0, int64_t t1) {
  MessageSpan span;
  for (size_t i = firstMessage(lane, t0); i < lane.messages.size(); ++i) {
    const LinkMessage& m = lane.messages[i];
    if (m.start_ns > t1) break;
    if (m.end_ns < t0) continue;
    if (span.first < 0) span.first = static_cast<int64_t>(i);
    ++span.count;
    span.bytes += m.bytes;
  }
  return span;
}

void Lane::finishMessages(int fine_bins) {
  auto by_start = [](const LinkMessage& a, const LinkMessage& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(messages.begin(), messages.end(), by_start)) {
    std::stable_sort(messages.begin(), messages.end(), by_start);
  }
  if (messages.capacity() > messages.size() + messages.size() / 4) messages.shrink_to_fit();  // grown by doubling
  messages_max_end.resize(messages.size());
  int64_t running = INT64_MIN;
  for (size_t i = 0; i < messages.size(); ++i) {
    running = std::max(running, messages[i].end_ns);
    messages_max_end[i] = running;
  }
  fine = Counter{};
  const int64_t n = static_cast<int64_t>(counter.values.size());
  if (messages.empty() || n == 0 || fine_bins <= n) return;
  // The counter's time range, in at most fine_bins bins (offsets unsigned: no overflow).
  const uint64_t span = static_cast<uint64_t>(n) * static_cast<uint64_t>(counter.bin_ns);
  const uint64_t bin_ns = std::max<uint64_t>(1, (span + static_cast<uint64_t>(fine_bins) - 1) /
                                                     static_cast<uint64_t>(fine_bins));
  if (bin_ns >= static_cast<uint64_t>(counter.bin_ns)) return;  // no finer than the counter
  const uint64_t bins = (span + bin_ns - 1) / bin_ns;
  fine.start_ns = counter.start_ns;
  fine.bin_ns = static_cast<int64_t>(bin_ns);
  fine.values.assign(static_cast<size_t>(bins), 0.0);
  std::vector<double> slope(static_cast<size_t>(bins) + 1, 0.0);
  auto offset = [&](int64_t t) {
    return std::min(span, static_cast<uint64_t>(std::max(t, counter.start_ns)) - static_cast<uint64_t>(counter.start_ns));
  };
  for (const LinkMessage& m : messages) {
    if (m.bytes <= 0) continue;
    const uint64_t from = offset(m.start_ns), to = offset(m.end_ns);
    const uint64_t b0 = std::min(bins - 1, from / bin_ns), b1 = std::min(bins - 1, to / bin_ns);
    if (b0 == b1 || to <= from) {
      fine.values[static_cast<size_t>(b0)] += static_cast<double>(m.bytes);
      continue;
    }
    // The partial first and last bins, then the whole bins between through a difference array
    // (a message as long as the trace costs two steps, not one per bin).
    const double per_ns = static_cast<double>(m.bytes) / static_cast<double>(to - from);
    fine.values[static_cast<size_t>(b0)] += per_ns * static_cast<double>((b0 + 1) * bin_ns - from);
    fine.values[static_cast<size_t>(b1)] += per_ns * static_cast<double>(to - std::min(to, b1 * bin_ns));
    slope[static_cast<size_t>(b0 + 1)] += per_ns * static_cast<double>(bin_ns);
    slope[static_cast<size_t>(b1)] -= per_ns * static_cast<double>(bin_ns);
  }
  double run = 0;
  for (size_t b = 0; b < fine.values.size(); ++b) {
    run += slope[b];
    double& v = fine.values[b];
    v = (v + run) / static_cast<double>(bin_ns) * 1e9;  // bytes/s
    fine.max_value = std::max(fine.max_value, v);
  }
}

}  // namespace ringside::gui
