#include "ringside/gui/timeline_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "timeline_build.h"

namespace ringside::gui {

void EventRow::finish() {
  auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_ns < b.start_ns; };
  // Rows arrive ordered by start from the reader: sort (stably) only when they are not.
  if (!std::is_sorted(events.begin(), events.end(), by_start)) std::stable_sort(events.begin(), events.end(), by_start);
  max_end_prefix.resize(events.size());
  int64_t running = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < events.size(); ++i) {
    running = std::max(running, events[i].end_ns);
    max_end_prefix[i] = running;
  }
  auto summarise = [&](size_t size, std::vector<ChunkSummary>* out) {
    const size_t n = events.size() / size;  // full chunks only
    out->assign(n, ChunkSummary{0, std::numeric_limits<int64_t>::min(), 0});
    for (size_t i = 0; i < n * size; ++i) {
      ChunkSummary& c = (*out)[i / size];
      if (i % size != 0) c.max_gap = std::max(c.max_gap, events[i].start_ns - c.max_end);
      c.max_duration = std::max(c.max_duration, events[i].end_ns - events[i].start_ns);
      c.max_end = std::max(c.max_end, events[i].end_ns);
      c.last_start = events[i].start_ns;
    }
  };
  summarise(kChunk, &chunks);
  summarise(kBigChunk, &big_chunks);
}

namespace {

// partitionRows' greedy rule, event by event in start order: the lowest row whose last event
// ended by this one's start, a new row while under max_rows, else the row that frees first.
class RowAssigner {
 public:
  explicit RowAssigner(size_t max_rows) : max_rows_(std::max<size_t>(1, max_rows)) {}
  size_t assign(int64_t start_ns, int64_t end_ns) {
    size_t row = last_end_.size();
    for (size_t r = 0; r < last_end_.size(); ++r) {
      if (last_end_[r] <= start_ns) {
        row = r;
        break;
      }
    }
    if (row == last_end_.size() && last_end_.size() >= max_rows_) {
      row = static_cast<size_t>(std::min_element(last_end_.begin(), last_end_.end()) - last_end_.begin());
    }
    if (row == last_end_.size()) last_end_.push_back(end_ns);
    last_end_[row] = std::max(last_end_[row], end_ns);
    return row;
  }
  size_t rows() const { return std::max<size_t>(1, last_end_.size()); }

 private:
  size_t max_rows_;
  std::vector<int64_t> last_end_;  // per row
};

}  // namespace

size_t partitionRowCount(std::vector<std::pair<int64_t, int64_t>> spans, size_t max_rows) {
  // By start, stably, as partitionRows sorts its events.
  auto by_start = [](const auto& a, const auto& b) { return a.first < b.first; };
  if (!std::is_sorted(spans.begin(), spans.end(), by_start)) std::stable_sort(spans.begin(), spans.end(), by_start);
  RowAssigner rows(max_rows);
  for (const auto& [start, end] : spans) rows.assign(start, end);
  return rows.rows();
}

std::vector<EventRow> partitionRows(std::vector<TimelineEvent> events, const std::string& name,
                                    size_t max_rows) {
  auto by_start = [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_ns < b.start_ns; };
  if (!std::is_sorted(events.begin(), events.end(), by_start)) std::stable_sort(events.begin(), events.end(), by_start);
  std::vector<EventRow> rows(1);
  rows[0].name = name;
  // The common case, calls one after another: one row, no copy.
  bool overlaps = false;
  int64_t reach = std::numeric_limits<int64_t>::min();
  for (const TimelineEvent& e : events) {
    if (e.start_ns < reach) {
      overlaps = true;
      break;
    }
    reach = std::max(reach, e.end_ns);
  }
  if (!overlaps) {
    rows[0].events = std::move(events);
    rows[0].finish();
    return rows;
  }
  RowAssigner assigner(max_rows);
  for (const TimelineEvent& e : events) {
    const size_t row = assigner.assign(e.start_ns, e.end_ns);
    if (row == rows.size()) rows.emplace_back().name = name + " " + std::to_string(row + 1);
    rows[row].events.push_back(e);
  }
  for (EventRow& r : rows) r.finish();
  return rows;
}

int TimelineModel::label(const std::string& name) {
  auto it = std::find(labels.begin(), labels.end(), name);
  if (it != labels.end()) return static_cast<int>(it - labels.begin());
  labels.push_back(name);
  return static_cast<int>(labels.size()) - 1;
}

