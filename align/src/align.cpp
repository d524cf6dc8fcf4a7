// align/src/align.cpp — fits the clock model: domains, wall-clock priors, bounds, per-domain fits.
#include "ringside/align/align.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <new>

#include "internal.h"
#include "joint.h"
#include "ringside/format/units.h"

namespace ringside::align {
namespace {

using detail::Domains;
using detail::Evidence;
using detail::Fit;
using detail::Mapping;
using detail::Point;

constexpr int kRefineRounds = 4;
constexpr int kJointRounds = 3;

// The wall clocks' estimate of f for domain `d` against the reference: per anchor of d, its
// monotonic-to-wall offset minus the reference's at the nearest wall time; the median of those.
double wallPrior(const detail::Domain& d, const detail::Domain& ref) {
  if (d.wall.empty() || ref.wall.empty()) return 0;
  std::vector<std::pair<int64_t, int64_t>> ref_by_unix;  // (unix, offset)
  for (const auto& [t, w] : ref.wall) ref_by_unix.emplace_back(t + w, w);
  std::sort(ref_by_unix.begin(), ref_by_unix.end());
  std::vector<double> diffs;
  for (const auto& [t, w] : d.wall) {
    const int64_t unix_ns = t + w;
    auto it = std::lower_bound(ref_by_unix.begin(), ref_by_unix.end(),
                               std::make_pair(unix_ns, INT64_MIN));
    if (it == ref_by_unix.end()) --it;
    if (it != ref_by_unix.begin() && std::llabs((it - 1)->first - unix_ns) < std::llabs(it->first - unix_ns)) --it;
    diffs.push_back(static_cast<double>(w) - static_cast<double>(it->second));
  }
  std::nth_element(diffs.begin(), diffs.begin() + static_cast<long>(diffs.size() / 2), diffs.end());
  return diffs[diffs.size() / 2];
}

struct Points {
  std::vector<Point> lower, upper;
};

// Every domain's bounds given the mappings of the `usable` others (Jacobi: all from `f`). A bound
// against domain A is loosened by A's own uncertainty `u[A]` (0 for the reference): the truth then
// meets every bound, so a domain known only roughly never pulls a well-known one off.
std::vector<Points> boundsFor(const Evidence& ev, const std::vector<Mapping>& f,
                              const std::vector<char>& usable, const std::vector<double>& u) {
  std::vector<Points> out(f.size());
  auto aligned = [&](int32_t d, int64_t t) { return static_cast<double>(t) + f[static_cast<size_t>(d)].at(t); };
  auto err = [&](int32_t d) { return u[static_cast<size_t>(d)]; };
  for (int64_t i = 0; i < ev.instances(); ++i) {
    const detail::Extremes x = detail::extremesOf(
        ev, i, usable,
        [&](const detail::Mark& m) { return aligned(m.domain, m.enter) - err(m.domain); },
        [&](const detail::Mark& m) { return aligned(m.domain, m.exit) + err(m.domain); });
    for (uint32_t k = ev.begin[static_cast<size_t>(i)]; k < ev.begin[static_cast<size_t>(i) + 1]; ++k) {
      const detail::Mark& m = ev.marks[k];
      Points& p = out[static_cast<size_t>(m.domain)];
      const detail::Extremes::Best& e_other = x.enterOtherThan(k);
      const detail::Extremes::Best& x_other = x.exitOtherThan(k);
      // aligned(exit of m) >= latest other enter; aligned(enter of m) <= earliest other exit.
      if (m.exit != INT64_MAX && e_other.mark >= 0) {
        p.lower.push_back({m.exit, e_other.value - static_cast<double>(m.exit)});
      }
      if (m.enter != INT64_MIN && x_other.mark >= 0) {
        p.upper.push_back({m.enter, x_other.value - static_cast<double>(m.enter)});
      }
    }
  }
  for (const detail::Message& m : ev.representatives) {
    if (usable[static_cast<size_t>(m.from)]) {
      out[static_cast<size_t>(m.to)].lower.push_back(
          {m.received, aligned(m.from, m.sent) - err(m.from) - static_cast<double>(m.received)});
    }
    if (usable[static_cast<size_t>(m.to)]) {
      out[static_cast<size_t>(m.from)].upper.push_back(
          {m.sent, aligned(m.to, m.received) + err(m.to) - static_cast<double>(m.sent)});
    }
  }
  return out;
}

int64_t roundNs(double v) {
  if (!(v < 9e18)) return INT64_MAX;
  if (!(v > -9e18)) return INT64_MIN;
  return std::llround(v);
}

// The stored model of the fitted mappings.
void buildModel(const Domains& domains, const std::vector<Mapping>& f,
                const std::vector<Fit>& fits, const std::vector<std::string>& methods,
                const std::vector<int64_t>& bounds, const AlignOptions& options,
                storage::ClockModel* model) {
  model->domains.clear();
  model->segments.clear();
  model->rank_domain.clear();
  for (size_t d = 0; d < domains.list.size(); ++d) {
    const detail::Domain& src = domains.list[d];
    storage::ClockDomain out;
    out.id = static_cast<int32_t>(d);
    out.host = src.host;
    out.boot_id = src.boot_id;
    out.ranks = src.ranks;
    out.method = methods[d];
    out.anchors = static_cast<int64_t>(src.wall.size());
    out.bounds = bounds[d];
    out.violated = fits[d].violated;
    const int64_t first = src.wall.empty() ? 0 : src.wall.front().first;
    out.offset_ns = d == 0 ? 0 : roundNs(f[d].at(first));
    out.drift_ppm = f[d].pieces.front().rate * 1e6;
    out.segments = static_cast<int32_t>(f[d].pieces.size());
    if (methods[d] == "evidence") {
      out.uncertainty_ns = fits[d].two_sided ? roundNs(std::ceil(std::fabs(fits[d].slack)))
                                             : options.wall_clock_error_ns;
    } else if (methods[d] == "wall-clock") {
      out.uncertainty_ns = options.wall_clock_error_ns;
    }
    for (int32_t r : src.ranks) model->rank_domain.emplace_back(r, out.id);
    if (d > 0) {
      const auto& pieces = f[d].pieces;
      for (size_t i = 0; i < pieces.size(); ++i) {
        storage::ClockSegment s;
        s.domain = out.id;
        s.lo_ns = i == 0 ? INT64_MIN : pieces[i].lo;
        s.hi_ns = i + 1 < pieces.size() ? pieces[i + 1].lo : INT64_MAX;
        s.ref_ns = pieces[i].ref;
        s.offset_ns = roundNs(pieces[i].offset);
        s.rate = pieces[i].rate;
        model->segments.push_back(s);
      }
    }
    model->bounds += out.bounds;
    model->violated += out.violated;
    model->domains.push_back(std::move(out));
  }
  std::sort(model->rank_domain.begin(), model->rank_domain.end());
}

// The time line's origin: a domain whose clock reads less than the reference's at the same
// instant maps its first rows below zero (seen: a generated 128-host trace had 41,295 rows
// there, which readers skip as times no trace can hold). Every domain, the reference included,
// is then moved later by the same amount, so that each domain's earliest time (its ranks'
// starts; every row comes after its rank's start) maps at or after zero. Differences between
// aligned times stay as fitted; a trace whose times are all placed already is unchanged.
void shiftOrigin(const Domains& domains, storage::ClockModel* model) {
  if (domains.list.size() < 2) return;
  const storage::ClockMap map(*model);
  int64_t lowest = 0;
  for (const detail::Domain& d : domains.list) {
    if (d.wall.empty() || d.ranks.empty()) continue;
    lowest = std::min(lowest, map.map(d.ranks.front(), std::max<int64_t>(0, d.wall.front().first)));
  }
  // Not for a clock placed absurdly far (a damaged rank row): offsets must not overflow.
  constexpr int64_t kMaxShiftNs = int64_t{1} << 61;
  if (lowest >= 0 || lowest < -kMaxShiftNs) return;
  const int64_t shift = -lowest;
  auto add = [shift](int64_t* v) { *v = *v > INT64_MAX - shift ? INT64_MAX : *v + shift; };
  for (storage::ClockSegment& seg : model->segments) add(&seg.offset_ns);
  for (storage::ClockDomain& dom : model->domains) add(&dom.offset_ns);
  storage::ClockSegment ref;  // the reference, identity until now
  ref.domain = 0;
  ref.offset_ns = shift;
  model->segments.push_back(ref);
}

// Messages that still arrive before they were sent once mapped as readers will map them.
void countMessages(const Domains& domains, const Evidence& ev, storage::ClockModel* model) {
  const storage::ClockMap map(*model);
  model->messages_checked = static_cast<int64_t>(ev.messages.size());
  model->messages_before_sent = 0;
  for (const detail::Message& m : ev.messages) {
    const int32_t from = domains.list[static_cast<size_t>(m.from)].ranks.front();
    const int32_t to = domains.list[static_cast<size_t>(m.to)].ranks.front();
    if (map.map(to, m.received) < map.map(from, m.sent)) ++model->messages_before_sent;
  }
}

}  // namespace

bool fitClockModel(storage::TraceReader& raw, const AlignOptions& options,
                   storage::ClockModel* model, AlignStats* stats, std::string* error,
                   InputSides* input_sides) {
  try {
    const auto started = std::chrono::steady_clock::now();
    *model = storage::ClockModel{};
    Domains domains;
    if (!detail::findDomains(raw, &domains, error)) return false;
    const size_t n = domains.list.size();
    Evidence ev;
    auto since = [](std::chrono::steady_clock::time_point t) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
    };
    auto phase = std::chrono::steady_clock::now();
    if (n > 1 && options.use_calls && !detail::gatherCalls(raw, domains, &ev, error)) return false;
    const double read_calls = since(phase);
    phase = std::chrono::steady_clock::now();
    bool from_inputs = false;
    std::string not_from_inputs = "no inputs read";
    if (n > 1 && options.use_messages) {
      detail::SideRuns sides;
      from_inputs = input_sides != nullptr &&
                    detail::takeInputSides(*input_sides, domains, &sides, &not_from_inputs);
      if (from_inputs) {
        detail::pairSides(&sides, domains, &ev);
      } else if (!detail::gatherMessages(raw, domains, &ev, error)) {
        return false;
      }
    }
    const double read_messages = since(phase);
    std::vector<Mapping> f(n);
    std::vector<Fit> fits(n);
    std::vector<std::string> methods(n, "wall-clock");
    std::vector<int64_t> bounds(n, 0);
    std::vector<double> prior(n, 0);
    if (n > 0) methods[0] = "reference";
    for (size_t d = 1; d < n; ++d) {
      prior[d] = wallPrior(domains.list[d], domains.list[0]);
      f[d].pieces.front().offset = prior[d];
    }
    // Place domains outward from the reference: each wave fits the domains that have bounds on
    // both sides against domains already placed.
    std::vector<char> placed(n, 0);
    if (n > 0) placed[0] = 1;
    // How far each placed domain's mapping may be from the truth: twice the half-width of its
    // window (the line's slope is free too); 0 for the reference.
    std::vector<double> u(n, 0);
    auto spread = [](const Fit& fit) { return 2 * std::max(0.0, fit.slack); };
    for (bool progress = true; progress;) {
      progress = false;
      const std::vector<Points> pts = boundsFor(ev, f, placed, u);
      std::vector<size_t> now;
      for (size_t d = 1; d < n; ++d) {
        if (placed[d] || pts[d].lower.empty() || pts[d].upper.empty()) continue;
        fits[d] = detail::fitMapping(pts[d].lower, pts[d].upper, prior[d]);
        f[d] = fits[d].map;
        methods[d] = "evidence";
        now.push_back(d);
      }
      for (size_t d : now) {
        placed[d] = 1;
        u[d] = spread(fits[d]);
      }
      progress = !now.empty();
    }
    // Refine: every placed domain against all the others, from the previous round's mappings,
    // with bounds loosened by the others' uncertainty (this settles each domain's drift).
    for (int round = 0; round < kRefineRounds && n > 2; ++round) {
      const std::vector<Points> pts = boundsFor(ev, f, placed, u);
      std::vector<Mapping> next = f;
      std::vector<double> next_u = u;
      for (size_t d = 1; d < n; ++d) {
        if (!placed[d]) continue;
        fits[d] = detail::fitMapping(pts[d].lower, pts[d].upper, prior[d]);
        next[d] = fits[d].map;
        next_u[d] = spread(fits[d]);
      }
      f = std::move(next);
      u = std::move(next_u);
    }
    // Then all bounds between placed domains at once (chains through several domains, as a
    // ring's one-way messages make, tighten every domain on them).
    // The last round's links (pairs bounded both ways, as finally placed) make the tree of
    // domains; none when a round failed (then two hosts are bounded by their sum, as before).
    std::vector<detail::Link> links;
    for (int round = 0; round < kJointRounds && n > 1; ++round) {
      std::vector<double> half;
      const bool last = round + 1 == kJointRounds;
      if (!detail::jointOffsets(ev, &f, placed, &half, last ? &links : nullptr)) break;
      for (size_t d = 1; d < n; ++d) {
        if (placed[d] && half[d] >= 0) fits[d].slack = half[d];
      }
      if (last) break;
      // Each domain's line again against the others as they now stand, bounds not loosened:
      // kept where it meets them all (its drift then rests on exact bounds).
      const std::vector<Points> exact = boundsFor(ev, f, placed, std::vector<double>(n, 0));
      for (size_t d = 1; d < n; ++d) {
        if (!placed[d]) continue;
        Fit tight = detail::fitMapping(exact[d].lower, exact[d].upper, prior[d]);
        if (tight.two_sided && tight.violated == 0) {
          f[d] = tight.map;
          fits[d] = tight;
        }
      }
    }
    {
      const std::vector<Points> exact = boundsFor(ev, f, placed, std::vector<double>(n, 0));
      for (size_t d = 1; d < n; ++d) {
        if (placed[d]) fits[d].violated = detail::countViolated(exact[d].lower, exact[d].upper, f[d]);
      }
    }
    // The rest: bounds on one side only, or none (a rank that made no collective): the wall
    // clock, moved as little as the one-sided bounds require.
    const std::vector<Points> pts = boundsFor(ev, f, placed, u);
    for (size_t d = 1; d < n; ++d) {
      bounds[d] = static_cast<int64_t>(pts[d].lower.size() + pts[d].upper.size());
      if (placed[d]) continue;
      fits[d] = detail::fitMapping(pts[d].lower, pts[d].upper, prior[d]);
      f[d] = fits[d].map;
      if (bounds[d] > 0) methods[d] = "evidence";
    }
    buildModel(domains, f, fits, methods, bounds, options, model);
    detail::chainDomains(links, model);
    shiftOrigin(domains, model);
    model->method = "identity";
    if (n > 1) {
      model->method = "evidence";
      for (const std::string& m : methods) {
        if (m == "wall-clock") model->method = "wall-clock";
      }
    }
    countMessages(domains, ev, model);
    if (stats != nullptr) {
      stats->instances = ev.instances();
      stats->messages = static_cast<int64_t>(ev.messages.size());
      stats->seconds = since(started);
      stats->read_calls_seconds = read_calls;
      stats->read_messages_seconds = read_messages;
      stats->sides_from_inputs = from_inputs;
      stats->sides_not_from_inputs = from_inputs ? "" : not_from_inputs;
    }
    return true;
  } catch (const std::bad_alloc&) {
    if (error) *error = "out of memory while aligning clocks";
    return false;
  }
}

