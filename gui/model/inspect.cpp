#include "ringside/gui/inspect.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view hay, const std::string& needle_lower) {
  return lower(hay).find(needle_lower) != std::string::npos;
}

int64_t bucketLo(int64_t bytes) {  // the analyzer's power-of-two size buckets
  if (bytes <= 0) return 0;
  int64_t lo = 1;
  while (lo <= bytes / 2) lo *= 2;
  return lo;
}

bool parseInt(std::string_view s, int* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Trailing integer after `prefix` in `text` ("rank 3 is a straggler" -> 3).
int numberAfter(const std::string& text, const std::string& prefix) {
  size_t at = text.find(prefix);
  if (at == std::string::npos) return -1;
  at += prefix.size();
  int v = 0;
  size_t end = at;
  while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
  if (end == at || !parseInt(std::string_view(text).substr(at, end - at), &v)) return -1;
  return v;
}

}  // namespace

// ---- colours ---------------------------------------------------------------------------------

RgbF hsvToRgb(float h, float s, float v) {
  h = h - std::floor(h);
  float i = std::floor(h * 6.0f);
  float f = h * 6.0f - i;
  float p = v * (1 - s), q = v * (1 - s * f), t = v * (1 - s * (1 - f));
  switch (static_cast<int>(i) % 6) {
    case 0: return {v, t, p};
    case 1: return {q, v, p};
    case 2: return {p, v, t};
    case 3: return {p, q, v};
    case 4: return {t, p, v};
    default: return {v, p, q};
  }
}

RgbF nameColor(std::string_view name, bool dark_theme) {
  static const std::pair<std::string_view, float> kKnown[] = {
      {"allreduce", 0.58f},      {"broadcast", 0.08f}, {"allgather", 0.30f},  {"allgatherv", 0.36f},
      {"reduce", 0.75f},         {"gather", 0.45f},    {"scatter", 0.15f},    {"alltoall", 0.90f},
      {"alltoallv", 0.95f},      {"barrier", 0.0f},    {"reduce_scatter", 0.52f},
      {"reduce-scatter", 0.50f}, {"all-gather", 0.27f}, {"send", 0.65f},      {"recv", 0.70f},
  };
  float hue = -1;
  for (const auto& [known, h] : kKnown) {
    if (known == name) hue = h;
  }
  if (hue < 0) {  // FNV-1a: stable across runs and machines
    uint32_t x = 2166136261u;
    for (char c : name) x = (x ^ static_cast<uint8_t>(c)) * 16777619u;
    hue = static_cast<float>(x % 1000) / 1000.0f;
  }
  return dark_theme ? hsvToRgb(hue, 0.45f, 0.80f) : hsvToRgb(hue, 0.50f, 0.88f);
}

bool speedupColor(double speedup, RgbF* out) {
  if (!(speedup > 0)) return false;
  if (speedup >= 1.5) *out = {0.10f, 0.55f, 0.20f};
  else if (speedup >= 1.05) *out = {0.25f, 0.45f, 0.25f};
  else if (speedup <= 1 / 1.5) *out = {0.65f, 0.12f, 0.12f};
  else if (speedup <= 1 / 1.05) *out = {0.50f, 0.25f, 0.25f};
  else return false;
  return true;
}

bool diffRowColor(const analyzer::DiffRow& row, RgbF* out) {
  if (!row.note.empty()) return false;
  return speedupColor(row.speedup, out);
}

std::string diffRowTag(const analyzer::DiffRow& row) {
  if (row.note.empty()) return "";
  if (row.count_a < analyzer::kMinDiffSamples || row.count_b < analyzer::kMinDiffSamples) {
    return "n<" + std::to_string(analyzer::kMinDiffSamples);
  }
  return "noise";
}

// ---- one collective --------------------------------------------------------------------------

