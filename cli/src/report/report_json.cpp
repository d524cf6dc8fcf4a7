// The JSON report (docs/report-json.md). Keys are stable within a schema
// version; a new key may appear in a minor revision, none disappears.
#include <algorithm>

#include "report/report_format.h"
#include "ringside/analyzer/findings.h"
#include "ringside/format/json.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

// Builds one JSON object or array as text; callers nest them.
class Json {
 public:
  static Json object() { return Json('{', '}'); }
  static Json array() { return Json('[', ']'); }

  Json& field(std::string_view key, const std::string& raw_json) {
    sep();
    format::appendJsonString(key, &text_);
    text_ += ':';
    text_ += raw_json;
    return *this;
  }
  Json& str(std::string_view key, std::string_view value) {
    return field(key, format::jsonString(value));
  }
  Json& num(std::string_view key, int64_t value) { return field(key, std::to_string(value)); }
  Json& dbl(std::string_view key, double value) { return field(key, format::jsonNumber(value)); }
  // -1 (the analyzer's "unknown") becomes null.
  Json& known(std::string_view key, double value) {
    return field(key, value < 0 ? "null" : format::jsonNumber(value));
  }
  Json& boolean(std::string_view key, bool value) { return field(key, value ? "true" : "false"); }
  Json& item(const std::string& raw_json) {
    sep();
    text_ += raw_json;
    return *this;
  }
  std::string done() { return text_ + close_; }

 private:
  Json(char open, char close) : text_(1, open), close_(close) {}
  void sep() {
    if (text_.size() > 1) text_ += ',';
  }
  std::string text_;
  char close_;
};

std::string intArray(const std::vector<int>& v) {
  Json a = Json::array();
  for (int x : v) a.item(std::to_string(x));
  return a.done();
}

// The sections of the report, each one JSON array; `shown` caps the per-instance ones.
std::string collectivesJson(const analyzer::Analysis& a, size_t shown) {
  Json colls = Json::array();
  for (size_t i = 0; i < shown; ++i) {
    const analyzer::CollectiveInstance& c = a.collectives[i];
    colls.item(Json::object()
                   .str("comm", c.comm).num("seq", c.seq).str("op", c.op).str("library", c.library)
                   .str("algorithm", c.algorithm).str("dtype", c.dtype).str("reduce_op", c.reduce_op)
                   .num("bytes", c.bytes).num("ranks", c.ranks)
                   .num("first_start_ns", c.first_start_ns).num("last_start_ns", c.last_start_ns)
                   .num("last_end_ns", c.last_end_ns).num("arrival_skew_ns", c.arrival_skew_ns)
                   .num("straggler_rank", c.straggler_rank).num("caused_wait_ns", c.caused_wait_ns)
                   .num("duration_ns", c.duration_ns)
                   .dbl("algbw_gbps", c.algbw_gbps).dbl("busbw_gbps", c.busbw_gbps)
                   .known("expected_ns", c.expected_ns).num("sent_bytes", c.sent_bytes)
                   .boolean("failed", c.failed)
                   .field("gpu_start_ns", c.gpu_start_ns < 0 ? "null" : std::to_string(c.gpu_start_ns))
                   .field("gpu_end_ns", c.gpu_end_ns < 0 ? "null" : std::to_string(c.gpu_end_ns))
                   .num("gpu_ranks", c.gpu_ranks).boolean("gpu_timed", c.gpu_timed)
                   .field("step", c.step < 0 ? "null" : std::to_string(c.step))
                   .field("bucket", c.bucket < 0 ? "null" : std::to_string(c.bucket))
                   .done());
  }
  return colls.done();
}

std::string opsJson(const analyzer::Analysis& a) {
  Json ops = Json::array();
  for (const analyzer::OpStats& o : a.ops) {
    ops.item(Json::object().str("op", o.op).str("library", o.library).num("count", o.count)
                 .num("bytes", o.bytes).num("wall_ns", o.wall_ns).num("total_ns", o.total_ns)
                 .done());
  }
  return ops.done();
}