std::vector<TimelineModel::EventRef> TimelineModel::eventsOfCollective(int collective) const {
  std::vector<EventRef> refs;
  if (collective < 0) return refs;
  buildLanes();  // a collective's calls are on every lane, folded or not
  for (size_t l = 0; l < lanes.size(); ++l) {
    const Lane& lane = lanes[l];
    if (lane.kind != LaneKind::kRank) continue;
    for (size_t r = 0; r < lane.rows.size() && r < static_cast<size_t>(lane.call_rows); ++r) {
      const auto& events = lane.rows[r].events;
      for (size_t e = 0; e < events.size(); ++e) {
        if (events[e].collective == collective) {
          refs.push_back({static_cast<int>(l), static_cast<int>(r), static_cast<int>(e)});
        }
      }
    }
  }
  return refs;
}

std::vector<analyzer::PhaseStats> TimelineModel::phasesOf(int collective) const {
  std::vector<analyzer::PhaseStats> out;
  if (collective < 0 || static_cast<size_t>(collective) >= phase_spans.size() ||
      static_cast<size_t>(collective) >= analysis.collectives.size())
    return out;
  const analyzer::CollectiveInstance& c = analysis.collectives[static_cast<size_t>(collective)];
  const auto [first, last] = phase_spans[static_cast<size_t>(collective)];
  for (int64_t i = first; i < last; ++i) {
    const PhaseRecord& r = phases[static_cast<size_t>(i)];
    const bool named = r.label >= 0 && static_cast<size_t>(r.label) < labels.size();
    out.push_back({c.comm, c.seq, r.rank, named ? labels[static_cast<size_t>(r.label)] : "", r.start_ns,
                   r.end_ns, r.steps, r.slowest_step, r.slowest_step_ns, r.inferred, r.wait_ns});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) {
    return std::pair(x.rank, x.start_ns) < std::pair(y.rank, y.start_ns);
  });
  return out;
}