CollectiveDetails collectiveDetails(const TimelineModel& model, int collective) {
  CollectiveDetails d;
  const auto& a = model.analysis;
  if (collective < 0 || static_cast<size_t>(collective) >= a.collectives.size()) return d;
  d.index = collective;
  d.instance = &a.collectives[static_cast<size_t>(collective)];
  for (const TimelineModel::CallRef& ref : model.callsOfCollective(collective)) {  // builds no lane
    d.ranks.push_back({model.lanes[static_cast<size_t>(ref.lane)].rank, ref.event.start_ns, ref.event.end_ns,
                       ref.event.failed});
  }
  std::sort(d.ranks.begin(), d.ranks.end(),
            [](const RankTiming& x, const RankTiming& y) { return x.rank < y.rank; });
  d.phases = model.phasesOf(collective);
  if (model.links_begin.size() == a.collectives.size() + 1) {
    for (int64_t i = model.links_begin[static_cast<size_t>(collective)];
         i < model.links_begin[static_cast<size_t>(collective) + 1]; ++i) {
      d.links.push_back(model.collective_links[static_cast<size_t>(i)]);
    }
  }
  // busbw scales as 1 / time, so the model's busbw is measured busbw x duration / expected.
  if (d.instance->expected_ns > 0 && d.instance->duration_ns > 0 && d.instance->busbw_gbps > 0) {
    d.expected_busbw_gbps = d.instance->busbw_gbps * static_cast<double>(d.instance->duration_ns) /
                            d.instance->expected_ns;
  }
  return d;
}

// ---- a time range ----------------------------------------------------------------------------

DurationStats durationStats(std::vector<int64_t> v) {
  DurationStats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    size_t k = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::min(v.size(), std::max<size_t>(k, 1)) - 1];
  };
  s.count = static_cast<int64_t>(v.size());
  for (int64_t x : v) s.sum_ns += x;
  s.min_ns = v.front();
  s.max_ns = v.back();
  s.p50_ns = pct(0.5);
  s.p99_ns = pct(0.99);
  s.mean_ns = static_cast<double>(s.sum_ns) / static_cast<double>(v.size());
  return s;
}

RangeStats rangeStats(const TimelineModel& model, int64_t t0, int64_t t1) {
  RangeStats r;
  r.t0 = t0;
  r.t1 = t1;
  const auto& cs = model.analysis.collectives;
  // Instances are ordered by first start: binary search the range.
  auto lo = std::lower_bound(cs.begin(), cs.end(), t0,
                             [](const analyzer::CollectiveInstance& c, int64_t t) { return c.first_start_ns < t; });
  std::vector<int64_t> all;
  std::map<std::string, std::pair<int64_t, std::vector<int64_t>>> by_op;
  for (auto it = lo; it != cs.end() && it->first_start_ns < t1; ++it) {
    all.push_back(it->duration_ns);
    auto& op = by_op[it->op];
    op.first += it->bytes;
    op.second.push_back(it->duration_ns);
  }
  r.all = durationStats(std::move(all));
  for (auto& [name, v] : by_op) r.ops.push_back({name, v.first, durationStats(std::move(v.second))});
  for (size_t li = 0; li < model.lanes.size(); ++li) {
    const Lane& lane = model.lanes[li];
    if (lane.kind == LaneKind::kRank && (!lane.built || !lane.rows.empty())) {
      RangeRankRow row;
      row.rank = lane.rank;
      // Time inside calls is a union (docs/metrics.md): concurrent calls (DDP's buckets)
      // overlap, and a sum would exceed the range. The calls in range, by start; from the lane's
      // sources, so a folded lane is not built for it.
      std::vector<std::pair<int64_t, int64_t>> spans;
      for (const TimelineEvent& e : model.callsOf(li)) {
        if (e.start_ns >= t1) continue;
        if (e.end_ns <= t0 && e.end_ns != e.start_ns) continue;
        if (e.start_ns >= t0) ++row.calls;
        spans.emplace_back(e.start_ns, e.end_ns);
      }
      if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
      int64_t covered_to = t0;
      for (const auto& [start, end] : spans) {
        int64_t from = std::max(start, covered_to), to = std::min(end, t1);
        if (to > from) {
          row.busy_ns += to - from;
          covered_to = to;
        }
      }
      r.ranks.push_back(row);
    } else if (lane.kind == LaneKind::kLink) {
      const Counter& c = lane.counter;
      for (size_t i = 0; i < c.values.size(); ++i) {
        int64_t b0 = c.start_ns + static_cast<int64_t>(i) * c.bin_ns, b1 = b0 + c.bin_ns;
        int64_t overlap = std::min(b1, t1) - std::max(b0, t0);
        if (overlap > 0) r.link_bytes += c.values[i] * static_cast<double>(overlap) * 1e-9;
      }
    }
  }
  return r;
}

