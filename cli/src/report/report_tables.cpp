#include "report/report_tables.h"

#include <algorithm>
#include <cinttypes>
#include <map>

#include "ringside/analyzer/collective_math.h"
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

std::string hostName(const Analysis& a, int host) {
  if (host < 0 || static_cast<size_t>(host) >= a.hosts.size()) return "";
  const std::string& name = a.hosts[static_cast<size_t>(host)].name;
  return name.empty() ? "(unnamed)" : name;
}

void opBuckets(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Collectives by op and size";
  bool h = u == Units::kHuman;
  if (h) {
    // For a person: the calls' actual sizes (one size, or min-max), not the bucket's edges;
    // the sum of call times and p99 stay in the machine formats (100 columns).
    t->columns = {{"op", "op", false}, {"library", "library", false}, {"size", "size", false},
                  {"count", "calls"},  {"wall_ns", "time"},            {"p50_ns", "p50"},
                  {"p90_ns", "p90"},   {"max_ns", "max"},              {"mean_busbw_gbps", "busbw"}};
  } else {
    t->columns = {{"op", "op", false},    {"library", "library", false}, {"size_lo", "size_lo"},
                  {"size_hi", "size_hi"}, {"min_bytes", "min_bytes"},    {"max_bytes", "max_bytes"},
                  {"count", "count"},     {"wall_ns", "wall_ns"},        {"total_ns", "total_ns"},
                  {"p50_ns", "p50_ns"},   {"p90_ns", "p90_ns"},          {"p99_ns", "p99_ns"},
                  {"max_ns", "max_ns"},   {"mean_busbw_gbps", "mean_busbw_gbps"}};
  }
  for (const analyzer::OpBucket& b : a.op_buckets) {
    std::vector<std::string> r = {b.op, b.library};
    if (h) {
      r.insert(r.end(), {analyzer::sizeText(b.min_bytes, b.max_bytes),
                         format::count(b.count), format::duration(b.wall_ns),
                         format::duration(b.p50_ns), format::duration(b.p90_ns),
                         format::duration(b.max_ns), formatGbps(b.mean_busbw_gbps)});
    } else {
      r.insert(r.end(), {num(b.size_lo), num(b.size_hi), num(b.min_bytes), num(b.max_bytes),
                         num(b.count), num(b.wall_ns), num(b.total_ns), num(b.p50_ns),
                         num(b.p90_ns), num(b.p99_ns), num(b.max_ns),
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
                {"straggler_rank", "last"},  {"busbw_gbps", "busbw"},
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
                {"busy_ns", "busy"},         {"mean_gbps", "mean rate"},
                {"peak_gbps", "peak rate"},  {"busy_gbps", "busy rate"},
                {"capacity_gbps", "capacity"}, {"busy_share_of_collectives", "busy in coll"}};
  if (h) t->columns.erase(t->columns.begin() + 1);
  // intra-host (memory, loopback, shared memory) or inter-host (network): a human table says so
  // where there are 2+ hosts, CSV always (last column).
  bool scope = !h || a.hosts.size() >= 2;
  if (scope) t->columns.push_back({"scope", "scope", false});
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
    if (scope) {
      std::string name = analyzer::linkScopeName(l->scope);
      r.push_back(h && l->scope != analyzer::LinkScope::kUnknown ? name.substr(0, 5) : name);
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
                {"capacity_gbps", "capacity"}};
  if (h) t->columns.erase(t->columns.begin() + 1);
  // A pair of hosts (no topology file, 2+ hosts) has no rank ids: CSV names its hosts.
  if (!h) t->columns.insert(t->columns.end(), {{"src_host", "", false}, {"dst_host", "", false}});
  for (const analyzer::IdleLink& l : a.idle_links) {
    if (limit != 0 && t->rows.size() >= limit) break;
    bool hosts = l.src_host >= 0 && l.dst_host >= 0;
    if (h) {
      std::string name = hosts ? hostName(a, l.src_host) + "->" + hostName(a, l.dst_host) +
                                     " (hosts)"
                               : num(l.src) + "->" + num(l.dst);
      t->rows.push_back({name, l.where, formatGbps(l.capacity_gbps)});
    } else {
      t->rows.push_back({hosts ? "" : num(l.src), hosts ? "" : num(l.dst), l.where,
                         rawDouble(l.capacity_gbps), hostName(a, l.src_host),
                         hostName(a, l.dst_host)});
    }
  }
  if (t->rows.size() < a.idle_links.size())
    t->note = num(static_cast<int64_t>(a.idle_links.size() - t->rows.size())) + " more idle links";
}

void phases(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Phases (all collectives, all ranks)";
  bool h = u == Units::kHuman;
  // Phase times count from the last rank's entry; the waiting before it is its own column.
  t->columns = {{"phase", "phase", false}, {"instances", "instances"}, {"total_ns", "total"},
                {"mean_ns", "mean"},       {"max_ns", "max"},          {"wait_ns", "waited before"},
                {"inferred", "inferred"}};
  for (const PhaseTotal& p : phaseTotals(a)) {
    int64_t mean = p.instances > 0 ? p.total_ns / p.instances : 0;
    t->rows.push_back(
        {p.phase.empty() ? "(unknown)" : p.phase, h ? format::count(p.instances) : num(p.instances),
         h ? format::duration(p.total_ns) : num(p.total_ns), h ? format::duration(mean) : num(mean),
         h ? format::duration(p.max_ns) : num(p.max_ns),
         h ? format::duration(p.wait_ns) : num(p.wait_ns), num(p.inferred)});
  }
}

// Ranks grouped by host (in the order of Analysis::hosts), by rank within a host.
std::vector<const analyzer::RankStats*> ranksByHost(const Analysis& a) {
  std::vector<const analyzer::RankStats*> sorted;
  for (const analyzer::RankStats& r : a.ranks) sorted.push_back(&r);
  auto key = [](const analyzer::RankStats* r) {
    return std::make_pair(r->host < 0 ? INT32_MAX : r->host, r->rank);
  };
  std::stable_sort(sorted.begin(), sorted.end(),
                   [&](auto* x, auto* y) { return key(x) < key(y); });
  return sorted;
}

}  // namespace

void keepRowsForPerson(ReportTable* t, const std::vector<double>& score, size_t limit,
                       bool lowest_too, const std::string& what) {
  if (limit == 0 || t->rows.size() != score.size() || t->rows.size() <= 2 * limit) return;
  std::vector<size_t> order(score.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&score](size_t x, size_t y) { return score[x] > score[y]; });
  std::vector<char> keep(score.size(), 0);
  const size_t high = lowest_too ? limit : 2 * limit;
  for (size_t i = 0; i < high; ++i) keep[order[i]] = 1;
  if (lowest_too) {
    for (size_t i = 0; i < limit; ++i) keep[order[order.size() - 1 - i]] = 1;
  }
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    if (keep[i]) rows.push_back(std::move(t->rows[i]));
  }
  const size_t left = t->rows.size() - rows.size();
  t->rows = std::move(rows);
  t->note = format::count(static_cast<int64_t>(left)) + " more " + what +
            " in between; every row is in the JSON and CSV reports";
}