namespace {

int32_t commIndex(const std::vector<std::string>& comms, const std::string& comm) {
  auto it = std::find(comms.begin(), comms.end(), comm);
  return it == comms.end() ? -1 : static_cast<int32_t>(it - comms.begin());
}

struct TimeBounds {
  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
};

// Every rank present, with recorded calls or with phases, in lane order: by rank; with 2+ hosts,
// the ranks of each host together (ranks of no known host last).
std::vector<int> laneRanks(const analyzer::Analysis& a,
                           const std::vector<detail::CompactCall>& calls,
                           const std::deque<PhaseRecord>& phases) {
  std::vector<int> ranks = a.ranks_present;
  int32_t last = -1;
  for (const detail::CompactCall& c : calls) {
    if (c.rank != last) ranks.push_back(last = c.rank);
  }
  last = -1;
  for (const PhaseRecord& p : phases) {
    if (p.rank != last) ranks.push_back(last = p.rank);
  }
  for (const analyzer::PhaseStats& p : a.phases) ranks.push_back(p.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (a.hosts.size() >= 2) {
    std::stable_sort(ranks.begin(), ranks.end(), [&a](int x, int y) {
      const int hx = a.hostOf(x), hy = a.hostOf(y);
      return (hx < 0 ? INT32_MAX : hx) < (hy < 0 ? INT32_MAX : hy);
    });
  }
  return ranks;
}

// A lane per rank, empty; with 2+ hosts, a header lane that folds each host's ranks before them.
// Returns each rank's lane.
std::map<int, size_t> addRankLanes(const analyzer::Analysis& a, const std::vector<int>& ranks,
                                   TimelineModel* out) {
  std::map<int, size_t> lane_of_rank;
  const bool by_host = a.hosts.size() >= 2;
  int last_host = -2;
  for (int r : ranks) {
    const int host = by_host ? a.hostOf(r) : -1;
    if (by_host && host != last_host && host >= 0) {
      const analyzer::HostStats& h = a.hosts[static_cast<size_t>(host)];
      Lane header;
      header.kind = LaneKind::kHost;
      header.host = host;
      // "host-12 (8 ranks)", not "host host-12 (8 ranks)", for hosts already named so.
      const std::string host_name = h.name.empty() ? std::string("?") : h.name;
      header.name = (host_name.rfind("host", 0) == 0 ? "" : "host ") + host_name + " (" +
                    std::to_string(h.ranks.size()) + (h.ranks.size() == 1 ? " rank)" : " ranks)");
      out->lanes.push_back(std::move(header));
    }
    last_host = host;
    Lane lane;
    lane.kind = LaneKind::kRank;
    lane.host = host;
    lane.rank = r;
    lane.name = "rank " + std::to_string(r);
    lane_of_rank[r] = out->lanes.size();
    out->lanes.push_back(std::move(lane));
  }
  return lane_of_rank;
}

// The lane of a rank: a table for ranks up to 2^24 (the lanes' rows go rank by rank, the phases
// instance by instance, every rank in turn), the map beyond.
class LaneCursor {
 public:
  explicit LaneCursor(std::map<int, size_t>& lane_of_rank) : map_(lane_of_rank) {
    if (!map_.empty() && map_.begin()->first >= 0 && map_.rbegin()->first < (1 << 24)) {
      dense_.assign(static_cast<size_t>(map_.rbegin()->first) + 1, 0);
      for (const auto& [rank, lane] : map_) dense_[static_cast<size_t>(rank)] = lane;
    }
  }
  size_t operator()(int rank) {
    if (rank >= 0 && static_cast<size_t>(rank) < dense_.size()) return dense_[static_cast<size_t>(rank)];
    return map_[rank];  // a rank laneRanks() did not see goes to lane 0, as before
  }

 private:
  std::map<int, size_t>& map_;
  std::vector<size_t> dense_;
};

// Reserves each lane's events exactly (a vector grown one push_back at a time ends up to twice
// the size: 1,220 calls a rank took 2,048 places, +270 MB over 4,096 ranks x 10 M events).

// out->phase_spans, per instance. Rows of one instance that are not together (never from the
// analysis, which writes an instance's rows at once) are first sorted together.
void indexPhases(TimelineModel* out) {
  const size_t n = out->analysis.collectives.size();
  auto spans = [n, out] {
    out->phase_spans.assign(n, {0, 0});
    const int64_t size = static_cast<int64_t>(out->phases.size());
    for (int64_t i = 0; i < size;) {
      const int32_t c = out->phases[static_cast<size_t>(i)].instance;
      int64_t j = i + 1;
      while (j < size && out->phases[static_cast<size_t>(j)].instance == c) ++j;
      if (c >= 0 && static_cast<size_t>(c) < n) {
        auto& span = out->phase_spans[static_cast<size_t>(c)];
        if (span.second > span.first) return false;
        span = {i, j};
      }
      i = j;
    }
    return true;
  };
  if (spans()) return;
  std::stable_sort(out->phases.begin(), out->phases.end(),
                   [](const PhaseRecord& x, const PhaseRecord& y) { return x.instance < y.instance; });
  spans();
}

// The phase rows: those left in analysis.phases (a model built from an Analysis, as the tests
// make them) join the loader's records; each record's label becomes the model's and its event

// Phase rows: those left in analysis.phases (a model built from an Analysis, as the tests make
// them) join the loader's records, each record's label becomes the model's, and out->phases keeps
// them (analysis.phases ends up empty), indexed by instance.
void addPhases(const std::vector<std::string>& comms, const detail::InstanceIndex& index,
               detail::PhaseRows phases, TimelineModel* out) {
  for (const analyzer::PhaseStats& p : out->analysis.phases) {
    phases.records.push_back(detail::phaseRecord(p, index.find(commIndex(comms, p.comm), p.seq),
                                                 phases.names.get(p.phase)));
  }
  std::vector<analyzer::PhaseStats>().swap(out->analysis.phases);
  std::vector<int> label_of;
  for (const std::string& name : phases.names.names()) label_of.push_back(out->label(name));
  for (PhaseRecord& r : phases.records) r.label = label_of[static_cast<size_t>(r.label)];
  out->phases = std::move(phases.records);
  indexPhases(out);
}

// Each rank lane's span of the calls (each rank's calls are together), and their time bounds
// (t0 > t1 when there are none).
TimeBounds indexCalls(LaneCursor& lane_of, size_t lanes, detail::LaneSources* src) {
  TimeBounds bounds;
  src->call_span.assign(lanes, {0, 0});
  const std::vector<detail::CompactCall>& calls = *src->calls;
  for (size_t i = 0; i < calls.size();) {
    size_t j = i;
    for (; j < calls.size() && calls[j].rank == calls[i].rank; ++j) {
      bounds.t0 = std::min(bounds.t0, calls[j].start_ns);
      bounds.t1 = std::max(bounds.t1, src->endOf(calls[j]));
    }
    const size_t lane = lane_of(calls[i].rank);
    if (lane < lanes) src->call_span[lane] = {static_cast<int64_t>(i), static_cast<int64_t>(j)};
    i = j;
  }
  return bounds;
}

// The phase records lane by lane (a counting sort of their indices, each lane's in the records'
// order): 4 bytes a record where each lane's phase events took 40.
void indexPhaseLanes(LaneCursor& lane_of, size_t lanes, const std::deque<PhaseRecord>& phases,
                     detail::LaneSources* src) {
  std::vector<int64_t> begin(lanes + 1, 0);
  for (const PhaseRecord& r : phases) {
    const size_t lane = lane_of(r.rank);
    if (lane < lanes) ++begin[lane + 1];
  }
  for (size_t l = 0; l < lanes; ++l) begin[l + 1] += begin[l];
  src->phase_order.resize(static_cast<size_t>(begin[lanes]));
  src->phase_span.assign(lanes, {0, 0});
  std::vector<int64_t> at(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < phases.size(); ++i) {
    const size_t lane = lane_of(phases[i].rank);
    if (lane < lanes) src->phase_order[static_cast<size_t>(at[lane]++)] = static_cast<uint32_t>(i);
  }
  for (size_t l = 0; l < lanes; ++l) src->phase_span[l] = {begin[l], begin[l + 1]};
}

// Each rank lane's rows, counted without building them: the layout's heights for lanes not shown.
void countRows(const std::vector<Lane>& lanes, const std::deque<PhaseRecord>& phases,
               detail::LaneSources* src) {
  src->rows.assign(lanes.size(), {1, 1});
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (size_t l = 0; l < lanes.size() && l < src->call_span.size(); ++l) {
    if (lanes[l].kind != LaneKind::kRank) continue;
    spans.clear();
    for (int64_t i = src->call_span[l].first; i < src->call_span[l].second; ++i) {
      const detail::CompactCall& c = (*src->calls)[static_cast<size_t>(i)];
      spans.emplace_back(c.start_ns, src->endOf(c));
    }
    src->rows[l].first = static_cast<int32_t>(partitionRowCount(spans));
    spans.clear();
    for (int64_t i = src->phase_span[l].first; i < src->phase_span[l].second; ++i) {
      const PhaseRecord& r = phases[src->phase_order[static_cast<size_t>(i)]];
      spans.emplace_back(r.start_ns, std::max(r.start_ns, r.end_ns));
    }
    src->rows[l].second = static_cast<int32_t>(partitionRowCount(spans));
  }
}

// A lane per analysed link, by (src, dst): its bytes/s per bin, and the scale they all share.
void addLinkLanes(TimelineModel* out) {
  const analyzer::Analysis& a = out->analysis;
  std::vector<const analyzer::LinkStats*> links;
  for (const analyzer::LinkStats& l : a.links) links.push_back(&l);
  std::sort(links.begin(), links.end(), [](const auto* x, const auto* y) {
    return std::pair(x->src, x->dst) < std::pair(y->src, y->dst);
  });
  for (const analyzer::LinkStats* l : links) {
    Lane link;
    link.kind = LaneKind::kLink;
    link.src = l->src;
    link.dst = l->dst;
    link.name = std::to_string(l->src) + " -> " + std::to_string(l->dst);
    link.counter.start_ns = a.start_ns;
    link.counter.bin_ns = std::max<int64_t>(1, a.bin_ns);
    link.counter.values.reserve(l->gbps_per_bin.size());
    for (double gbps : l->gbps_per_bin) {
      double bytes_per_s = gbps * 1e9;  // the analyzer's GB/s are bytes per ns
      link.counter.values.push_back(bytes_per_s);
      link.counter.max_value = std::max(link.counter.max_value, bytes_per_s);
    }
    out->link_scale = std::max(out->link_scale, link.counter.max_value);
    out->lanes.push_back(std::move(link));
  }
}

}  // namespace

namespace detail {

InstanceIndex::InstanceIndex(const analyzer::Analysis& a, const std::vector<std::string>& comms) {
  by_comm_.resize(comms.size());
  const int64_t dense_limit =
      std::min<int64_t>(int64_t{1} << 26, 4 * static_cast<int64_t>(a.collectives.size()) + 1024);
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const auto& c = a.collectives[i];
    auto it = std::find(comms.begin(), comms.end(), c.comm);
    if (it == comms.end()) continue;
    auto& v = by_comm_[static_cast<size_t>(it - comms.begin())];
    // Dense while seqs stay near the number of collectives: a trace's seq of 2^26 must not
    // make a 256 MB table.
    if (c.seq >= 0 && c.seq < dense_limit) {
      if (static_cast<size_t>(c.seq) >= v.size()) v.resize(static_cast<size_t>(c.seq) + 1, -1);
      v[static_cast<size_t>(c.seq)] = static_cast<int32_t>(i);
    } else {
      sparse_[{static_cast<int32_t>(it - comms.begin()), c.seq}] = static_cast<int32_t>(i);
    }
  }
}

std::vector<std::string> withAnalysisComms(std::vector<std::string> comms,
                                           const analyzer::Analysis& a) {
  for (const auto& c : a.collectives) {
    if (commIndex(comms, c.comm) < 0) comms.push_back(c.comm);
  }
  return comms;
}

PhaseRecord phaseRecord(const analyzer::PhaseStats& p, int32_t instance, int32_t label) {
  return {p.start_ns, p.end_ns, p.slowest_step_ns, p.wait_ns, instance,
          p.rank,     p.steps,  p.slowest_step,    label,     p.inferred};
}

namespace {

// buildFromCompact: the rank lanes (their sources; rows built now or when needed), the link
// lanes, the bounds and the overview.
void build(analyzer::Analysis analysis, const std::vector<std::string>& comms,
           const std::vector<std::string>& ops, std::shared_ptr<const std::vector<CompactCall>> calls,
           PhaseRows phases, bool lazy, TimelineModel* out) {
  out->analysis = std::move(analysis);
  out->lanes.clear();
  out->labels.clear();
  out->link_scale = 0;
  out->lane_sources.reset();
  if (!calls) calls = std::make_shared<const std::vector<CompactCall>>();
  auto by_rank = [](const CompactCall& x, const CompactCall& y) { return x.rank < y.rank; };
  if (!std::is_sorted(calls->begin(), calls->end(), by_rank)) {
    auto sorted = std::make_shared<std::vector<CompactCall>>(*calls);
    std::stable_sort(sorted->begin(), sorted->end(), by_rank);
    calls = std::move(sorted);
  }
  const analyzer::Analysis& a = out->analysis;
  auto src = std::make_shared<LaneSources>();
  for (const std::string& op : ops) src->op_label.push_back(out->label(op));
  src->instances = InstanceIndex(a, comms);
  src->end_ns = a.end_ns;
  src->calls = std::move(calls);
  std::map<int, size_t> lane_of_rank = addRankLanes(a, laneRanks(a, *src->calls, phases.records), out);
  LaneCursor lane_of(lane_of_rank);
  TimeBounds t = indexCalls(lane_of, out->lanes.size(), src.get());
  addPhases(comms, src->instances, std::move(phases), out);
  indexPhaseLanes(lane_of, out->lanes.size(), out->phases, src.get());
  if (lazy) countRows(out->lanes, out->phases, src.get());
  for (Lane& l : out->lanes) l.built = l.kind != LaneKind::kRank;
  out->lane_sources = std::move(src);
  addLinkLanes(out);
  if (a.end_ns > a.start_ns) {
    t.t0 = std::min(t.t0, a.start_ns);
    t.t1 = std::max(t.t1, a.end_ns);
  }
  if (t.t0 > t.t1) t.t0 = t.t1 = 0;
  out->start_ns = t.t0;
  out->end_ns = std::max(t.t1, t.t0 + 1);
  out->overview = buildOverview(*out);
  if (!lazy) {
    out->buildLanes();
    out->lane_sources.reset();  // the calls, freed here when the caller handed its copy over
  }
}

}  // namespace

void buildFromCompact(analyzer::Analysis analysis, const std::vector<std::string>& comms,
                      const std::vector<std::string>& ops,
                      std::shared_ptr<const std::vector<CompactCall>> calls, PhaseRows phases,
                      bool lazy, TimelineModel* out) {
  build(std::move(analysis), comms, ops, std::move(calls), std::move(phases), lazy, out);
}

}  // namespace detail

