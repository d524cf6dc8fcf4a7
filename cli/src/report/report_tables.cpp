#include "report/report_tables.h"

#include <algorithm>
#include <map>

#include "ringside/analyzer/summary.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

using analyzer::Analysis;

std::string num(int64_t v) { return std::to_string(v); }

std::string percent(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  return format::fixed(100.0 * static_cast<double>(part) / static_cast<double>(whole), 1) + "%";
}

std::string rawDouble(double v) { return v < 0 ? "" : format::fixed(v, 6); }

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

void opBuckets(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Collectives by op and size";
  bool h = u == Units::kHuman;
  t->columns = {{"op", "op", false},           {"library", "library", false},
                {"size_lo", "size", false},    {"size_hi", "", false},
                {"count", "count"},            {"total_ns", "total"},
                {"p50_ns", "p50"},             {"p90_ns", "p90"},
                {"p99_ns", "p99"},             {"max_ns", "max"},
                {"mean_busbw_gbps", "busbw GB/s"}};
  if (h) t->columns.erase(t->columns.begin() + 3);  // size_hi folds into the size range
  for (const analyzer::OpBucket& b : a.op_buckets) {
    std::vector<std::string> r = {b.op, b.library};
    if (h) {
      r.push_back(sizeRange(b.size_lo, b.size_hi));
      r.insert(r.end(),
               {format::count(b.count), format::duration(b.total_ns), format::duration(b.p50_ns),
                format::duration(b.p90_ns), format::duration(b.p99_ns), format::duration(b.max_ns),
                formatGbps(b.mean_busbw_gbps)});
    } else {
      r.insert(r.end(), {num(b.size_lo), num(b.size_hi), num(b.count), num(b.total_ns),
                         num(b.p50_ns), num(b.p90_ns), num(b.p99_ns), num(b.max_ns),
                         rawDouble(b.mean_busbw_gbps)});
    }
    t->rows.push_back(std::move(r));
  }
}

void collectives(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Collectives";
  t->columns = {{"comm", "comm", false},     {"seq", "seq"},
                {"op", "op", false},         {"library", "library", false},
                {"algorithm", "algo", false}, {"bytes", "bytes"},
                {"ranks", "ranks"},          {"first_start_ns", "start"},
                {"duration_ns", "duration"}, {"arrival_skew_ns", "skew"},
                {"straggler_rank", "last"},  {"busbw_gbps", "busbw GB/s"},
                {"expected_ns", "model"},    {"failed", "failed", false}};
  bool h = u == Units::kHuman;
  for (const analyzer::CollectiveInstance& c : a.collectives) {
    if (limit != 0 && t->rows.size() >= limit) break;
    int64_t rel = c.first_start_ns - a.start_ns;
    t->rows.push_back(
        {c.comm, num(c.seq), c.op, c.library, c.algorithm,
         h ? format::bytes(c.bytes) : num(c.bytes), num(c.ranks),
         h ? format::duration(rel) : num(c.first_start_ns),
         h ? format::duration(c.duration_ns) : num(c.duration_ns),
         h ? format::duration(c.arrival_skew_ns) : num(c.arrival_skew_ns), num(c.straggler_rank),
         h ? formatGbps(c.busbw_gbps) : rawDouble(c.busbw_gbps),
         c.expected_ns < 0 ? (h ? "-" : "")
                           : (h ? format::duration(static_cast<int64_t>(c.expected_ns))
                                : format::fixed(c.expected_ns, 0)),
         c.failed ? (h ? "FAILED" : "1") : (h ? "" : "0")});
  }
  if (t->rows.size() < a.collectives.size())
    t->note = num(static_cast<int64_t>(a.collectives.size() - t->rows.size())) + " more collectives";
}