std::string opBucketsJson(const analyzer::Analysis& a) {
  Json buckets = Json::array();
  for (const analyzer::OpBucket& b : a.op_buckets) {
    buckets.item(Json::object()
                     .str("op", b.op).str("library", b.library).num("size_lo", b.size_lo)
                     .num("size_hi", b.size_hi).num("min_bytes", b.min_bytes)
                     .num("max_bytes", b.max_bytes).num("count", b.count)
                     .num("total_ns", b.total_ns).num("wall_ns", b.wall_ns)
                     .num("p50_ns", b.p50_ns).num("p90_ns", b.p90_ns).num("p99_ns", b.p99_ns)
                     .num("max_ns", b.max_ns).dbl("mean_busbw_gbps", b.mean_busbw_gbps)
                     .done());
  }
  return buckets.done();
}

std::string linksJson(const analyzer::Analysis& a) {
  Json links = Json::array();
  for (const analyzer::LinkStats& l : a.links) {
    Json bins = Json::array();
    for (double g : l.gbps_per_bin) bins.item(format::jsonNumber(g));
    links.item(Json::object()
                   .num("src", l.src).num("dst", l.dst).num("bytes", l.bytes)
                   .num("messages", l.messages).num("busy_ns", l.busy_ns)
                   .dbl("mean_gbps", l.mean_gbps).dbl("peak_gbps", l.peak_gbps)
                   .dbl("busy_gbps", l.busy_gbps).known("capacity_gbps", l.capacity_gbps)
                   .known("capacity_share", l.capacity_share)
                   .dbl("busy_share_of_collectives", l.busy_share_of_collectives)
                   .boolean("from_recv", l.from_recv).str("scope", analyzer::linkScopeName(l.scope))
                   .field("gbps_per_bin", bins.done())
                   .done());
  }
  return links.done();
}

std::string trafficJson(const analyzer::Analysis& a) {
  Json traffic = Json::array();
  for (const auto& row : a.traffic) {
    Json r = Json::array();
    for (int64_t v : row) r.item(std::to_string(v));
    traffic.item(r.done());
  }
  return traffic.done();
}

// A host's name as a JSON string; null for no host.
std::string hostJson(const analyzer::Analysis& a, int host) {
  if (host < 0 || static_cast<size_t>(host) >= a.hosts.size()) return "null";
  return format::jsonString(a.hosts[static_cast<size_t>(host)].name);
}

std::string hostsJson(const analyzer::Analysis& a) {
  Json hosts = Json::array();
  for (const analyzer::HostStats& h : a.hosts) {
    hosts.item(Json::object().str("name", h.name).field("ranks", intArray(h.ranks))
                   .num("comm_ns", h.comm_ns).num("wait_ns", h.wait_ns)
                   .num("sent_intra_bytes", h.sent_intra_bytes)
                   .num("sent_inter_bytes", h.sent_inter_bytes)
                   .num("recv_intra_bytes", h.recv_intra_bytes)
                   .num("recv_inter_bytes", h.recv_inter_bytes).done());
  }
  return hosts.done();
}

// [src host][dst host] like "traffic", one matrix per figure.
std::string hostTrafficJson(const analyzer::Analysis& a) {
  auto matrix = [&a](int64_t analyzer::HostTraffic::*field) {
    Json rows = Json::array();
    for (const auto& row : a.host_traffic) {
      Json r = Json::array();
      for (const analyzer::HostTraffic& t : row) r.item(std::to_string(t.*field));
      rows.item(r.done());
    }
    return rows.done();
  };
  return Json::object()
      .field("bytes", matrix(&analyzer::HostTraffic::bytes))
      .field("messages", matrix(&analyzer::HostTraffic::messages))
      .field("busy_ns", matrix(&analyzer::HostTraffic::busy_ns))
      .done();
}

// The clock model, for traces with 2+ clock domains.
std::string clockJson(const analyzer::Analysis& a) {
  const storage::ClockModel& m = a.clock;
  Json domains = Json::array();
  for (const storage::ClockDomain& d : m.domains) {
    domains.item(Json::object().num("id", d.id).str("host", d.host).str("boot_id", d.boot_id)
                     .field("ranks", intArray(std::vector<int>(d.ranks.begin(), d.ranks.end())))
                     .str("method", d.method).num("offset_ns", d.offset_ns)
                     .dbl("drift_ppm", d.drift_ppm).num("uncertainty_ns", d.uncertainty_ns)
                     .num("bounds", d.bounds).num("violated", d.violated)
                     .num("anchors", d.anchors).num("segments", d.segments)
                     .num("parent", d.parent)
                     .num("parent_uncertainty_ns", d.parent_uncertainty_ns).done());
  }
  Json notes = Json::array();
  for (const std::string& line : clockNotes(a)) notes.item(format::jsonString(line));
  return Json::object().str("method", m.method).field("domains", domains.done())
      .num("max_uncertainty_ns", m.maxUncertaintyNs()).num("bounds", m.bounds)
      .num("violated", m.violated).num("messages_checked", m.messages_checked)
      .num("messages_before_sent", m.messages_before_sent).field("notes", notes.done())
      .done();
}