// ---- search ----------------------------------------------------------------------------------

std::vector<int> searchCollectives(const TimelineModel& model, const std::string& query,
                                   std::string* error) {
  const auto& cs = model.analysis.collectives;
  std::vector<char> keep(cs.size(), 1);
  std::vector<std::string> terms;
  {
    std::string t;
    for (char c : query) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!t.empty()) terms.push_back(lower(t));
        t.clear();
      } else {
        t += c;
      }
    }
    if (!t.empty()) terms.push_back(lower(t));
  }
  if (terms.empty()) return {};
  for (const std::string& term : terms) {
    auto value = [&](size_t skip) { return std::string_view(term).substr(skip); };
    if (term.starts_with("op:") || term.starts_with("lib:") || term.starts_with("comm:")) {
      size_t colon = term.find(':');
      std::string v(value(colon + 1));
      for (size_t i = 0; i < cs.size(); ++i) {
        const std::string& field = term[0] == 'o' ? cs[i].op : term[0] == 'l' ? cs[i].library : cs[i].comm;
        if (lower(field) != v) keep[i] = 0;
      }
    } else if (term.starts_with("rank:") || term.starts_with("straggler:")) {
      int rank = -1;
      if (!parseInt(value(term.find(':') + 1), &rank)) {
        *error = "'" + term + "': expected a rank number";
        return {};
      }
      std::vector<char> on(cs.size(), 0);
      if (term[0] == 's') {
        for (size_t i = 0; i < cs.size(); ++i) on[i] = cs[i].straggler_rank == rank;
      } else {
        for (size_t l = 0; l < model.lanes.size(); ++l) {
          const Lane& lane = model.lanes[l];
          if (lane.kind != LaneKind::kRank || lane.rank != rank) continue;
          model.buildLane(l);
          for (size_t sub = 0; sub < lane.rows.size() && sub < static_cast<size_t>(lane.call_rows); ++sub) {
            for (const TimelineEvent& e : lane.rows[sub].events) {
              if (e.collective >= 0) on[static_cast<size_t>(e.collective)] = 1;
            }
          }
        }
      }
      for (size_t i = 0; i < cs.size(); ++i) keep[i] = static_cast<char>(keep[i] && on[i]);
    } else if (term.starts_with("size")) {
      std::string_view rest = value(4);
      std::string cmp;
      while (!rest.empty() && (rest[0] == ':' || rest[0] == '<' || rest[0] == '>' || rest[0] == '=')) {
        cmp += rest[0];
        rest.remove_prefix(1);
      }
      int64_t bytes = 0;
      if (cmp.empty() || !format::parseSize(rest, &bytes) ||
          (cmp != ":" && cmp != "=" && cmp != "<" && cmp != ">" && cmp != "<=" && cmp != ">=")) {
        *error = "'" + term + "': expected size:4K, size>1M, size<=64K, ...";
        return {};
      }
      for (size_t i = 0; i < cs.size(); ++i) {
        int64_t b = cs[i].bytes;
        bool m = cmp == ":" || cmp == "=" ? bucketLo(b) == bucketLo(bytes)
                 : cmp == "<"             ? b < bytes
                 : cmp == ">"             ? b > bytes
                 : cmp == "<="            ? b <= bytes
                                          : b >= bytes;
        if (!m) keep[i] = 0;
      }
    } else if (term == "failed") {
      for (size_t i = 0; i < cs.size(); ++i) keep[i] = static_cast<char>(keep[i] && cs[i].failed);
    } else {
      for (size_t i = 0; i < cs.size(); ++i) {
        const auto& c = cs[i];
        if (!contains(c.op, term) && !contains(c.library, term) && !contains(c.algorithm, term) &&
            !contains(c.comm, term)) {
          keep[i] = 0;
        }
      }
    }
  }
  std::vector<int> out;
  for (size_t i = 0; i < cs.size(); ++i) {
    if (keep[i]) out.push_back(static_cast<int>(i));
  }
  return out;
}

