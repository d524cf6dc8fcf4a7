#include "ringside/gui/timeline_model.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <limits>
#include <map>
#include <utility>

#include "ringside/storage/trace_reader.h"

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
  std::vector<int64_t> last_end;  // per row
  for (const TimelineEvent& e : events) {
    size_t row = last_end.size();
    for (size_t r = 0; r < last_end.size(); ++r) {
      if (last_end[r] <= e.start_ns) {
        row = r;
        break;
      }
    }
    if (row == last_end.size() && last_end.size() >= std::max<size_t>(1, max_rows)) {
      row = static_cast<size_t>(std::min_element(last_end.begin(), last_end.end()) - last_end.begin());
    }
    if (row == last_end.size()) {
      last_end.push_back(e.end_ns);
      rows.resize(last_end.size());
      if (row > 0) rows[row].name = name + " " + std::to_string(row + 1);
    }
    last_end[row] = std::max(last_end[row], e.end_ns);
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

namespace {

// Calls as the loader keeps them: interned comm and op, no strings per row.
struct CompactCall {
  int32_t rank = -1;
  int32_t comm = 0;  // index into comms
  int32_t op = 0;    // index into ops
  bool failed = false;
  int64_t seq = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// Interns short strings; the last hit is checked first (consecutive rows share comm and op).
class Interner {
 public:
  int32_t get(std::string_view s) {
    if (last_ >= 0 && names_[static_cast<size_t>(last_)] == s) return last_;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == s) return last_ = static_cast<int32_t>(i);
    }
    names_.emplace_back(s);
    return last_ = static_cast<int32_t>(names_.size() - 1);
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  int32_t last_ = -1;
};

// (comm, seq) -> collective instance; seqs count from 0, so a vector per comm, a map beyond.
class InstanceIndex {
 public:
  InstanceIndex(const analyzer::Analysis& a, const std::vector<std::string>& comms) {
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
  int32_t find(int32_t comm, int64_t seq) const {
    if (comm < 0 || static_cast<size_t>(comm) >= by_comm_.size()) return -1;
    const auto& v = by_comm_[static_cast<size_t>(comm)];
    if (seq >= 0 && static_cast<size_t>(seq) < v.size()) return v[static_cast<size_t>(seq)];
    auto it = sparse_.find({comm, seq});
    return it == sparse_.end() ? -1 : it->second;
  }

 private:
  std::vector<std::vector<int32_t>> by_comm_;
  std::map<std::pair<int32_t, int64_t>, int32_t> sparse_;
};

int32_t commIndex(const std::vector<std::string>& comms, const std::string& comm) {
  auto it = std::find(comms.begin(), comms.end(), comm);
  return it == comms.end() ? -1 : static_cast<int32_t>(it - comms.begin());
}

void buildFromCompact(analyzer::Analysis analysis, const std::vector<std::string>& comms,
                      const std::vector<std::string>& ops, const std::vector<CompactCall>& calls,
                      std::vector<int32_t>* instance_of_call, TimelineModel* out) {
  out->analysis = std::move(analysis);
  out->lanes.clear();
  out->labels.clear();
  out->link_scale = 0;
  const analyzer::Analysis& a = out->analysis;
  InstanceIndex index(a, comms);
  std::vector<int> op_label;
  for (const std::string& op : ops) op_label.push_back(out->label(op));

  // Rank lanes: every rank present, recorded calls, or phases.
  std::vector<int> ranks = a.ranks_present;
  {
    int32_t last = -1;
    for (const CompactCall& c : calls) {
      if (c.rank != last) ranks.push_back(last = c.rank);
    }
  }
  for (const analyzer::PhaseStats& p : a.phases) ranks.push_back(p.rank);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::map<int, size_t> lane_of_rank;
  // 2+ hosts: the ranks of each host together, after a header lane that folds them.
  const bool by_host = a.hosts.size() >= 2;
  if (by_host) {
    std::stable_sort(ranks.begin(), ranks.end(), [&a](int x, int y) {
      const int hx = a.hostOf(x), hy = a.hostOf(y);
      return (hx < 0 ? INT32_MAX : hx) < (hy < 0 ? INT32_MAX : hy);
    });
  }
  int last_host = -2;
  for (int r : ranks) {
    const int host = by_host ? a.hostOf(r) : -1;
    if (by_host && host != last_host && host >= 0) {
      const analyzer::HostStats& h = a.hosts[static_cast<size_t>(host)];
      Lane header;
      header.kind = LaneKind::kHost;
      header.host = host;
      header.name = "host " + (h.name.empty() ? std::string("?") : h.name) + " (" +
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

  int64_t t0 = std::numeric_limits<int64_t>::max(), t1 = std::numeric_limits<int64_t>::min();
  if (instance_of_call != nullptr) instance_of_call->assign(calls.size(), -1);
  // Calls and phases per lane, split into sub-rows once all are in.
  std::vector<std::vector<TimelineEvent>> lane_calls(out->lanes.size()), lane_phases(out->lanes.size());
  int32_t last_rank = std::numeric_limits<int32_t>::min();
  std::vector<TimelineEvent>* lane = nullptr;
  for (size_t i = 0; i < calls.size(); ++i) {
    const CompactCall& c = calls[i];
    if (c.rank != last_rank) {
      lane = &lane_calls[lane_of_rank[c.rank]];
      last_rank = c.rank;
    }
    TimelineEvent e;
    e.start_ns = c.start_ns;
    // A call that never returned (a hang: end_ns NULL) is drawn to the end of the trace, where
    // the rank was still inside it.
    e.end_ns = c.end_ns < c.start_ns ? std::max(c.start_ns, a.end_ns) : c.end_ns;
    e.label = op_label[static_cast<size_t>(c.op)];
    e.collective = index.find(c.comm, c.seq);
    e.failed = c.failed;
    if (instance_of_call != nullptr) (*instance_of_call)[i] = e.collective;
    lane->push_back(e);
    t0 = std::min(t0, e.start_ns);
    t1 = std::max(t1, e.end_ns);
  }
  for (const analyzer::PhaseStats& p : a.phases) {
    TimelineEvent e;
    e.start_ns = p.start_ns;
    e.end_ns = std::max(p.start_ns, p.end_ns);
    e.label = out->label(p.phase);
    e.collective = index.find(commIndex(comms, p.comm), p.seq);
    lane_phases[lane_of_rank[p.rank]].push_back(e);
  }
  for (size_t i = 0; i < out->lanes.size(); ++i) {
    Lane& l = out->lanes[i];
    if (l.kind != LaneKind::kRank) continue;
    l.rows = partitionRows(std::move(lane_calls[i]), "collectives");
    l.call_rows = static_cast<int>(l.rows.size());
    for (EventRow& row : partitionRows(std::move(lane_phases[i]), "phases")) l.rows.push_back(std::move(row));
  }

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

  if (a.end_ns > a.start_ns) {
    t0 = std::min(t0, a.start_ns);
    t1 = std::max(t1, a.end_ns);
  }
  if (t0 > t1) t0 = t1 = 0;
  out->start_ns = t0;
  out->end_ns = std::max(t1, t0 + 1);
  out->overview = buildOverview(*out);
}

// The transfer rows the loader keeps for the link lanes' messages (Lane::messages): per directed
// link, its send rows and its recv rows, 24 bytes a row.
struct LinkRows {
  std::vector<LinkMessage> send, recv;
};
class MessageCollector {
 public:
  void add(int src, int dst, bool send, const LinkMessage& m) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
    if (last_ == nullptr || key != last_key_) {  // rows come in runs of one link
      last_ = &links_[key];
      last_key_ = key;
    }
    (send ? last_->send : last_->recv).push_back(m);
  }
  // Hands each link lane its messages: the send rows, or the recv rows where the link has no
  // send row (the side its counter counts, analysis_links.cpp), then the finer bins.
  void attach(const LoadOptions& options, TimelineModel* out) {
    int links = 0;
    for (const Lane& l : out->lanes) links += l.kind == LaneKind::kLink ? 1 : 0;
    if (links == 0) return;
    const int64_t per_link = options.fine_bins_budget / links;
    const int fine_bins = static_cast<int>(std::clamp<int64_t>(per_link, 0, 65536));
    for (Lane& l : out->lanes) {
      if (l.kind != LaneKind::kLink || l.src < 0 || l.dst < 0) continue;
      auto it = links_.find((static_cast<uint64_t>(static_cast<uint32_t>(l.src)) << 32) | static_cast<uint32_t>(l.dst));
      if (it == links_.end()) continue;
      l.messages = std::move(it->second.send.empty() ? it->second.recv : it->second.send);
      links_.erase(it);
      l.finishMessages(fine_bins);
    }
    links_.clear();
  }

 private:
  std::unordered_map<uint64_t, LinkRows> links_;
  uint64_t last_key_ = 0;
  LinkRows* last_ = nullptr;
};

}  // namespace

void buildTimeline(analyzer::Analysis analysis, const std::vector<RankCall>& calls,
                   TimelineModel* out) {
  Interner comms, ops;
  std::vector<CompactCall> compact;
  compact.reserve(calls.size());
  for (const RankCall& c : calls) {
    compact.push_back({c.rank, comms.get(c.comm), ops.get(c.op), c.failed, c.seq, c.start_ns, c.end_ns});
  }
  // Lanes are filled rank by rank, as the reader delivers them.
  std::stable_sort(compact.begin(), compact.end(),
                   [](const CompactCall& x, const CompactCall& y) { return x.rank < y.rank; });
  std::vector<std::string> comm_names = comms.names();
  for (const auto& c : analysis.collectives) {
    if (commIndex(comm_names, c.comm) < 0) comm_names.push_back(c.comm);
  }
  buildFromCompact(std::move(analysis), comm_names, ops.names(), compact, nullptr, out);
}

bool loadTimeline(const std::string& path, const LoadOptions& options, TimelineModel* out,
                  std::string* error) {
  // quick_check reads the whole file: it runs once, on the analysis thread's reader, while this
  // thread already reads the calls; nothing is handed out before it passed.
  storage::TraceOpenOptions unchecked;
  unchecked.quick_check = false;
  auto reader = storage::TraceReader::open(path, unchecked, error);
  if (!reader) {
    std::string checked_error;  // the same verdict a checked open gives (quick_check's first)
    if (!storage::TraceReader::open(path, &checked_error) && error != nullptr) *error = checked_error;
    return false;
  }
  // The analysis and the viewer's own pass over the rows run side by side, each on its own
  // reader (one TraceReader per thread).
  std::atomic<double> analysis_done{0}, rows_done{0};
  auto progress = [&] {
    if (options.progress) options.progress(0.6 * analysis_done.load() + 0.4 * rows_done.load());
  };
  progress();
  // Bytes per (instance, src, dst) for the links each collective used: the analysis hands every
  // transfer row it reads over with its instance (AnalysisOptions::on_transfer), so the
  // transfers are read once.
  const int64_t transfer_rows = reader->transferCount();
  const bool read_links = options.collective_links && transfer_rows <= options.max_link_transfers;
  struct RawLink {
    int32_t instance;
    int16_t src, dst;
    bool send;
    int64_t bytes;
  };
  std::vector<RawLink> raw_links;
  MessageCollector messages;
  analyzer::Analysis analysis;
  std::string analysis_error;
  bool analysis_ok = false;
  std::promise<bool> check_promise;
  std::future<bool> check = check_promise.get_future();
  std::thread analysis_thread([&] {
    auto second = storage::TraceReader::open(path, &analysis_error);  // with quick_check
    check_promise.set_value(second != nullptr);
    if (!second) return;
    analyzer::AnalysisOptions aopt;
    aopt.bins = std::max(1, options.counter_bins);
    aopt.topology = options.topology;
    aopt.progress = [&](double f) { analysis_done = f; };
    if (read_links) {
      try {
        raw_links.reserve(static_cast<size_t>(std::max<int64_t>(0, transfer_rows)));
      } catch (const std::bad_alloc&) {
      }
      aopt.on_transfer = [&](const storage::TransferRow& row, int32_t instance) {
        if (row.src_rank < 0 || row.dst_rank < 0) return;
        const bool send = row.side == "send";
        // The analysis' own rule: a row without an end is an instant at its start.
        const int64_t end = row.end_ns != storage::kNone && row.end_ns >= row.start_ns ? row.end_ns : row.start_ns;
        messages.add(row.src_rank, row.dst_rank, send, {row.start_ns, end, row.bytes});
        if (instance < 0 || row.src_rank >= 4096 || row.dst_rank >= 4096) return;
        raw_links.push_back({instance, static_cast<int16_t>(row.src_rank), static_cast<int16_t>(row.dst_rank),
                             send, row.bytes});
      };
    }
    try {
      analysis_ok = analyzer::analyze(*second, aopt, &analysis, &analysis_error);
    } catch (const std::bad_alloc&) {
      analysis_ok = false;
      analysis_error = path + ": out of memory while analysing";
    }
    analysis_done = 1.0;
  });
  struct JoinAtExit {
    std::thread* t;
    ~JoinAtExit() {
      if (t->joinable()) t->join();
    }
  } join_at_exit{&analysis_thread};

  Interner comms, ops;
  std::vector<CompactCall> calls;
  const int64_t total_calls = std::max<int64_t>(1, reader->collectiveCount());
  calls.reserve(static_cast<size_t>(total_calls));
  bool ok = reader->forEachCollectiveTiming(
      [&](const storage::CollectiveRow& row) {
        calls.push_back({row.rank, comms.get(row.comm), ops.get(row.op), row.status != 0, row.seq,
                         row.start_ns, row.end_ns});
        if ((calls.size() & 0xFFFF) == 0) {
          rows_done = static_cast<double>(calls.size()) / static_cast<double>(total_calls);
          progress();
        }
        return true;
      },
      error);
  // The timeline can be drawn from the calls alone, before the whole-file check and the
  // analysis finish: reading an unchecked file is safe (SQLite's defensive mode returns
  // errors, never undefined behaviour, on a damaged file), and a file the check then refuses
  // replaces this early timeline with the error (the caller drops it on failure).
  if (ok && options.on_timeline) {
    analyzer::Analysis calls_only;
    for (const storage::RankInfo& info : reader->ranks()) calls_only.ranks_present.push_back(info.rank);
    std::sort(calls_only.ranks_present.begin(), calls_only.ranks_present.end());
    calls_only.ranks_present.erase(std::unique(calls_only.ranks_present.begin(), calls_only.ranks_present.end()),
                                   calls_only.ranks_present.end());
    TimelineModel early;
    early.path = path;
    buildFromCompact(std::move(calls_only), comms.names(), ops.names(), calls, nullptr, &early);
    early.analysed = false;
    options.on_timeline(std::move(early));
  }
  // quick_check's verdict comes first (a damaged file fails as a checked open would).
  if (!check.get()) {
    if (error != nullptr) *error = analysis_error;
    return false;
  }
  if (!ok) return false;
  rows_done = 1.0;
  progress();
  analysis_thread.join();
  if (!analysis_ok) {
    *error = analysis_error;
    return false;
  }
  out->path = path;
  std::vector<std::string> comm_names = comms.names();
  for (const auto& c : analysis.collectives) {
    if (commIndex(comm_names, c.comm) < 0) comm_names.push_back(c.comm);
  }
  buildFromCompact(std::move(analysis), comm_names, ops.names(), calls, nullptr, out);
  calls = {};

  // Per instance and link: the send side's bytes, or the recv side's where no send was recorded.
  out->collective_links.clear();
  out->links_begin.clear();
  if (read_links) {
    // Bucket the rows by instance (counting sort), then merge each instance's few links.
    const size_t n = out->analysis.collectives.size();
    std::vector<int64_t> begin(n + 1, 0);
    for (const RawLink& r : raw_links) {
      if (static_cast<size_t>(r.instance) < n) ++begin[static_cast<size_t>(r.instance) + 1];
    }
    for (size_t c = 0; c < n; ++c) begin[c + 1] += begin[c];
    std::vector<RawLink> by_instance(static_cast<size_t>(begin[n]));
    {
      std::vector<int64_t> at(begin.begin(), begin.end() - 1);
      for (const RawLink& r : raw_links) {
        if (static_cast<size_t>(r.instance) < n) by_instance[static_cast<size_t>(at[static_cast<size_t>(r.instance)]++)] = r;
      }
    }
    raw_links = {};
    out->links_begin.assign(n + 1, 0);
    for (size_t c = 0; c < n; ++c) {
      auto first = by_instance.begin() + begin[c], last = by_instance.begin() + begin[c + 1];
      std::stable_sort(first, last, [](const RawLink& x, const RawLink& y) {
        return std::pair(x.src, x.dst) < std::pair(y.src, y.dst);
      });
      for (auto i = first; i != last;) {
        int64_t send_bytes = 0, send_messages = 0, recv_bytes = 0, recv_messages = 0;
        auto j = i;
        for (; j != last && j->src == i->src && j->dst == i->dst; ++j) {
          if (j->send) {
            send_bytes += j->bytes;
            ++send_messages;
          } else {
            recv_bytes += j->bytes;
            ++recv_messages;
          }
        }
        CollectiveLink l;
        l.src = i->src;
        l.dst = i->dst;
        l.bytes = send_messages > 0 ? send_bytes : recv_bytes;
        l.messages = send_messages > 0 ? send_messages : recv_messages;
        out->collective_links.push_back(l);
        i = j;
      }
      out->links_begin[c + 1] = static_cast<int64_t>(out->collective_links.size());
    }
  }
  messages.attach(options, out);
  if (options.progress) options.progress(1.0);
  return true;
}

}  // namespace ringside::gui