std::string idleLinksJson(const analyzer::Analysis& a) {
  Json idle = Json::array();
  for (const analyzer::IdleLink& l : a.idle_links) {
    // A pair of hosts: src and dst are null, src_host and dst_host name the hosts.
    bool hosts = l.src_host >= 0 && l.dst_host >= 0;
    idle.item(Json::object()
                  .field("src", hosts ? "null" : std::to_string(l.src))
                  .field("dst", hosts ? "null" : std::to_string(l.dst)).str("where", l.where)
                  .known("capacity_gbps", l.capacity_gbps)
                  .field("src_host", hosts ? hostJson(a, l.src_host) : "null")
                  .field("dst_host", hosts ? hostJson(a, l.dst_host) : "null").done());
  }
  return idle.done();
}

std::string phasesJson(const analyzer::Analysis& a, size_t shown) {
  Json phases = Json::array();
  for (size_t i = 0; i < shown; ++i) {
    const analyzer::PhaseStats& p = a.phases[i];
    phases.item(Json::object()
                    .str("comm", p.comm).num("seq", p.seq).num("rank", p.rank).str("phase", p.phase)
                    .num("start_ns", p.start_ns).num("end_ns", p.end_ns).num("steps", p.steps)
                    .num("slowest_step", p.slowest_step).num("slowest_step_ns", p.slowest_step_ns)
                    .boolean("inferred", p.inferred).num("wait_ns", p.wait_ns)
                    .done());
  }
  return phases.done();
}

std::string phaseTotalsJson(const analyzer::Analysis& a) {
  Json totals = Json::array();
  for (const PhaseTotal& t : phaseTotals(a)) {
    totals.item(Json::object().str("phase", t.phase).num("instances", t.instances)
                    .num("total_ns", t.total_ns).num("max_ns", t.max_ns)
                    .num("inferred", t.inferred).done());
  }
  return totals.done();
}

std::string stragglersJson(const analyzer::Analysis& a) {
  Json strag = Json::array();
  for (const StragglerRow& s : stragglers(a)) {
    strag.item(Json::object().num("rank", s.rank).num("times_last", s.times_last)
                   .num("total_skew_ns", s.total_skew_ns).num("max_skew_ns", s.max_skew_ns)
                   .done());
  }
  return strag.done();
}

// Every step, and per step every rank (docs/metrics.md names the figures).
std::string stepsJson(const analyzer::Analysis& a) {
  const analyzer::StepInfo& info = a.steps;
  Json steps = Json::array();
  size_t at = 0;
  for (const analyzer::StepStats& st : info.steps) {
    Json ranks = Json::array();
    for (; at < info.per_rank.size() && info.per_rank[at].step == st.step; ++at) {
      const analyzer::StepRankStats& r = info.per_rank[at];
      ranks.item(Json::object().num("rank", r.rank).num("start_ns", r.start_ns)
                     .num("end_ns", r.end_ns).num("step_ns", r.step_ns())
                     .num("compute_ns", r.compute_ns()).num("comm_ns", r.comm_ns)
                     .num("wait_ns", r.wait_ns).num("moving_ns", r.moving_ns())
                     .num("caused_wait_ns", r.caused_wait_ns).done());
    }
    steps.item(Json::object().num("step", st.step).num("start_ns", st.start_ns)
                   .num("end_ns", st.end_ns).boolean("complete", st.complete)
                   .num("calls", st.calls)
                   .field("late_rank", st.late_rank < 0 ? "null" : std::to_string(st.late_rank))
                   .num("late_by_ns", st.late_by_ns).num("wait_ns", st.wait_ns)
                   .field("ranks", ranks.done()).done());
  }
  return Json::object()
      .field("source", info.source.empty() ? "null" : format::jsonString(info.source))
      .field("comm", info.comm.empty() ? "null" : format::jsonString(info.comm))
      .num("calls_per_step", info.calls_per_step).num("setup_calls", info.setup_calls)
      .field("confidence", info.confidence < 0 ? "null" : format::fixed(info.confidence, 3))
      .num("left_out_calls", info.left_out_calls).str("left_out", info.left_out)
      .str("note", info.note).num("count", static_cast<int64_t>(info.steps.size()))
      .field("steps", steps.done())
      .done();
}

