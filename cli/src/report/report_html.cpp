// The HTML report: one self-contained page. Inline CSS, inline SVG charts,
// no scripts, no fonts, no URLs, so it opens offline and in CI artifacts.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string_view>

#include "report/report_format.h"
#include "report/svg.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

using analyzer::Analysis;
using svg::esc;
using svg::n;

constexpr const char* kCss = R"(body{font:14px/1.4 sans-serif;margin:24px;color:#222;max-width:1150px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ccc}
table{border-collapse:collapse;margin:8px 0}td,th{padding:2px 8px;border-bottom:1px solid #eee}
td.r,th.r{text-align:right}th{background:#f4f4f4}.problem{color:#b00020;font-weight:bold}
.warning{color:#b26a00;font-weight:bold}.info{color:#555}.ev{color:#666;font-size:12px}
svg{background:#fff;border:1px solid #ddd;margin:6px 0}svg text{font:11px sans-serif;fill:#333}
.cut{color:#b00020;font-weight:bold}.note{color:#666;font-size:12px})";

std::string htmlTable(const ReportTable& t) {
  std::string out = "<h2>" + esc(t.title) + "</h2>";
  if (t.rows.empty()) return out + "<p class=\"note\">(none)</p>";
  out += "<table><tr>";
  for (const auto& c : t.columns) out += "<th" + std::string(c.right ? " class=\"r\"" : "") + ">" + esc(c.title) + "</th>";
  out += "</tr>";
  for (const auto& row : t.rows) {
    out += "<tr>";
    for (size_t i = 0; i < t.columns.size(); ++i) {
      std::string cell = i < row.size() ? row[i] : "";
      bool flag = cell == "CUT OFF" || cell == "MISSING" || cell == "FAILED";
      out += "<td" + std::string(t.columns[i].right ? " class=\"r\"" : flag ? " class=\"cut\"" : "") +
             ">" + esc(cell) + "</td>";
    }
    out += "</tr>";
  }
  out += "</table>";
  if (!t.note.empty()) out += "<p class=\"note\">" + esc(t.note) + "</p>";
  return out;
}

const std::vector<std::string> kPhaseOrder = {"reduce-scatter", "all-gather", "reduce", "broadcast"};

std::string phaseColor(const std::string& phase) {
  auto it = std::find(kPhaseOrder.begin(), kPhaseOrder.end(), phase);
  return it == kPhaseOrder.end() ? "#999999" : svg::series(static_cast<size_t>(it - kPhaseOrder.begin()));
}

// The round step (1, 2 or 5 x 10^k) nearest above `raw`, for axis ticks.
double niceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power * (1 + 1e-9)) return m * power;
  }
  return 10 * power;
}

std::string legendItem(double x, double y, const std::string& color, const std::string& label,
                       const std::string& extra = "") {
  return "<rect x=\"" + n(x) + "\" y=\"" + n(y - 9) + "\" width=\"12\" height=\"10\" fill=\"" + color +
         "\"" + extra + "/><text x=\"" + n(x + 16) + "\" y=\"" + n(y) + "\">" + esc(label) + "</text>";
}

// Ranks drawn one lane or node each: the world, but never more than kMaxDrawnRanks.
int drawnRanks(const Analysis& a) { return std::clamp(a.world_size, 1, kMaxDrawnRanks); }

// Phase timeline: for a few representative collectives (the slowest of each
// op/library/size bucket, at most four), one lane per rank colored by phase.
std::string phaseTimeline(const Analysis& a) {
  std::map<std::pair<std::string, int64_t>, std::vector<const analyzer::PhaseStats*>> by_coll;
  for (const auto& p : a.phases) by_coll[{p.comm, p.seq}].push_back(&p);
  std::map<std::string, const analyzer::CollectiveInstance*> pick;  // bucket -> slowest
  for (const auto& c : a.collectives) {
    if (!by_coll.count({c.comm, c.seq})) continue;
    int lg = c.bytes > 0 ? static_cast<int>(std::log2(static_cast<double>(c.bytes))) : 0;
    std::string key = c.op + "/" + c.library + "/" + std::to_string(lg);
    auto& slot = pick[key];
    if (slot == nullptr || c.duration_ns > slot->duration_ns) slot = &c;
  }
  if (pick.empty()) return "<p class=\"note\">No phases recorded.</p>";
  std::string out;
  int shown = 0;
  int ranks = drawnRanks(a);
  for (const auto& [key, c] : pick) {
    if (++shown > 4) break;
    const auto& ps = by_coll[{c->comm, c->seq}];
    int64_t t0 = ps.front()->start_ns, t1 = ps.front()->end_ns;
    for (const auto* p : ps) t0 = std::min(t0, p->start_ns), t1 = std::max(t1, p->end_ns);
    double W = 1100, left = 70, lane = 18, top = 24, plot = W - left - 20;
    double H = top + lane * ranks + 40;
    double span = static_cast<double>(std::max<int64_t>(1, t1 - t0));
    out += "<svg width=\"" + n(W) + "\" height=\"" + n(H) +
           "\" class=\"phase-timeline\"><text x=\"8\" y=\"16\">" +
           esc(c->op + " " + c->library + " " + format::bytes(c->bytes) + " (" + c->comm + " #" +
               std::to_string(c->seq) + "), " + format::duration(t1 - t0) +
               " from first to last phase") +
           "</text>";
    for (int r = 0; r < ranks; ++r) {
      double y = top + lane * r;
      bool cut = std::find(a.cut_off_ranks.begin(), a.cut_off_ranks.end(), r) != a.cut_off_ranks.end();
      out += "<text x=\"8\" y=\"" + n(y + 12) + "\">rank " + std::to_string(r) + (cut ? " ✂" : "") +
             "</text><rect x=\"" + n(left) + "\" y=\"" + n(y + 2) + "\" width=\"" + n(plot) +
             "\" height=\"" + n(lane - 4) + "\" fill=\"#f3f3f3\"/>";
    }
    for (const auto* p : ps) {
      if (p->rank < 0 || p->rank >= ranks) continue;
      double x = left + plot * static_cast<double>(p->start_ns - t0) / span;
      double w = std::max(1.0, plot * static_cast<double>(p->end_ns - p->start_ns) / span);
      out += "<rect x=\"" + n(x) + "\" y=\"" + n(top + lane * p->rank + 2) + "\" width=\"" + n(w) +
             "\" height=\"" + n(lane - 4) + "\" fill=\"" + phaseColor(p->phase) + "\"><title>" +
             esc(p->phase + " rank " + std::to_string(p->rank) + ": " +
                 format::duration(p->end_ns - p->start_ns) + ", " + std::to_string(p->steps) +
                 " steps") +
             "</title></rect>";
    }
    double ly = top + lane * ranks + 22;
    double lx = left;
    for (const auto& ph : kPhaseOrder) {
      out += legendItem(lx, ly, phaseColor(ph), ph);
      lx += 130;
    }
    out += "<text x=\"" + n(W - 110) + "\" y=\"" + n(ly) + "\">0 .. " +
           esc(format::duration(t1 - t0)) + "</text>";
    out += "</svg>";
  }
  return out;
}

// Link utilization over time: rows = directed links, columns = time bins.
std::string linkHeatmap(const Analysis& a) {
  if (a.links.empty()) return "<p class=\"note\">No transfers recorded.</p>";
  size_t bins = 0;
  double peak = 0;
  for (const auto& l : a.links) {
    bins = std::max(bins, l.gbps_per_bin.size());
    for (double g : l.gbps_per_bin) peak = std::max(peak, g);
  }
  if (bins == 0) return "<p class=\"note\">No utilization bins.</p>";
  double left = 70, top = 24, row = 16, plot = 1000;
  double cw = plot / static_cast<double>(bins);
  double H = top + row * static_cast<double>(a.links.size()) + 60;
  std::string out =
      "<svg width=\"1100\" height=\"" + n(H) +
      "\" class=\"link-heatmap\"><text x=\"8\" y=\"16\">rate per link and time bin (" +
      esc(format::duration(a.bin_ns)) + " each), darkest = " + esc(formatGbps(peak)) +
      "</text>";
  for (size_t i = 0; i < a.links.size(); ++i) {
    const auto& l = a.links[i];
    double y = top + row * static_cast<double>(i);
    out += "<text x=\"8\" y=\"" + n(y + 12) + "\">" + std::to_string(l.src) + "→" + std::to_string(l.dst) + "</text>";
    for (size_t b = 0; b < l.gbps_per_bin.size(); ++b) {
      double g = l.gbps_per_bin[b];
      out += "<rect x=\"" + n(left + cw * static_cast<double>(b)) + "\" y=\"" + n(y) + "\" width=\"" +
             n(cw + 0.5) + "\" height=\"" + n(row - 1) + "\" fill=\"" + svg::heat(peak > 0 ? g / peak : 0) +
             "\"/>";
    }
  }
  // Time ticks under the rows: 0 and every fifth of the trace, from the trace's start.
  double axis = top + row * static_cast<double>(a.links.size());
  const int64_t span = std::max<int64_t>(0, a.end_ns - a.start_ns);
  for (int k = 0; k <= 5; ++k) {
    double x = left + plot * k / 5.0;
    out += "<line x1=\"" + n(x) + "\" y1=\"" + n(axis) + "\" x2=\"" + n(x) + "\" y2=\"" + n(axis + 4) +
           "\" stroke=\"#444\"/><text class=\"tick\" x=\"" + n(x - (k == 5 ? 40 : k == 0 ? 0 : 18)) +
           "\" y=\"" + n(axis + 14) + "\">" +
           esc(format::duration(static_cast<int64_t>(static_cast<double>(span) * k / 5.0))) +
           "</text>";
  }
  double ly = axis + 36;
  for (int k = 0; k <= 10; ++k)
    out += "<rect x=\"" + n(left + 20.0 * k) + "\" y=\"" + n(ly - 9) + "\" width=\"20\" height=\"10\" fill=\"" +
           svg::heat(k / 10.0) + "\" stroke=\"#ccc\"/>";
  out += "<text x=\"" + n(left + 230) + "\" y=\"" + n(ly) + "\">0 → " + esc(formatGbps(peak)) +
         "; time runs left to right over " + esc(format::duration(a.end_ns - a.start_ns)) +
         "</text></svg>";
  return out;
}

// Bytes sent from each rank (rows) to each rank (columns).
std::string trafficMatrix(const Analysis& a) {
  size_t ranks = a.traffic.size();
  if (ranks == 0 && !a.links.empty()) {
    return "<p class=\"note\">Matrix left out for " + std::to_string(a.world_size) +
           " ranks; the links table lists every link.</p>";
  }
  if (ranks == 0) return "<p class=\"note\">No traffic.</p>";
  int64_t peak = 0;
  for (const auto& r : a.traffic) for (int64_t v : r) peak = std::max(peak, v);
  double cell = std::clamp(400.0 / static_cast<double>(ranks), 8.0, 60.0);
  double left = 60, top = 40;
  double W = left + cell * static_cast<double>(ranks) + 20, H = top + cell * static_cast<double>(ranks) + 30;
  std::string out = "<svg width=\"" + n(std::max(W, 360.0)) + "\" height=\"" + n(H) +
                    "\" class=\"traffic-matrix\"><text x=\"8\" y=\"16\">bytes sent: row = from, "
                    "column = to (max " +
                    esc(format::bytes(peak)) + ")</text>";
  for (size_t s = 0; s < ranks; ++s) {
    if (ranks <= 32) {
      out += "<text x=\"8\" y=\"" + n(top + cell * static_cast<double>(s) + cell / 2 + 4) + "\">" + std::to_string(s) + "</text>";
      out += "<text x=\"" + n(left + cell * static_cast<double>(s) + cell / 2 - 3) + "\" y=\"" + n(top - 6) + "\">" + std::to_string(s) + "</text>";
    }
    for (size_t d = 0; d < a.traffic[s].size(); ++d) {
      int64_t v = a.traffic[s][d];
      out += "<rect x=\"" + n(left + cell * static_cast<double>(d)) + "\" y=\"" +
             n(top + cell * static_cast<double>(s)) + "\" width=\"" + n(cell - 1) + "\" height=\"" +
             n(cell - 1) + "\" fill=\"" +
             svg::heat(peak > 0 ? static_cast<double>(v) / static_cast<double>(peak) : 0) +
             "\" stroke=\"#ddd\"><title>" + std::to_string(s) + "→" + std::to_string(d) + ": " +
             esc(format::bytes(v)) + "</title></rect>";
      // The number in the cell where it fits (dark cells get white text).
      if (cell >= 40 && v > 0) {
        bool dark = peak > 0 && static_cast<double>(v) / static_cast<double>(peak) > 0.6;
        out += "<text class=\"cell\" x=\"" + n(left + cell * static_cast<double>(d) + 3) + "\" y=\"" +
               n(top + cell * static_cast<double>(s) + cell / 2 + 4) + "\" style=\"fill:" +
               (dark ? "#fff" : "#000") + "\">" + esc(format::bytes(v)) + "</text>";
      }
    }
  }
  return out + "</svg>";
}

// Bytes sent from each host (rows) to each host (columns); the diagonal stays inside a host.
std::string hostTrafficMatrix(const Analysis& a) {
  size_t hosts = a.host_traffic.size();
  if (a.hosts.size() < 2) return "";
  if (hosts == 0) return "<p class=\"note\">Host matrix left out with the rank matrix.</p>";
  int64_t peak = 0;
  for (const auto& r : a.host_traffic)
    for (const auto& t : r) peak = std::max(peak, t.bytes);
  double cell = std::clamp(240.0 / static_cast<double>(hosts), 8.0, 60.0);
  double left = 110, top = 40;
  double W = left + cell * static_cast<double>(hosts) + 20;
  double H = top + cell * static_cast<double>(hosts) + 30;
  auto name = [&a](size_t h) {
    const std::string& s = a.hosts[h].name;
    return s.empty() ? std::string("(unnamed)") : s;
  };
  std::string out = "<svg width=\"" + n(std::max(W, 300.0)) + "\" height=\"" + n(H) +
                    "\" class=\"host-matrix\"><text x=\"8\" y=\"16\">bytes between hosts: row = "
                    "from, column = to (max " + esc(format::bytes(peak)) + ")</text>";
  for (size_t s = 0; s < hosts; ++s) {
    if (hosts <= 16) {
      std::string label = name(s).size() > 14 ? name(s).substr(0, 13) + "~" : name(s);
      out += "<text x=\"8\" y=\"" + n(top + cell * static_cast<double>(s) + cell / 2 + 4) +
             "\">" + esc(label) + "</text>";
      out += "<text x=\"" + n(left + cell * static_cast<double>(s) + 2) + "\" y=\"" + n(top - 6) +
             "\">" + std::to_string(s) + "</text>";
    }
    for (size_t d = 0; d < a.host_traffic[s].size(); ++d) {
      const analyzer::HostTraffic& t = a.host_traffic[s][d];
      out += "<rect x=\"" + n(left + cell * static_cast<double>(d)) + "\" y=\"" +
             n(top + cell * static_cast<double>(s)) + "\" width=\"" + n(cell - 1) +
             "\" height=\"" + n(cell - 1) + "\" fill=\"" +
             svg::heat(peak > 0 ? static_cast<double>(t.bytes) / static_cast<double>(peak) : 0) +
             "\" stroke=\"" + std::string(s == d ? "#888" : "#ddd") + "\"><title>" +
             esc(name(s) + "→" + name(d) + (s == d ? " (intra-host)" : " (inter-host)") + ": " +
                 format::bytes(t.bytes) + ", " + format::count(t.messages) + " messages, busy " +
                 format::duration(t.busy_ns)) +
             "</title></rect>";
    }
  }
  return out + "</svg>";
}

// The clock section: domains, the messages that still arrive early, the warning (2+ domains).
std::string clockSection(const Analysis& a) {
  if (a.clock.domains.size() < 2) return "";
  ReportTable clocks;
  buildReportTable(a, "clocks", Units::kHuman, 0, &clocks);
  std::string out = htmlTable(clocks) + "<ul class=\"clock\">";
  for (const std::string& line : clockNotes(a)) {
    bool warning = line.rfind("warning: ", 0) == 0;
    out += "<li>" + std::string(warning ? "<span class=\"warning\">warning</span> " : "") +
           esc(warning ? line.substr(9) : line) + "</li>";
  }
  return out + "</ul>\n";
}

// Ranks on a circle; links as arrows (width by bytes); idle links dashed grey.
std::string topologyGraph(const Analysis& a) {
  int ranks = drawnRanks(a);
  double W = 520, H = 480, cx = 260, cy = 230, R = 170;
  auto pos = [&](int r) {
    double ang = -M_PI / 2 + 2 * M_PI * r / ranks;
    return std::pair<double, double>{cx + R * std::cos(ang), cy + R * std::sin(ang)};
  };
  int64_t peak = 1;
  for (const auto& l : a.links) peak = std::max(peak, l.bytes);
  std::string out = "<svg width=\"" + n(W) + "\" height=\"" + n(H) +
                    "\" class=\"topology\"><defs><marker id=\"arr\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#1f77b4\"/></marker></defs>";
  auto edge = [&](int s, int d, const std::string& style, const std::string& title) {
    if (s < 0 || d < 0 || s >= ranks || d >= ranks) return;
    auto [x1, y1] = pos(s);
    auto [x2, y2] = pos(d);
    // Offset each direction sideways so a->b and b->a do not overlap; stop short of the node.
    double dx = x2 - x1, dy = y2 - y1, len = std::max(1.0, std::hypot(dx, dy));
    double ox = -dy / len * 5, oy = dx / len * 5, sx = dx / len * 22, sy = dy / len * 22;
    out += "<line x1=\"" + n(x1 + ox + sx) + "\" y1=\"" + n(y1 + oy + sy) + "\" x2=\"" + n(x2 + ox - sx) +
           "\" y2=\"" + n(y2 + oy - sy) + "\" " + style + "><title>" + esc(title) + "</title></line>";
  };
  // A link idle during some ops that carried bytes at other times is drawn as the arrow it is
  // (its tooltip says when it was idle); only links that never carried a byte are dashed grey,
  // as the legend says (a dashed line under an arrow read as a blue dashed arrow).
  std::map<std::pair<int, int>, std::string> idle_during;
  for (const auto& l : a.idle_links) {
    std::string& where = idle_during[{l.src, l.dst}];
    where += (where.empty() ? "" : ", ") + l.where;
  }
  std::set<std::pair<int, int>> carried;
  for (const auto& l : a.links) carried.insert({l.src, l.dst});
  for (const auto& [key, where] : idle_during) {
    if (carried.count(key)) continue;
    edge(key.first, key.second,
         "stroke=\"#9e9e9e\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"",
         std::to_string(key.first) + "→" + std::to_string(key.second) + " idle during " + where);
  }
  for (const auto& l : a.links) {
    auto idle = idle_during.find({l.src, l.dst});
    edge(l.src, l.dst,
         "stroke=\"#1f77b4\" marker-end=\"url(#arr)\" stroke-width=\"" +
             n(1 + 5 * static_cast<double>(l.bytes) / static_cast<double>(peak)) + "\"",
         std::to_string(l.src) + "→" + std::to_string(l.dst) + ": " + format::bytes(l.bytes) +
             (idle == idle_during.end() ? "" : "; idle during " + idle->second));
  }
  for (int r = 0; r < ranks; ++r) {
    auto [x, y] = pos(r);
    bool cut = std::find(a.cut_off_ranks.begin(), a.cut_off_ranks.end(), r) != a.cut_off_ranks.end();
    bool missing = std::find(a.missing_ranks.begin(), a.missing_ranks.end(), r) != a.missing_ranks.end();
    out += "<circle cx=\"" + n(x) + "\" cy=\"" + n(y) + "\" r=\"18\" fill=\"" +
           std::string(missing ? "#eeeeee" : cut ? "#ffcdd2" : "#e3f2fd") + "\" stroke=\"" +
           std::string(cut ? "#b00020" : "#1f77b4") + "\" stroke-width=\"2\"/><text x=\"" + n(x - 4) +
           "\" y=\"" + n(y + 4) + "\">" + std::to_string(r) + "</text>";
  }
  double ly = H - 16;
  out += "<line x1=\"10\" y1=\"" + n(ly - 4) + "\" x2=\"40\" y2=\"" + n(ly - 4) +
         "\" stroke=\"#1f77b4\" stroke-width=\"3\"/><text x=\"46\" y=\"" + n(ly) +
         "\">link with traffic (width = bytes)</text><line x1=\"250\" y1=\"" + n(ly - 4) +
         "\" x2=\"280\" y2=\"" + n(ly - 4) +
         "\" stroke=\"#9e9e9e\" stroke-width=\"1.5\" stroke-dasharray=\"5,4\"/><text x=\"286\" y=\"" + n(ly) +
         "\">idle link</text><circle cx=\"360\" cy=\"" + n(ly - 4) +
         "\" r=\"6\" fill=\"#ffcdd2\" stroke=\"#b00020\"/><text x=\"370\" y=\"" + n(ly) + "\">cut-off rank</text>";
  return out + "</svg>";
}

// Bus bandwidth of each collective against its size (log x), one color per
// library, with the alpha-beta model's prediction as a line per library.
std::string busbwChart(const Analysis& a) {
  if (a.collectives.empty()) return "";
  std::vector<std::string> libs;
  double xmin = 1e300, xmax = 0, ymax = 0, model_max = 0;
  for (const auto& c : a.collectives) {
    if (c.bytes <= 0) continue;
    if (std::find(libs.begin(), libs.end(), c.library) == libs.end()) libs.push_back(c.library);
    xmin = std::min(xmin, static_cast<double>(c.bytes));
    xmax = std::max(xmax, static_cast<double>(c.bytes));
    ymax = std::max(ymax, c.busbw_gbps);
    if (c.expected_ns > 0)
      model_max = std::max(model_max, static_cast<double>(c.bytes) / c.expected_ns * analyzer::busbwFactor(c.op, c.ranks));
  }
  // The scale follows the measured dots; a model far above them (a fast loopback) is cut at 4x
  // the highest dot, and the chart says so, rather than squashing every dot onto the axis.
  const double measured_max = ymax;
  const bool model_cut = measured_max > 0 && model_max > 4 * measured_max;
  ymax = std::max(ymax, model_cut ? 4 * measured_max : model_max);
  if (libs.empty()) return "";
  double lx0 = std::floor(std::log2(xmin)), lx1 = std::ceil(std::log2(xmax));
  if (lx1 <= lx0) lx1 = lx0 + 1;
  // Even ticks: a round step (1, 2 or 5 x 10^k) and the axis top a whole number of steps.
  double step = niceStep(ymax > 0 ? ymax / 4 : 0.25);
  int ticks = std::max(1, static_cast<int>(std::ceil(ymax / step - 1e-9)));
  ymax = step * ticks;
  double W = 1100, H = 360, left = 70, right = 220, top = 24, bottom = 40;
  double pw = W - left - right, ph = H - top - bottom;
  auto X = [&](double bytes) { return left + pw * (std::log2(bytes) - lx0) / (lx1 - lx0); };
  auto Y = [&](double g) { return top + ph * (1 - g / ymax); };
  std::string out = "<svg width=\"" + n(W) + "\" height=\"" + n(H) +
                    "\" class=\"busbw\"><text x=\"8\" y=\"16\">bus bandwidth vs message size; dots: measured, lines: model" +
                    (model_cut ? esc("; the model reaches " + formatGbps(model_max) +
                                     ", cut at the top") : std::string()) + "</text>";
  out += "<line x1=\"" + n(left) + "\" y1=\"" + n(top + ph) + "\" x2=\"" + n(left + pw) + "\" y2=\"" + n(top + ph) + "\" stroke=\"#444\"/>";
  out += "<line x1=\"" + n(left) + "\" y1=\"" + n(top) + "\" x2=\"" + n(left) + "\" y2=\"" + n(top + ph) + "\" stroke=\"#444\"/>";
  // A label every `every` powers of two, so that labels keep ~48 px apart (no overlap).
  const int every = std::max(1, static_cast<int>(std::ceil(48.0 / (pw / (lx1 - lx0)))));
  for (double e = lx0; e <= lx1; e += 1) {
    double x = X(std::exp2(e));
    out += "<line x1=\"" + n(x) + "\" y1=\"" + n(top + ph) + "\" x2=\"" + n(x) + "\" y2=\"" +
           n(top + ph + 4) + "\" stroke=\"#444\"/>";
    if (static_cast<int64_t>(e - lx0) % every != 0) continue;
    out += "<text x=\"" + n(x - 14) + "\" y=\"" + n(top + ph + 16) + "\">" +
           esc(format::bytes(static_cast<int64_t>(std::exp2(e)))) + "</text>";
  }
  for (int k = 0; k <= ticks; ++k) {
    double g = step * k;
    out += "<text x=\"8\" y=\"" + n(Y(g) + 4) + "\">" + esc(formatGbps(g)) + "</text><line x1=\"" + n(left) +
           "\" y1=\"" + n(Y(g)) + "\" x2=\"" + n(left + pw) + "\" y2=\"" + n(Y(g)) + "\" stroke=\"#eee\"/>";
  }
  for (size_t i = 0; i < libs.size(); ++i) {
    std::map<int64_t, double> model;  // size -> modelled busbw
    for (const auto& c : a.collectives) {
      if (c.library != libs[i] || c.bytes <= 0) continue;
      out += "<circle cx=\"" + n(X(static_cast<double>(c.bytes))) + "\" cy=\"" + n(Y(c.busbw_gbps)) +
             "\" r=\"3.5\" fill=\"" + svg::series(i) + "\" fill-opacity=\"0.7\"/>";
      if (c.expected_ns > 0)
        model[c.bytes] = static_cast<double>(c.bytes) / c.expected_ns * analyzer::busbwFactor(c.op, c.ranks);
    }
    if (model.size() >= 1) {
      std::string pts;
      for (const auto& [b, g] : model) {
        pts += n(X(static_cast<double>(b))) + "," + n(Y(std::min(g, ymax))) + " ";
      }
      out += "<polyline points=\"" + pts + "\" fill=\"none\" stroke=\"" + svg::series(i) +
             "\" stroke-width=\"2\" stroke-dasharray=\"6,3\"/>";
    }
    double ly = top + 16 + 20.0 * static_cast<double>(i);
    out += legendItem(left + pw + 20, ly, svg::series(i), libs[i] + " (dots)");
  }
  out += "<line x1=\"" + n(left + pw + 20) + "\" y1=\"" + n(top + 20 * libs.size() + 12) + "\" x2=\"" +
         n(left + pw + 50) + "\" y2=\"" + n(top + 20 * libs.size() + 12) +
         "\" stroke=\"#444\" stroke-dasharray=\"6,3\" stroke-width=\"2\"/><text x=\"" + n(left + pw + 56) +
         "\" y=\"" + n(top + 20 * libs.size() + 16) + "\">model (" + esc(a.model_source.empty() ? "none" : a.model_source) + ")</text>";
  return out + "</svg>";
}

}  // namespace

std::string formatReportHtml(const Analysis& a, const ReportContext& ctx) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ringside report: " +
                    esc(ctx.trace) + "</title><style>" + kCss + "</style></head><body>\n";
  out += "<h1>ringside report: " + esc(ctx.trace) + "</h1><p>" + esc(reportHeadline(a)) + "</p>\n";
  out += clockSection(a);
  out += "<h2>Findings</h2><ul>";
  if (a.findings.empty()) out += "<li>No findings: nothing stood out.</li>";
  for (const auto& f : a.findings)
    out += "<li><span class=\"" + esc(f.severity) + "\">" + esc(f.severity) + "</span> " + esc(f.message) +
           "<br><span class=\"ev\">" + esc(f.rule) + ": " + esc(f.evidence) + "</span>" +
           (f.action.empty() ? "" : "<br><b>Try:</b> " + esc(f.action)) + "</li>";
  for (const auto& w : a.warnings) out += "<li><span class=\"info\">note</span> " + esc(w) + "</li>";
  out += "</ul>\n<h2>Phase timeline (representative collectives, one lane per rank)</h2>" + phaseTimeline(a);
  out += "\n<h2>Bus bandwidth vs size</h2>" + busbwChart(a);
  out += "\n<h2>Link utilization over time</h2>" + linkHeatmap(a);
  out += "\n<h2>Traffic matrix and topology</h2>"
         "<div style=\"display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start\">" +
         trafficMatrix(a) + hostTrafficMatrix(a) + topologyGraph(a) + "</div>\n";
  for (const ReportTable& t : humanTables(a, 50)) out += htmlTable(t) + "\n";
  out += "<p class=\"note\">Generated by ringside report. Self-contained: no scripts, fonts or links.</p></body></html>\n";
  return out;
}

}  // namespace ringside::cli