std::vector<TimelineEvent> TimelineModel::callsOf(size_t lane) const {
  std::vector<TimelineEvent> events;
  if (lane >= lanes.size() || lanes[lane].kind != LaneKind::kRank) return events;
  const detail::LaneSources* src = lane_sources.get();
  if (src == nullptr || lane >= src->call_span.size()) {  // every lane built: its call rows
    const Lane& l = lanes[lane];
    for (size_t r = 0; r < l.rows.size() && r < static_cast<size_t>(l.call_rows); ++r)
      events.insert(events.end(), l.rows[r].events.begin(), l.rows[r].events.end());
    return events;
  }
  const auto [first, last] = src->call_span[lane];
  events.reserve(static_cast<size_t>(last - first));
  for (int64_t i = first; i < last; ++i) events.push_back(src->event((*src->calls)[static_cast<size_t>(i)]));
  return events;
}

std::vector<TimelineModel::CallRef> TimelineModel::callsOfCollective(int collective) const {
  std::vector<CallRef> out;
  if (collective < 0) return out;
  const detail::LaneSources* src = lane_sources.get();
  for (size_t l = 0; l < lanes.size(); ++l) {
    const Lane& lane = lanes[l];
    if (lane.kind != LaneKind::kRank) continue;
    if (lane.built || src == nullptr || l >= src->call_span.size()) {
      for (size_t r = 0; r < lane.rows.size() && r < static_cast<size_t>(lane.call_rows); ++r) {
        for (const TimelineEvent& e : lane.rows[r].events) {
          if (e.collective == collective) out.push_back({static_cast<int>(l), e});
        }
      }
      continue;
    }
    for (int64_t i = src->call_span[l].first; i < src->call_span[l].second; ++i) {
      const detail::CompactCall& c = (*src->calls)[static_cast<size_t>(i)];
      if (src->instances.find(c.comm, c.seq) == collective) out.push_back({static_cast<int>(l), src->event(c)});
    }
  }
  return out;
}