// Why a rank is late: CPU per rank over its steps and per host (docs/metrics.md, "CPU").
std::string cpuJson(const analyzer::Analysis& a) {
  Json ranks = Json::array();
  for (const analyzer::RankCpuStats& r : a.rank_cpu) {
    ranks.item(Json::object().num("rank", r.rank).num("host", r.host).num("steps", r.steps)
                   .num("cpu_ns", r.cpu_ns).num("step_ns", r.step_ns)
                   .num("compute_ns", r.compute_ns).dbl("cpu_share", r.cpu_share).dbl("busy_share", r.busy_share)
                   .dbl("involuntary", r.involuntary).dbl("voluntary", r.voluntary)
                   .num("run_delay_ns", r.run_delay_ns).done());
  }
  Json hosts = Json::array();
  for (const analyzer::HostCpuStats& h : a.host_cpu) {
    hosts.item(Json::object().num("host", h.host).num("cores", h.cores).num("ranks", h.ranks)
                   .num("busy_ranks", h.busy_ranks).dbl("cpu_share", h.cpu_share).done());
  }
  return Json::object().field("ranks", ranks.done()).field("hosts", hosts.done()).done();
}

std::string ranksJson(const analyzer::Analysis& a) {
  Json ranks = Json::array();
  for (const analyzer::RankStats& r : a.ranks) {
    bool cut = r.cut_off || std::find(a.cut_off_ranks.begin(), a.cut_off_ranks.end(), r.rank) !=
                                a.cut_off_ranks.end();
    ranks.item(Json::object().num("rank", r.rank).num("span_ns", r.span_ns)
                   .num("comm_ns", r.comm_ns).num("wait_ns", r.wait_ns)
                   .num("caused_wait_ns", r.caused_wait_ns).boolean("cut_off", cut)
                   .field("host", hostJson(a, r.host)).done());
  }
  return ranks.done();
}

std::string gpusJson(const analyzer::Analysis& a) {
  Json gpus = Json::array();
  for (const analyzer::GpuStats& g : a.gpus) {
    gpus.item(Json::object()
                  .num("rank", g.rank).num("device", g.device).num("span_ns", g.span_ns)
                  .num("busy_ns", g.busy_ns).dbl("busy_share", g.busy_share).num("kernels", g.kernels)
                  .num("comm_kernels", g.comm_kernels).num("comm_kernel_ns", g.comm_kernel_ns)
                  .num("compute_kernel_ns", g.compute_kernel_ns).num("overlap_ns", g.overlap_ns)
                  .known("overlap_share", g.overlap_share).num("exposed_comm_ns", g.exposed_comm_ns)
                  .num("memcpys", g.memcpys).num("memcpy_htod_bytes", g.memcpy_htod_bytes)
                  .num("memcpy_dtoh_bytes", g.memcpy_dtoh_bytes).num("memcpy_other_bytes", g.memcpy_other_bytes)
                  .num("memsets", g.memsets).num("memset_bytes", g.memset_bytes).num("sync_ns", g.sync_ns)
                  .num("nvtx_ranges", g.nvtx_ranges)
                  .done());
  }
  return gpus.done();
}

std::string channelTrafficJson(const analyzer::Analysis& a) {
  Json channels = Json::array();
  for (const analyzer::ChannelTraffic& c : a.channel_traffic) {
    channels.item(Json::object().num("src", c.src).num("dst", c.dst).num("channel", c.channel)
                      .num("bytes", c.bytes).num("messages", c.messages).done());
  }
  return channels.done();
}