namespace {

void ranks(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Ranks";
  bool h = u == Units::kHuman;
  // Human tables name the host only where there are 2+; CSV always has the column (last).
  bool by_host = h && a.hosts.size() >= 2;
  if (by_host) t->title = "Ranks (grouped by host)";
  t->columns = {{"rank", "rank"},        {"span_ns", "span"},       {"comm_ns", "in collectives"},
                {"comm_share", "comm %"}, {"rest_ns", "rest"},      {"wait_ns", "waiting"},
                {"wait_share", "wait %"}, {"caused_wait_ns", "caused wait"},
                {"caused_share", "blame %"}, {"state", "state", false}};
  if (by_host) t->columns.insert(t->columns.begin() + 1, {"host", "host", false});
  if (!h) t->columns.push_back({"host", "host", false});
  // Victims wait (wait_ns); the culprit caused it (caused_wait_ns, its share of all ranks').
  int64_t caused_total = 0;
  for (const analyzer::RankStats& r : a.ranks) caused_total += r.caused_wait_ns;
  std::vector<double> score;  // wait share: the ranks that wait most and least (late ranks)
  for (const analyzer::RankStats* rs : ranksByHost(a)) {
    const analyzer::RankStats& r = *rs;
    score.push_back(r.comm_ns > 0 ? static_cast<double>(r.wait_ns) / static_cast<double>(r.comm_ns)
                                  : 0.0);
    bool cut = r.cut_off || contains(a.cut_off_ranks, r.rank);
    int64_t rest = std::max<int64_t>(0, r.span_ns - r.comm_ns);
    std::string state = cut ? (h ? "CUT OFF" : "cut_off") : (h ? "" : "ok");
    if (h) {
      t->rows.push_back({num(r.rank), format::duration(r.span_ns), format::duration(r.comm_ns),
                         percent(r.comm_ns, r.span_ns), format::duration(rest),
                         format::duration(r.wait_ns), percent(r.wait_ns, r.comm_ns),
                         format::duration(r.caused_wait_ns),
                         percent(r.caused_wait_ns, caused_total), state});
      if (by_host) t->rows.back().insert(t->rows.back().begin() + 1, hostName(a, r.host));
    } else {
      auto share = [](int64_t p, int64_t w) {
        return w > 0 ? format::fixed(static_cast<double>(p) / static_cast<double>(w), 6) : "";
      };
      t->rows.push_back({num(r.rank), num(r.span_ns), num(r.comm_ns), share(r.comm_ns, r.span_ns),
                         num(rest), num(r.wait_ns), share(r.wait_ns, r.comm_ns),
                         num(r.caused_wait_ns), share(r.caused_wait_ns, caused_total), state,
                         hostName(a, r.host)});
    }
  }
  // For a person, a thousand ranks are a distribution: the ranks that wait most and least,
  // and the missing ones when they are few (the headline counts them).
  if (h) keepRowsForPerson(t, score, limit, /*lowest_too=*/true, "ranks");
  if (h && limit > 0 && a.missing_ranks.size() > limit) return;
  for (int m : a.missing_ranks) {
    t->rows.push_back({num(m), "", "", "", "", "", "", "", "", h ? "MISSING" : "missing"});
    if (by_host || !h) t->rows.back().insert(t->rows.back().begin() + (h ? 1 : 10), "");
  }
}

// Per host: its ranks, their time in collectives, and the bytes they moved inside it and out.
void hostTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Hosts";
  bool h = u == Units::kHuman;
  t->columns = {{"host", "host", false},        {"ranks", "ranks", false},
                {"comm_ns", "in collectives"},  {"wait_ns", "waiting"},
                {"sent_intra_bytes", "sent intra"}, {"sent_inter_bytes", "sent inter"},
                {"recv_intra_bytes", "recv intra"}, {"recv_inter_bytes", "recv inter"}};
  std::vector<double> score;
  for (size_t i = 0; i < a.hosts.size(); ++i) {
    const analyzer::HostStats& x = a.hosts[i];
    std::string ranks = analyzer::formatRankList(x.ranks);
    if (h) {
      t->rows.push_back({hostName(a, static_cast<int>(i)), ranks, format::duration(x.comm_ns),
                         format::duration(x.wait_ns), format::bytes(x.sent_intra_bytes),
                         format::bytes(x.sent_inter_bytes), format::bytes(x.recv_intra_bytes),
                         format::bytes(x.recv_inter_bytes)});
    } else {
      t->rows.push_back({hostName(a, static_cast<int>(i)), ranks, num(x.comm_ns), num(x.wait_ns),
                         num(x.sent_intra_bytes), num(x.sent_inter_bytes),
                         num(x.recv_intra_bytes), num(x.recv_inter_bytes)});
    }
    score.push_back(x.comm_ns > 0 ? static_cast<double>(x.wait_ns) / static_cast<double>(x.comm_ns) : 0.0);
  }
  // Many hosts: those whose ranks wait most and least (a late host waits least).
  if (h) keepRowsForPerson(t, score, limit, /*lowest_too=*/true, "hosts");
}