void SearchCursor::set(std::vector<int> matches) {
  matches_ = std::move(matches);
  pos_ = -1;
}

int SearchCursor::current() const {
  return pos_ < 0 || pos_ >= static_cast<int>(matches_.size()) ? -1 : matches_[static_cast<size_t>(pos_)];
}

int SearchCursor::startAt(const TimelineModel& model, int64_t t) {
  if (matches_.empty()) return pos_ = -1;
  const auto& cs = model.analysis.collectives;
  pos_ = 0;
  for (size_t i = 0; i < matches_.size(); ++i) {
    if (cs[static_cast<size_t>(matches_[i])].first_start_ns >= t) {
      pos_ = static_cast<int>(i);
      break;
    }
  }
  return current();
}

int SearchCursor::next() {
  if (matches_.empty()) return -1;
  pos_ = pos_ < 0 ? 0 : (pos_ + 1) % static_cast<int>(matches_.size());
  return current();
}

int SearchCursor::prev() {
  if (matches_.empty()) return -1;
  const int n = static_cast<int>(matches_.size());
  pos_ = pos_ <= 0 ? n - 1 : pos_ - 1;
  return current();
}

// ---- findings --------------------------------------------------------------------------------

FindingTarget findingTarget(const analyzer::Analysis& a, const analyzer::Finding& f) {
  FindingTarget t;
  const auto& cs = a.collectives;
  auto worst = [&](auto score) {  // the instance with the highest score > 0
    double best = 0;
    for (size_t i = 0; i < cs.size(); ++i) {
      double s = score(cs[i]);
      if (s > best) {
        best = s;
        t.collective = static_cast<int>(i);
      }
    }
  };
  if (f.rule == "straggler" || f.rule == "late-ranks") {
    t.rank = numberAfter(f.message, "rank ");
    worst([&](const analyzer::CollectiveInstance& c) {
      return c.straggler_rank == t.rank ? static_cast<double>(c.arrival_skew_ns) : 0.0;
    });
  } else if (f.rule == "slow-link") {
    size_t at = f.message.find("link ");
    if (at != std::string::npos) {
      t.src = numberAfter(f.message, "link ");
      size_t arrow = f.message.find("->", at);
      if (arrow != std::string::npos) t.dst = numberAfter(f.message.substr(arrow), "->");
    }
  } else if (f.rule == "low-busbw") {
    // "<op> <library>: bus bandwidth at ..."
    std::string head = f.message.substr(0, f.message.find(':'));
    std::string op = head.substr(0, head.find(' '));
    std::string lib = head.find(' ') == std::string::npos ? "" : head.substr(head.find(' ') + 1);
    worst([&](const analyzer::CollectiveInstance& c) {
      if (c.op != op || c.library != lib || c.expected_ns <= 0 || c.duration_ns <= 0) return 0.0;
      return static_cast<double>(c.duration_ns) / c.expected_ns;
    });
  } else if (f.rule == "failed-collectives") {
    for (size_t i = 0; i < cs.size() && t.collective < 0; ++i) {
      if (cs[i].failed) t.collective = static_cast<int>(i);
    }
  } else if (f.rule == "cut-off" || f.rule == "cut-off-ranks" || f.rule == "missing-ranks" ||
             f.rule == "interposition-inactive") {
    t.rank = numberAfter(f.message, "rank(s) ");
    if (t.rank < 0) t.rank = numberAfter(f.message, "rank ");
  } else {
    t.rank = numberAfter(f.message, "rank ");
  }
  return t;
}

TimeRange rangeAround(const analyzer::CollectiveInstance& c, double margin) {
  int64_t t0 = c.first_start_ns, t1 = std::max(c.last_end_ns, c.first_start_ns + 1);
  int64_t pad = static_cast<int64_t>(static_cast<double>(t1 - t0) * margin) + 1;
  return {t0 - pad, t1 + pad};
}

}  // namespace ringside::gui