void links(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Links (busiest first)";
  bool h = u == Units::kHuman;
  t->columns = {{"src", "link", false},      {"dst", "", false},
                {"bytes", "bytes"},          {"messages", "msgs"},
                {"busy_ns", "busy"},         {"mean_gbps", "mean GB/s"},
                {"peak_gbps", "peak GB/s"},  {"busy_gbps", "busy GB/s"},
                {"capacity_gbps", "cap GB/s"}, {"busy_share_of_collectives", "busy in coll"}};
  if (h) t->columns.erase(t->columns.begin() + 1);
  std::vector<const analyzer::LinkStats*> sorted;
  for (const analyzer::LinkStats& l : a.links) sorted.push_back(&l);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](auto* x, auto* y) { return x->bytes > y->bytes; });
  for (const analyzer::LinkStats* l : sorted) {
    if (limit != 0 && t->rows.size() >= limit) break;
    std::vector<std::string> r;
    if (h) {
      r = {num(l->src) + "->" + num(l->dst) + (l->from_recv ? " (recv)" : ""),
           format::bytes(l->bytes), format::count(l->messages), format::duration(l->busy_ns),
           formatGbps(l->mean_gbps), formatGbps(l->peak_gbps), formatGbps(l->busy_gbps),
           formatGbps(l->capacity_gbps),
           format::fixed(100 * l->busy_share_of_collectives, 1) + "%"};
    } else {
      r = {num(l->src), num(l->dst), num(l->bytes), num(l->messages), num(l->busy_ns),
           rawDouble(l->mean_gbps), rawDouble(l->peak_gbps), rawDouble(l->busy_gbps),
           rawDouble(l->capacity_gbps), rawDouble(l->busy_share_of_collectives)};
    }
    t->rows.push_back(std::move(r));
  }
  if (t->rows.size() < sorted.size())
    t->note = num(static_cast<int64_t>(sorted.size() - t->rows.size())) + " quieter links not shown";
}

void idleLinks(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Idle links";
  bool h = u == Units::kHuman;
  t->columns = {{"src", "link", false}, {"dst", "", false}, {"where", "idle during", false},
                {"capacity_gbps", "cap GB/s"}};
  if (h) t->columns.erase(t->columns.begin() + 1);
  for (const analyzer::IdleLink& l : a.idle_links) {
    if (limit != 0 && t->rows.size() >= limit) break;
    if (h) {
      t->rows.push_back({num(l.src) + "->" + num(l.dst), l.where, formatGbps(l.capacity_gbps)});
    } else {
      t->rows.push_back({num(l.src), num(l.dst), l.where, rawDouble(l.capacity_gbps)});
    }
  }
  if (t->rows.size() < a.idle_links.size())
    t->note = num(static_cast<int64_t>(a.idle_links.size() - t->rows.size())) + " more idle links";
}

void phases(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Phases (all collectives, all ranks)";
  bool h = u == Units::kHuman;
  t->columns = {{"phase", "phase", false}, {"instances", "instances"}, {"total_ns", "total"},
                {"mean_ns", "mean"},       {"max_ns", "max"},          {"inferred", "inferred"}};
  for (const PhaseTotal& p : phaseTotals(a)) {
    int64_t mean = p.instances > 0 ? p.total_ns / p.instances : 0;
    t->rows.push_back(
        {p.phase.empty() ? "(unknown)" : p.phase, h ? format::count(p.instances) : num(p.instances),
         h ? format::duration(p.total_ns) : num(p.total_ns), h ? format::duration(mean) : num(mean),
         h ? format::duration(p.max_ns) : num(p.max_ns), num(p.inferred)});
  }
}

void ranks(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Ranks";
  bool h = u == Units::kHuman;
  t->columns = {{"rank", "rank"},        {"span_ns", "span"},       {"comm_ns", "in collectives"},
                {"comm_share", "comm %"}, {"rest_ns", "rest"},      {"wait_ns", "waiting"},
                {"wait_share", "wait %"}, {"state", "state", false}};
  for (const analyzer::RankStats& r : a.ranks) {
    bool cut = r.cut_off || contains(a.cut_off_ranks, r.rank);
    int64_t rest = std::max<int64_t>(0, r.span_ns - r.comm_ns);
    std::string state = cut ? (h ? "CUT OFF" : "cut_off") : (h ? "" : "ok");
    if (h) {
      t->rows.push_back({num(r.rank), format::duration(r.span_ns), format::duration(r.comm_ns),
                         percent(r.comm_ns, r.span_ns), format::duration(rest),
                         format::duration(r.wait_ns), percent(r.wait_ns, r.comm_ns), state});
    } else {
      auto share = [](int64_t p, int64_t w) {
        return w > 0 ? format::fixed(static_cast<double>(p) / static_cast<double>(w), 6) : "";
      };
      t->rows.push_back({num(r.rank), num(r.span_ns), num(r.comm_ns), share(r.comm_ns, r.span_ns),
                         num(rest), num(r.wait_ns), share(r.wait_ns, r.comm_ns), state});
    }
  }
  for (int m : a.missing_ranks) {
    t->rows.push_back({num(m), "", "", "", "", "", "", h ? "MISSING" : "missing"});
  }
}