// The autopsy's verdicts (analyzer/hang.h): who hung or desynchronized the job, root causes
// first. Rule ids and fields are stable (docs/report-json.md).
std::string autopsyJson(const analyzer::Analysis& a) {
  Json out = Json::array();
  for (const analyzer::hang::Verdict& v : a.autopsy) {
    Json sides = Json::array(), seen = Json::array();
    for (const std::string& s : v.sides) sides.item(format::jsonString(s));
    for (const std::string& s : v.last_seen) seen.item(format::jsonString(s));
    const analyzer::FindingRule* rule = analyzer::findingRule(v.rule);
    out.item(Json::object().str("rule", v.rule).field("culprits", intArray(v.culprits))
                 .field("waiting", intArray(v.waiting)).field("links_from", intArray(v.links_from))
                 .str("communicator", v.comm).num("seq", v.seq).str("op", v.op)
                 .num("bytes", v.bytes).field("step", v.step < 0 ? "null" : std::to_string(v.step))
                 .field("waited_ns", v.waited_ns < 0 ? "null" : std::to_string(v.waited_ns))
                 .field("entered_ns", v.entered_ns < 0 ? "null" : std::to_string(v.entered_ns)).field("sides", sides.done())
                 .field("last_seen", seen.done()).str("message", v.message)
                 .str("evidence", v.evidence).str("try", rule ? rule->action : "").done());
  }
  return out.done();
}

std::string findingsJson(const analyzer::Analysis& a) {
  Json findings = Json::array();
  for (const analyzer::Finding& f : a.findings) {
    findings.item(Json::object().str("severity", f.severity).str("rule", f.rule)
                      .str("message", f.message).str("evidence", f.evidence)
                      .str("try", f.action).num("cost_ns", f.cost_ns).done());
  }
  return findings.done();
}

// The what-if per library: each algorithm's predicted time for the job's all-reduces (-1: none).
std::string whatIfJson(const analyzer::Analysis& a) {
  Json out = Json::array();
  for (const analyzer::WhatIf& w : a.what_if) {
    Json algos = Json::array();
    for (const analyzer::WhatIfAlgorithm& x : w.algorithms) {
      algos.item(Json::object().str("algorithm", x.algorithm).boolean("ran", x.ran)
                     .known("predicted_ns", x.predicted_ns).str("note", x.note).done());
    }
    out.item(Json::object().str("library", w.library).str("ran", w.ran).num("ranks", w.ranks)
                 .num("calls", w.calls).num("steps", w.steps).num("min_bytes", w.min_bytes)
                 .num("max_bytes", w.max_bytes).num("measured_ns", static_cast<int64_t>(w.measured_ns))
                 .field("algorithms", algos.done()).str("basis", w.basis).str("best", w.best)
                 .str("confirm", w.confirm).done());
  }
  return out.done();
}

// The first `cap` of `total` items, all of them when cap is 0.
size_t capped(size_t total, size_t cap) { return cap == 0 ? total : std::min(total, cap); }

}  // namespace