// The host x host matrix as a list: every pair of hosts that carried bytes.
void hostTrafficTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Traffic between hosts";
  bool h = u == Units::kHuman;
  t->columns = {{"src_host", "from", false}, {"dst_host", "to", false}, {"scope", "scope", false},
                {"bytes", "bytes"},          {"messages", "msgs"},      {"busy_ns", "busy"}};
  std::vector<double> score;
  for (size_t s = 0; s < a.host_traffic.size(); ++s) {
    for (size_t d = 0; d < a.host_traffic[s].size(); ++d) {
      const analyzer::HostTraffic& x = a.host_traffic[s][d];
      if (x.bytes == 0 && x.messages == 0) continue;
      std::string scope = s == d ? "intra-host" : "inter-host";
      t->rows.push_back({hostName(a, static_cast<int>(s)), hostName(a, static_cast<int>(d)), scope,
                         h ? format::bytes(x.bytes) : num(x.bytes),
                         h ? format::count(x.messages) : num(x.messages),
                         h ? format::duration(x.busy_ns) : num(x.busy_ns)});
      score.push_back(static_cast<double>(x.busy_ns));
    }
  }
  // Many hosts: the busiest pairs (a slow link between hosts is busy longest).
  if (h) keepRowsForPerson(t, score, limit, /*lowest_too=*/false, "pairs of hosts");
  if (a.host_traffic.empty() && a.hosts.size() >= 2)
    t->note = "left out for this many ranks; the links table lists every link";
}