void TimelineModel::buildLane(size_t lane) const {
  if (lane >= lanes.size() || lanes[lane].built) return;
  const Lane& l = lanes[lane];
  l.rows = partitionRows(callsOf(lane), "collectives");
  l.call_rows = static_cast<int>(l.rows.size());
  std::vector<TimelineEvent> phase_events;
  const detail::LaneSources* src = lane_sources.get();
  if (src != nullptr && lane < src->phase_span.size()) {
    const auto [first, last] = src->phase_span[lane];
    phase_events.reserve(static_cast<size_t>(last - first));
    for (int64_t i = first; i < last; ++i) {
      const PhaseRecord& r = phases[src->phase_order[static_cast<size_t>(i)]];
      phase_events.push_back({r.start_ns, std::max(r.start_ns, r.end_ns), r.label, r.instance, false});
    }
  }
  for (EventRow& row : partitionRows(std::move(phase_events), "phases")) l.rows.push_back(std::move(row));
  l.built = true;
}

void TimelineModel::buildLanes() const {
  for (size_t i = 0; i < lanes.size(); ++i) buildLane(i);
}

void TimelineModel::releaseLane(size_t lane) const {
  const detail::LaneSources* src = lane_sources.get();
  if (lane >= lanes.size() || !lanes[lane].built || lanes[lane].kind != LaneKind::kRank || src == nullptr ||
      lane >= src->rows.size())
    return;
  std::vector<EventRow>().swap(lanes[lane].rows);
  lanes[lane].call_rows = 1;
  lanes[lane].built = false;
}