void stragglerTable(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Stragglers (last rank to enter a collective)";
  bool h = u == Units::kHuman;
  t->columns = {{"rank", "rank"}, {"times_last", "times last"}, {"share", "share"},
                {"total_skew_ns", "skew caused"}, {"max_skew_ns", "max skew"}};
  int64_t multi = 0;
  for (const auto& c : a.collectives) multi += c.ranks >= 2 ? 1 : 0;
  for (const StragglerRow& s : stragglers(a)) {
    t->rows.push_back(
        {num(s.rank), h ? format::count(s.times_last) : num(s.times_last),
         h ? percent(s.times_last, multi)
           : (multi > 0
                  ? format::fixed(static_cast<double>(s.times_last) / static_cast<double>(multi), 6)
                  : ""),
         h ? format::duration(s.total_skew_ns) : num(s.total_skew_ns),
         h ? format::duration(s.max_skew_ns) : num(s.max_skew_ns)});
  }
}

void gpuTable(const Analysis& a, Units u, ReportTable* t) {
  t->title = "GPUs (CUPTI; NCCL = kernels launched by a recorded collective, overlap = share of it beside compute)";
  bool h = u == Units::kHuman;
  t->columns = {{"rank", "rank"},
                {"device", "gpu"},
                {"span_ns", "span"},
                {"busy_share", "busy %"},
                {"kernels", "kernels"},
                {"comm_kernel_ns", "NCCL"},
                {"overlap_share", "overlap"},
                {"exposed_comm_ns", "exposed"},
                {"compute_kernel_ns", "compute"},
                {"memcpy_htod_bytes", "HtoD"},
                {"memcpy_dtoh_bytes", "DtoH"},
                {"sync_ns", "sync"}};
  for (const analyzer::GpuStats& g : a.gpus) {
    if (h) {
      t->rows.push_back({num(g.rank), num(g.device), format::duration(g.span_ns),
                         format::fixed(100 * g.busy_share, 1) + "%", format::count(g.kernels),
                         format::duration(g.comm_kernel_ns),
                         g.overlap_share < 0 ? "-" : format::fixed(100 * g.overlap_share, 1) + "%",
                         format::duration(g.exposed_comm_ns), format::duration(g.compute_kernel_ns),
                         format::bytes(g.memcpy_htod_bytes), format::bytes(g.memcpy_dtoh_bytes),
                         format::duration(g.sync_ns)});
    } else {
      t->rows.push_back({num(g.rank), num(g.device), num(g.span_ns), format::fixed(g.busy_share, 6),
                         num(g.kernels), num(g.comm_kernel_ns), rawDouble(g.overlap_share),
                         num(g.exposed_comm_ns), num(g.compute_kernel_ns), num(g.memcpy_htod_bytes),
                         num(g.memcpy_dtoh_bytes), num(g.sync_ns)});
    }
  }
}

void channelTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Traffic per link and NCCL channel";
  bool h = u == Units::kHuman;
  t->columns = {{"src", "link", false}, {"dst", "", false}, {"channel", "channel"},
                {"bytes", "bytes"},     {"messages", "msgs"}};
  if (h) t->columns.erase(t->columns.begin() + 1);
  for (const analyzer::ChannelTraffic& c : a.channel_traffic) {
    if (limit != 0 && t->rows.size() >= limit) break;
    if (h) {
      t->rows.push_back({num(c.src) + "->" + num(c.dst), num(c.channel), format::bytes(c.bytes),
                         format::count(c.messages)});
    } else {
      t->rows.push_back({num(c.src), num(c.dst), num(c.channel), num(c.bytes), num(c.messages)});
    }
  }
  if (t->rows.size() < a.channel_traffic.size())
    t->note = num(static_cast<int64_t>(a.channel_traffic.size() - t->rows.size())) + " more rows";
}

}  // namespace

