#include "ringside/gui/timeline_model.h"

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

#include "ringside/storage/trace_reader.h"

namespace ringside::gui {

void EventRow::finish() {
  std::stable_sort(events.begin(), events.end(),
                   [](const TimelineEvent& a, const TimelineEvent& b) { return a.start_ns < b.start_ns; });
  max_end_prefix.resize(events.size());
  int64_t running = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < events.size(); ++i) {
    running = std::max(running, events[i].end_ns);
    max_end_prefix[i] = running;
  }
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
  for (size_t l = 0; l < lanes.size(); ++l) {
    const Lane& lane = lanes[l];
    if (lane.kind != LaneKind::kRank || lane.rows.empty()) continue;
    const auto& events = lane.rows[0].events;
    for (size_t e = 0; e < events.size(); ++e) {
      if (events[e].collective == collective) {
        refs.push_back({static_cast<int>(l), 0, static_cast<int>(e)});
      }
    }
  }
  return refs;
}

void buildTimeline(analyzer::Analysis analysis, const std::vector<RankCall>& calls,
                   TimelineModel* out) {
  out->analysis = std::move(analysis);
  out->lanes.clear();
  out->labels.clear();
  const analyzer::Analysis& a = out->analysis;

  std::map<std::pair<std::string, int64_t>, int> instance;  // (comm, seq) -> collective index
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    instance[{a.collectives[i].comm, a.collectives[i].seq}] = static_cast<int>(i);
  }

  // Rank lanes: every rank present, recorded calls, or phases.
  std::map<int, size_t> lane_of_rank;
  auto rankLane = [&](int rank) -> Lane& {
    auto [it, added] = lane_of_rank.try_emplace(rank, 0);
    if (added) {
      Lane lane;
      lane.kind = LaneKind::kRank;
      lane.rank = rank;
      lane.name = "rank " + std::to_string(rank);
      lane.rows.resize(2);
      lane.rows[0].name = "collectives";
      lane.rows[1].name = "phases";
      it->second = out->lanes.size();
      out->lanes.push_back(std::move(lane));
    }
    return out->lanes[it->second];
  };
  std::vector<int> ranks = a.ranks_present;
  for (const RankCall& c : calls) ranks.push_back(c.rank);
  for (const analyzer::PhaseStats& p : a.phases) ranks.push_back(p.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  for (int r : ranks) rankLane(r);

  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  for (const RankCall& c : calls) {
    TimelineEvent e;
    e.start_ns = c.start_ns;
    e.end_ns = std::max(c.start_ns, c.end_ns);
    e.label = out->label(c.op);
    auto it = instance.find({c.comm, c.seq});
    e.collective = it == instance.end() ? -1 : it->second;
    e.failed = c.failed;
    rankLane(c.rank).rows[0].events.push_back(e);
    t0 = std::min(t0, e.start_ns);
    t1 = std::max(t1, e.end_ns);
  }
  for (const analyzer::PhaseStats& p : a.phases) {
    TimelineEvent e;
    e.start_ns = p.start_ns;
    e.end_ns = std::max(p.start_ns, p.end_ns);
    e.label = out->label(p.phase);
    auto it = instance.find({p.comm, p.seq});
    e.collective = it == instance.end() ? -1 : it->second;
    rankLane(p.rank).rows[1].events.push_back(e);
  }
  for (Lane& lane : out->lanes) {
    for (EventRow& row : lane.rows) row.finish();
  }

  std::vector<const analyzer::LinkStats*> links;
  for (const analyzer::LinkStats& l : a.links) links.push_back(&l);
  std::sort(links.begin(), links.end(), [](const auto* x, const auto* y) {
    return std::pair(x->src, x->dst) < std::pair(y->src, y->dst);
  });
  for (const analyzer::LinkStats* l : links) {
    Lane lane;
    lane.kind = LaneKind::kLink;
    lane.src = l->src;
    lane.dst = l->dst;
    lane.name = std::to_string(l->src) + " -> " + std::to_string(l->dst);
    lane.counter.start_ns = a.start_ns;
    lane.counter.bin_ns = std::max<int64_t>(1, a.bin_ns);
    lane.counter.values.reserve(l->gbps_per_bin.size());
    for (double gbps : l->gbps_per_bin) {
      double bytes_per_s = gbps * 1e9;  // the analyzer's GB/s are bytes per ns
      lane.counter.values.push_back(bytes_per_s);
      lane.counter.max_value = std::max(lane.counter.max_value, bytes_per_s);
    }
    out->lanes.push_back(std::move(lane));
  }

  if (a.end_ns > a.start_ns) {
    t0 = std::min(t0, a.start_ns);
    t1 = std::max(t1, a.end_ns);
  }
  if (t0 > t1) t0 = t1 = 0;
  out->start_ns = t0;
  out->end_ns = std::max(t1, t0 + 1);
}

bool loadTimeline(const std::string& path, const LoadOptions& options, TimelineModel* out,
                  std::string* error) {
  auto reader = storage::TraceReader::open(path, error);
  if (!reader) return false;
  auto progress = [&](double f) {
    if (options.progress) options.progress(f);
  };
  progress(0.0);
  // The analysis is most of the work: 0..0.8; the per-rank calls the rest.
  analyzer::AnalysisOptions aopt;
  aopt.bins = std::max(1, options.counter_bins);
  aopt.topology = options.topology;
  aopt.progress = [&](double f) { progress(0.8 * f); };
  analyzer::Analysis analysis;
  if (!analyzer::analyze(*reader, aopt, &analysis, error)) return false;

  std::vector<RankCall> calls;
  const int64_t total = std::max<int64_t>(1, reader->collectiveCount());
  bool ok = reader->forEachCollective(
      [&](const storage::CollectiveRow& row) {
        RankCall c;
        c.rank = row.rank;
        c.comm = std::string(row.comm);
        c.seq = row.seq;
        c.op = std::string(row.op);
        c.start_ns = row.start_ns;
        c.end_ns = row.end_ns;
        c.failed = row.status != 0;
        calls.push_back(std::move(c));
        if (calls.size() % 4096 == 0) {
          progress(0.8 + 0.15 * static_cast<double>(calls.size()) / static_cast<double>(total));
        }
        return true;
      },
      error);
  if (!ok) return false;
  out->path = path;
  buildTimeline(std::move(analysis), calls, out);
  progress(1.0);
  return true;
}

}  // namespace ringside::gui