// "+1.20 ms", "-35.0 us", "0 ns".
// A clock offset: hours apart with microseconds still visible (a domain 2 h minus 9 us off must
// not read "-1h59m"), so seconds with six decimals from 1 s up.
std::string signedDuration(int64_t ns) {
  if (ns == 0) return "0 ns";
  int64_t magnitude = ns < 0 ? (ns == INT64_MIN ? INT64_MAX : -ns) : ns;
  if (magnitude >= 1000000000) {
    return format::printf("%c%" PRId64 ".%06" PRId64 " s", ns < 0 ? '-' : '+',
                          magnitude / 1000000000, (magnitude % 1000000000) / 1000);
  }
  return (ns < 0 ? "-" : "+") + format::duration(magnitude);
}

// The clock domains of a trace with 2+ (docs/clock-alignment.md).
void clockTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Clocks (one domain per kernel clock, mapped onto the reference)";
  bool h = u == Units::kHuman;
  // The clock fit's tree of domains (schema 7): a person sees the domain each one was aligned
  // through ("via", "-" for the reference and traces merged before schema 7); CSV also gives the
  // bound between the two (parent_uncertainty_ns, -1 unknown), as the JSON does.
  t->columns = {{"domain", "domain"},        {"host", "host", false},
                {"ranks", "ranks", false},   {"method", "method", false},
                {"parent", "via"},           {"offset_ns", "offset"},
                {"drift_ppm", "drift ppm"},  {"uncertainty_ns", "uncertainty"},
                {"bounds", "bounds"},        {"violated", "violated"}};
  if (!h) t->columns.insert(t->columns.begin() + 5, {"parent_uncertainty_ns", "parent uncertainty"});
  if (a.clock.domains.size() < 2) return;
  for (const storage::ClockDomain& d : a.clock.domains) {
    std::vector<int> ranks(d.ranks.begin(), d.ranks.end());
    if (h) {
      t->rows.push_back({num(d.id), d.host, analyzer::formatRankList(ranks), d.method,
                         d.parent >= 0 ? num(d.parent) : "-", signedDuration(d.offset_ns),
                         format::fixed(d.drift_ppm, 2),
                         "±" + format::duration(std::max<int64_t>(0, d.uncertainty_ns)),
                         format::count(d.bounds), format::count(d.violated)});
    } else {
      t->rows.push_back({num(d.id), d.host, analyzer::formatRankList(ranks), d.method, num(d.parent),
                         num(d.parent_uncertainty_ns), num(d.offset_ns), format::fixed(d.drift_ppm, 6),
                         num(d.uncertainty_ns), num(d.bounds), num(d.violated)});
    }
  }
  // A person sees the least and the best aligned domains (the summary line below the table
  // gives the worst uncertainty and the unmet bounds of all).
  std::vector<double> score;
  for (const storage::ClockDomain& d : a.clock.domains)
    score.push_back(static_cast<double>(d.uncertainty_ns) + 1e15 * static_cast<double>(d.violated));
  if (h) keepRowsForPerson(t, score, limit / 2, /*lowest_too=*/true, "clock domains");
}