const std::vector<std::string>& csvTableIds() {
  static const std::vector<std::string> ids = {"op_buckets", "collectives", "links",
                                               "idle_links", "phases",      "ranks",
                                               "stragglers", "gpus",        "channels"};
  return ids;
}

bool buildReportTable(const Analysis& a, const std::string& id, Units units, size_t limit,
                      ReportTable* out) {
  *out = ReportTable{};
  out->id = id;
  if (id == "op_buckets") opBuckets(a, units, out);
  else if (id == "collectives") collectives(a, units, limit, out);
  else if (id == "links") links(a, units, limit, out);
  else if (id == "idle_links") idleLinks(a, units, limit, out);
  else if (id == "phases") phases(a, units, out);
  else if (id == "ranks") ranks(a, units, out);
  else if (id == "stragglers") stragglerTable(a, units, out);
  else if (id == "gpus") gpuTable(a, units, out);
  else if (id == "channels") channelTable(a, units, limit, out);
  else return false;
  return true;
}

std::vector<StragglerRow> stragglers(const Analysis& a) {
  std::map<int, StragglerRow> by_rank;
  for (const analyzer::CollectiveInstance& c : a.collectives) {
    if (c.ranks < 2 || c.straggler_rank < 0) continue;
    StragglerRow& s = by_rank[c.straggler_rank];
    s.rank = c.straggler_rank;
    ++s.times_last;
    s.total_skew_ns += c.arrival_skew_ns;
    s.max_skew_ns = std::max(s.max_skew_ns, c.arrival_skew_ns);
  }
  std::vector<StragglerRow> out;
  for (auto& [rank, s] : by_rank) out.push_back(s);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.total_skew_ns > y.total_skew_ns; });
  return out;
}

std::vector<PhaseTotal> phaseTotals(const Analysis& a) {
  std::map<std::string, PhaseTotal> by_phase;
  for (const analyzer::PhaseStats& p : a.phases) {
    PhaseTotal& t = by_phase[p.phase];
    t.phase = p.phase;
    int64_t d = std::max<int64_t>(0, p.end_ns - p.start_ns);
    ++t.instances;
    t.total_ns += d;
    t.max_ns = std::max(t.max_ns, d);
    t.inferred += p.inferred ? 1 : 0;
  }
  std::vector<PhaseTotal> out;
  for (auto& [name, t] : by_phase) out.push_back(t);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& x, const auto& y) { return x.total_ns > y.total_ns; });
  return out;
}

const analyzer::LinkStats* bottleneckLink(const Analysis& a) {
  int64_t most = 0;
  for (const auto& l : a.links) most = std::max(most, l.bytes);
  const analyzer::LinkStats* worst = nullptr;
  for (const auto& l : a.links) {
    if (l.bytes * 10 < most || l.busy_ns <= 0) continue;
    double rate = static_cast<double>(l.bytes) / static_cast<double>(l.busy_ns);
    if (worst == nullptr ||
        rate < static_cast<double>(worst->bytes) / static_cast<double>(worst->busy_ns))
      worst = &l;
  }
  return worst;
}

std::string sizeRange(int64_t lo, int64_t hi) {
  if (hi <= lo + 1) return format::bytes(lo);
  if (lo > 0 && hi == lo * 2) return format::bytes(lo);
  return format::bytes(lo) + "-" + format::bytes(hi);
}

std::string formatGbps(double gbps) {
  if (gbps < 0) return "-";
  if (gbps >= 100) return format::fixed(gbps, 0);
  if (gbps >= 10) return format::fixed(gbps, 1);
  if (gbps >= 1) return format::fixed(gbps, 2);
  return format::fixed(gbps, 3);
}

std::string reportHeadline(const Analysis& a) {
  std::string s = std::to_string(a.ranks_present.size()) + " of " + std::to_string(a.world_size) +
                  " ranks (" + analyzer::formatRankList(a.ranks_present) + ")";
  if (!a.cut_off_ranks.empty()) s += ", cut off: " + analyzer::formatRankList(a.cut_off_ranks);
  if (!a.missing_ranks.empty()) s += ", missing: " + analyzer::formatRankList(a.missing_ranks);
  s += "; " + format::count(static_cast<int64_t>(a.collectives.size())) + " collectives, " +
       format::count(a.transfers) + " transfers over " + format::duration(a.end_ns - a.start_ns);
  return s;
}

}  // namespace ringside::cli