size_t TimelineModel::rowCount(size_t lane) const {
  if (lane >= lanes.size()) return 0;
  const detail::LaneSources* src = lane_sources.get();
  if (lanes[lane].built || src == nullptr || lane >= src->rows.size()) return lanes[lane].rows.size();
  return static_cast<size_t>(src->rows[lane].first) + static_cast<size_t>(src->rows[lane].second);
}

size_t TimelineModel::unbuiltLanes() const {
  size_t n = 0;
  for (const Lane& l : lanes) n += l.built ? 0 : 1;
  return n;
}

void buildTimeline(analyzer::Analysis analysis, const std::vector<RankCall>& calls,
                   TimelineModel* out, bool lazy_lanes) {
  detail::Interner comms, ops;
  auto compact = std::make_shared<std::vector<detail::CompactCall>>();
  compact->reserve(calls.size());
  for (const RankCall& c : calls) {
    compact->push_back({c.rank, comms.get(c.comm), ops.get(c.op), c.failed, c.seq, c.start_ns, c.end_ns});
  }
  // Lanes are filled rank by rank, as the reader delivers them.
  std::stable_sort(
      compact->begin(), compact->end(),
      [](const detail::CompactCall& x, const detail::CompactCall& y) { return x.rank < y.rank; });
  const std::vector<std::string> comm_names = detail::withAnalysisComms(comms.names(), analysis);
  detail::buildFromCompact(std::move(analysis), comm_names, ops.names(), std::move(compact), {},
                           lazy_lanes, out);
}

}  // namespace ringside::gui