bool realignTrace(const std::string& path, const AlignOptions& options,
                  storage::ClockModel* model, AlignStats* stats, std::string* error,
                  InputSides* input_sides) {
  storage::ClockModel local;
  if (model == nullptr) model = &local;
  {
    storage::TraceOpenOptions open;
    open.raw_times = true;
    open.quick_check = false;  // the merge that made it (or the caller) checked it
    std::unique_ptr<storage::TraceReader> raw = storage::TraceReader::open(path, open, error);
    if (!raw) return false;
    if (!fitClockModel(*raw, options, model, stats, error, input_sides)) return false;
  }
  return storage::storeClockModel(path, *model, error);
}

std::string describeModel(const storage::ClockModel& model) {
  if (model.domains.size() <= 1) return {};
  std::string hosts;
  size_t shown = 0;
  for (const storage::ClockDomain& d : model.domains) {
    if (shown == 4) {
      hosts += ", ...";
      break;
    }
    hosts += (shown++ ? ", " : "") + (d.host.empty() ? std::string("?") : d.host);
  }
  std::string line = format::count(static_cast<int64_t>(model.domains.size())) +
                     " clock domains (" + hosts + ") aligned";
  int64_t wall = 0;
  for (const storage::ClockDomain& d : model.domains) wall += d.method == "wall-clock" ? 1 : 0;
  line += model.bounds > 0 ? " by " + format::count(model.bounds) + " bounds" : " by wall clocks";
  line += "; worst uncertainty +/-" + format::duration(model.maxUncertaintyNs());
  line += "; " + format::count(model.violated) + " bounds unmet";
  if (wall > 0) line += "; " + format::count(wall) + " domain(s) by wall clock only";
  if (model.messages_before_sent > 0) {
    line += "; " + format::count(model.messages_before_sent) + " of " +
            format::count(model.messages_checked) + " messages still received before sent";
  }
  return line;
}

}  // namespace ringside::align