// The what-if: per library of all-reduces, each algorithm's predicted time (docs/whatif.md).
void whatIfTable(const Analysis& a, Units u, ReportTable* t) {
  t->title = "What-if: the job's all-reduces under each algorithm (predicted; the one that ran: measured)";
  bool h = u == Units::kHuman;
  t->columns = {{"library", "library", false}, {"ranks", "ranks"}, {"calls", "calls"},
                {"sizes", "sizes", false},     {"ran", "ran", false}, {"ring_ns", "ring"},
                {"tree_ns", "tree"},           {"multipath_ns", "multipath"}, {"best", "best", false}};
  for (const analyzer::WhatIf& w : a.what_if) {
    std::vector<std::string> row = {w.library, num(w.ranks), h ? format::count(w.calls) : num(w.calls),
                                    h ? analyzer::sizeText(w.min_bytes, w.max_bytes)
                                      : w.min_bytes == w.max_bytes ? num(w.min_bytes)
                                                                   : num(w.min_bytes) + "-" + num(w.max_bytes),
                                    w.ran};
    for (const analyzer::WhatIfAlgorithm& x : w.algorithms) {
      if (x.predicted_ns < 0) {
        row.push_back(h ? "-" : "");
      } else if (!h) {
        row.push_back(num(static_cast<int64_t>(x.predicted_ns)));
      } else {
        // The one that ran is the `ran` column's, measured; the others say their speed-up on it.
        std::string cell = format::duration(static_cast<int64_t>(x.predicted_ns));
        if (!x.ran && w.measured_ns > 0) cell += " (" + format::fixed(w.measured_ns / x.predicted_ns, 2) + "x)";
        row.push_back(cell);
      }
    }
    if (!h) row.push_back(w.best);
    t->rows.push_back(std::move(row));
  }
  if (h) t->columns.pop_back();  // a person reads the best one in the confirm line below
}

// The autopsy's verdicts (analyzer/hang.h), one row each, root causes first.
void autopsyTable(const Analysis& a, Units u, ReportTable* t) {
  t->title = "Autopsy: who hung or desynchronized the job";
  bool h = u == Units::kHuman;
  t->columns = {{"rule", "rule", false},   {"culprits", "culprits", false},
                {"waiting", "waiting", false}, {"communicator", "communicator", false},
                {"seq", "seq"},            {"op", "op", false},
                {"bytes", "bytes"},        {"step", "step"},
                {"waited_ns", "waited"},   {"message", "message", false}};
  for (const analyzer::hang::Verdict& v : a.autopsy) {
    t->rows.push_back({v.rule, analyzer::hang::rankRanges(v.culprits),
                       analyzer::hang::rankRanges(v.waiting), v.comm, num(v.seq), v.op,
                       h ? format::bytes(v.bytes) : num(v.bytes), num(v.step),
                       h ? format::duration(v.waited_ns) : num(v.waited_ns), v.message});
  }
}

void stragglerTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Stragglers (last rank to enter a collective)";
  bool h = u == Units::kHuman;
  t->columns = {{"rank", "rank"}, {"times_last", "times last"}, {"share", "share"},
                {"total_skew_ns", "skew caused"}, {"max_skew_ns", "max skew"}};
  int64_t multi = 0;
  for (const auto& c : a.collectives) multi += c.ranks >= 2 ? 1 : 0;
  std::vector<double> score;
  for (const StragglerRow& s : stragglers(a)) {
    t->rows.push_back(
        {num(s.rank), h ? format::count(s.times_last) : num(s.times_last),
         h ? percent(s.times_last, multi)
           : (multi > 0
                  ? format::fixed(static_cast<double>(s.times_last) / static_cast<double>(multi), 6)
                  : ""),
         h ? format::duration(s.total_skew_ns) : num(s.total_skew_ns),
         h ? format::duration(s.max_skew_ns) : num(s.max_skew_ns)});
    score.push_back(static_cast<double>(s.times_last));
  }
  // With many ranks, each last once or twice, the list is as long as the job: for a person the
  // ranks that were last most often (the late rank stands first).
  if (h) keepRowsForPerson(t, score, limit, /*lowest_too=*/false, "ranks (each last less often)");
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
  static const std::vector<std::string> ids = {"autopsy", "op_buckets", "collectives", "links",
                                               "idle_links", "phases",      "ranks",
                                               "stragglers", "gpus",        "channels",
                                               "hosts",      "host_traffic", "clocks",
                                               "steps",      "rank_steps", "what_if"};
  return ids;
}