std::string formatReportJson(const analyzer::Analysis& a, const ReportContext& ctx) {
  Json root = Json::object();
  root.str("schema", "ringside-report/1").num("schema_version", analyzer::kAnalysisSchemaVersion);
  root.str("trace", ctx.trace).num("world_size", a.world_size);
  root.field("ranks_present", intArray(a.ranks_present));
  root.field("cut_off_ranks", intArray(a.cut_off_ranks));
  root.field("missing_ranks", intArray(a.missing_ranks));
  root.field("autopsy", autopsyJson(a));  // first of the findings: why the job hung
  root.field("window", Json::object()
                           .num("start_ns", a.start_ns)
                           .num("end_ns", a.end_ns)
                           .num("bin_ns", a.bin_ns)
                           .done());
  root.num("transfers", a.transfers);
  // Only a trace whose ranks ran on 2+ clocks has a clock section.
  if (a.clock.domains.size() >= 2) root.field("clock", clockJson(a));
  root.field("hosts", hostsJson(a));

  size_t cap = ctx.json_collective_cap;
  size_t collectives_shown = capped(a.collectives.size(), cap);
  root.field("collectives", collectivesJson(a, collectives_shown));
  root.num("collectives_total", static_cast<int64_t>(a.collectives.size()));
  root.boolean("collectives_truncated", collectives_shown < a.collectives.size());
  root.field("op_buckets", opBucketsJson(a));
  root.field("ops", opsJson(a));

  root.field("links", linksJson(a));
  const analyzer::LinkStats* bottleneck = bottleneckLink(a);
  root.field("bottleneck_link",
             bottleneck == nullptr
                 ? "null"
                 : Json::object().num("src", bottleneck->src).num("dst", bottleneck->dst).done());
  root.field("traffic", trafficJson(a));
  root.field("host_traffic", hostTrafficJson(a));
  root.field("idle_links", idleLinksJson(a));

  // Phases are several per collective: four times the collectives' cap. The analysis keeps
  // those rows (reportPhaseRows) and counts the others in phases_left_out.
  size_t phases_total = a.phases.size();
  for (const analyzer::PhaseTotal& t : a.phases_left_out)
    phases_total += static_cast<size_t>(t.instances);
  size_t phases_shown =
      std::min(capped(phases_total, cap * kJsonPhasesPerCollective), a.phases.size());
  root.field("phases", phasesJson(a, phases_shown));
  root.boolean("phases_truncated", phases_shown < phases_total);
  root.field("phase_totals", phaseTotalsJson(a));
  root.field("stragglers", stragglersJson(a));
  root.field("ranks", ranksJson(a));
  root.field("steps", stepsJson(a));
  root.field("cpu", cpuJson(a));

  root.field("gpus", gpusJson(a));
  root.num("gpu_activities", a.gpu_activities);
  root.field("channel_traffic", channelTrafficJson(a));

  root.field("model", Json::object()
                          .str("source", a.model_source)
                          .str("note", a.model_note)
                          .known("alpha_s", a.alpha_s)
                          .known("beta_s_per_byte", a.beta_s_per_byte)
                          .known("capacity_used_share", a.capacity_used_share)
                          .done());
  root.field("what_if", whatIfJson(a));
  root.field("findings", findingsJson(a));
  Json warnings = Json::array();
  for (const std::string& w : a.warnings) warnings.item(format::jsonString(w));
  root.field("warnings", warnings.done());
  return root.done() + "\n";
}

std::string formatDiffJson(const analyzer::Diff& d) {
  Json root = Json::object();
  root.str("schema", "ringside-diff/1").num("schema_version", analyzer::kAnalysisSchemaVersion);
  root.str("label_a", d.label_a).str("label_b", d.label_b);
  root.num("aligned", d.aligned).num("unmatched_a", d.unmatched_a).num("unmatched_b", d.unmatched_b);
  Json verdicts = Json::array();
  for (const std::string& v : d.verdicts) verdicts.item(format::jsonString(v));
  root.field("verdicts", verdicts.done());
  root.str("no_verdict", d.no_verdict);
  Json checks = Json::array();
  for (const std::string& v : d.what_if_checks) checks.item(format::jsonString(v));
  root.field("what_if_checks", checks.done());
  Json rows = Json::array();
  for (const analyzer::DiffRow& r : d.rows) {
    // speedup is null where one side has no instance of the op and size.
    rows.item(Json::object()
                  .str("op", r.op).num("size_lo", r.size_lo).num("size_hi", r.size_hi)
                  .num("count_a", r.count_a).num("count_b", r.count_b)
                  .num("median_a_ns", r.median_a_ns).num("median_b_ns", r.median_b_ns)
                  .num("p10_a_ns", r.p10_a_ns).num("p90_a_ns", r.p90_a_ns)
                  .num("p10_b_ns", r.p10_b_ns).num("p90_b_ns", r.p90_b_ns)
                  .field("speedup", r.speedup > 0 ? format::jsonNumber(r.speedup) : "null")
                  .num("at_stake_ns", r.at_stake_ns).str("verdict", r.verdict).str("note", r.note)
                  .done());
  }
  root.field("rows", rows.done());
  Json phases = Json::array();
  for (const analyzer::DiffPhaseRow& p : d.phases) {
    phases.item(Json::object().str("phase", p.phase).num("total_a_ns", p.total_a_ns)
                    .num("total_b_ns", p.total_b_ns).done());
  }
  root.field("phases", phases.done());
  Json links = Json::array();
  for (const analyzer::DiffLinkRow& l : d.links) {
    links.item(Json::object().num("src", l.src).num("dst", l.dst).num("bytes_a", l.bytes_a)
                   .num("bytes_b", l.bytes_b).num("busy_a_ns", l.busy_a_ns)
                   .num("busy_b_ns", l.busy_b_ns).done());
  }
  root.field("links", links.done());
  return root.done() + "\n";
}

}  // namespace ringside::cli