bool buildReportTable(const Analysis& a, const std::string& id, Units units, size_t limit,
                      ReportTable* out) {
  *out = ReportTable{};
  out->id = id;
  if (id == "autopsy") autopsyTable(a, units, out);
  else if (id == "op_buckets") opBuckets(a, units, out);
  else if (id == "collectives") collectives(a, units, limit, out);
  else if (id == "links") links(a, units, limit, out);
  else if (id == "idle_links") idleLinks(a, units, limit, out);
  else if (id == "phases") phases(a, units, out);
  else if (id == "ranks") ranks(a, units, limit, out);
  else if (id == "stragglers") stragglerTable(a, units, limit, out);
  else if (id == "what_if") whatIfTable(a, units, out);
  else if (id == "gpus") gpuTable(a, units, out);
  else if (id == "channels") channelTable(a, units, limit, out);
  else if (id == "hosts") hostTable(a, units, limit, out);
  else if (id == "host_traffic") hostTrafficTable(a, units, limit, out);
  else if (id == "clocks") clockTable(a, units, limit, out);
  else if (id == "steps") stepTable(a, units, limit, out);
  else if (id == "rank_steps") rankStepTable(a, units, limit, out);
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
  for (const PhaseTotal& left : a.phases_left_out) {
    PhaseTotal& t = by_phase[left.phase];
    t.phase = left.phase;
    t.add(left);
  }
  for (const analyzer::PhaseStats& p : a.phases) {
    PhaseTotal& t = by_phase[p.phase];
    t.phase = p.phase;
    t.add(p);
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
  std::vector<double> rates;
  for (const auto& l : a.links) {
    if (l.bytes < most / 10 || l.busy_ns <= 0) continue;
    double rate = static_cast<double>(l.bytes) / static_cast<double>(l.busy_ns);
    rates.push_back(rate);
    if (worst == nullptr ||
        rate < static_cast<double>(worst->bytes) / static_cast<double>(worst->busy_ns))
      worst = &l;
  }
  if (worst == nullptr) return nullptr;
  // Links within 20% of each other have no bottleneck: the slowest is only the noise's pick.
  std::sort(rates.begin(), rates.end());
  const double median = rates[(rates.size() - 1) / 2];
  const double worst_rate = static_cast<double>(worst->bytes) / static_cast<double>(worst->busy_ns);
  return worst_rate >= 0.8 * median ? nullptr : worst;
}

std::string formatGbps(double gbps) {
  if (gbps < 0) return "-";
  // Scaled to the figure (B/s ... GB/s, three significant digits): never "0.000" for a slow
  // link, never an exponent (docs/metrics.md, units).
  return format::rate(gbps * 1e9, 3);
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

namespace ringside::cli {

std::vector<std::string> clockNotes(const Analysis& a) {
  std::vector<std::string> out;
  const storage::ClockModel& m = a.clock;
  if (m.domains.size() < 2) return out;
  const int64_t worst = m.maxUncertaintyNs();
  out.push_back(std::to_string(m.domains.size()) + " clock domains on one time line (" +
                (m.method.empty() ? std::string("?") : m.method) + "), uncertainty up to ±" +
                format::duration(worst) + "; " + format::count(m.violated) + " of " +
                format::count(m.bounds) + " bounds not met");
  if (m.messages_checked > 0) {
    out.push_back(format::count(m.messages_before_sent) + " of " +
                  format::count(m.messages_checked) +
                  " messages between domains still appear to arrive before they were sent");
  }
  // The effects reported: arrival skews and collective durations (their medians).
  std::vector<int64_t> skews, durations;
  for (const analyzer::CollectiveInstance& c : a.collectives) {
    if (c.ranks >= 2) skews.push_back(c.arrival_skew_ns);
    durations.push_back(c.duration_ns);
  }
  auto median = [](std::vector<int64_t>& v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? int64_t{-1} : v[(v.size() - 1) / 2];
  };
  const int64_t skew = median(skews), duration = median(durations);
  std::vector<std::string> smaller;
  if (skew >= 0 && worst > skew) smaller.push_back("the median arrival skew (" +
                                                   format::duration(skew) + ")");
  if (duration >= 0 && worst > duration) smaller.push_back("the median collective duration (" +
                                                           format::duration(duration) + ")");
  if (!smaller.empty()) {
    std::string what = smaller[0] + (smaller.size() > 1 ? " and " + smaller[1] : "");
    out.push_back("warning: the clock uncertainty ±" + format::duration(worst) +
                  " is larger than " + what +
                  ": differences between hosts that small are within the clock error");
  }
  return out;
}

}  // namespace ringside::cli
