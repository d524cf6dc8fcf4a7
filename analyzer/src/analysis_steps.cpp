// analyzer/analysis_steps.cpp — the steps stage (docs/steps.md): which calls form each training
// step, where each step begins and ends on each rank, and per step and rank its time, compute,
// waiting for late ranks and moving data (docs/metrics.md). The steps come from, in order of
// preference: the job's explicit markers (table step_marker_data), the steps `ringside merge`
// stored (table step), or the period of the calls found here (step_detection.h).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <unordered_map>

#include "analysis_state.h"
#include "ringside/analyzer/steps.h"
#include "ringside/format/units.h"
#include "ringside/storage/trace_reader.h"
#include "step_detection.h"

namespace ringside::analyzer::detail {
namespace {

using Interval = std::pair<int64_t, int64_t>;

// Interns (op, library, algorithm) for the period's keys. Consecutive calls usually share them:
// the last one is kept to spare a map lookup per call.
class OpKeys {
 public:
  int32_t id(std::string_view op, std::string_view library, std::string_view algorithm) {
    if (last_ >= 0 && op == op_ && library == library_ && algorithm == algorithm_) return last_;
    op_ = op;
    library_ = library;
    algorithm_ = algorithm;
    std::string key = op_ + '\0' + library_ + '\0' + algorithm_;
    auto [it, fresh] = ids_.try_emplace(std::move(key), static_cast<int32_t>(ids_.size()));
    if (fresh) ops_.emplace_back(op);
    last_ = it->second;
    return last_;
  }
  const std::string& op(int32_t id) const { return ops_[static_cast<size_t>(id)]; }

 private:
  std::map<std::string, int32_t> ids_;
  std::vector<std::string> ops_;  // by id
  std::string op_, library_, algorithm_;
  int32_t last_ = -1;
};

// Detection over the communicators: the one whose steps cover the most calls.
struct CommSteps {
  std::string comm;
  std::vector<SeqCall> calls;
  std::vector<int32_t> instance;  // per call: index into Analysis::collectives (-1: none)
  DetectedSteps found;
};

using CommMap = std::map<std::string, CommSteps, std::less<>>;

CommSteps bestComm(CommMap& comms, std::string* note) {
  CommSteps best;
  std::string why = "no collectives";
  for (auto& [comm, cs] : comms) {
    // Calls arrive nearly in seq order: sort the few that are not.
    std::vector<size_t> order(cs.calls.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return cs.calls[a].seq < cs.calls[b].seq; });
    std::vector<SeqCall> calls;
    std::vector<int32_t> instance;
    calls.reserve(order.size());
    instance.reserve(order.size());
    for (size_t i : order) {
      calls.push_back(cs.calls[i]);
      instance.push_back(cs.instance.empty() ? -1 : cs.instance[i]);
    }
    cs.calls = std::move(calls);
    cs.instance = std::move(instance);
    cs.found = detectPeriodicSteps(cs.calls);
    if (cs.found.steps.empty()) {
      why = cs.found.note;
    } else if (cs.found.covered > best.found.covered) {
      best = std::move(cs);
      best.comm = comm;
    }
  }
  if (best.found.steps.empty()) *note = why;
  return best;
}

// "3 x broadcast 1.0 KiB, 1 x allreduce 4 B": the calls detection left out, most frequent first
// (at most four kinds named).
std::string leftOutText(const CommSteps& cs, const OpKeys& keys) {
  std::map<std::pair<int32_t, int64_t>, int64_t> by_key;
  for (size_t i : cs.found.left_out) ++by_key[{cs.calls[i].op, cs.calls[i].bytes}];
  std::vector<std::pair<int64_t, std::pair<int32_t, int64_t>>> order;
  for (const auto& [key, n] : by_key) order.emplace_back(-n, key);
  std::sort(order.begin(), order.end());
  std::string text;
  for (size_t k = 0; k < order.size() && k < 4; ++k) {
    text += (k ? ", " : "") + std::to_string(-order[k].first) + " x " +
            keys.op(order[k].second.first) + " " + format::bytes(order[k].second.second);
  }
  if (order.size() > 4) text += ", ...";
  return text;
}

StepDetectionSummary summaryOf(const CommSteps& cs, const OpKeys& keys) {
  StepDetectionSummary sum;
  if (cs.found.steps.empty()) return sum;
  sum.confidence = cs.found.confidence;
  sum.left_out_calls = static_cast<int64_t>(cs.found.left_out.size());
  sum.left_out = leftOutText(cs, keys);
  return sum;
}

std::vector<storage::StepRow> stepRows(const CommSteps& cs) {
  std::vector<storage::StepRow> rows;
  for (size_t k = 0; k < cs.found.steps.size(); ++k) {
    const DetectedSteps::Range& r = cs.found.steps[k];
    rows.push_back({static_cast<int64_t>(k), cs.comm, cs.calls[r.first].seq,
                    cs.calls[r.last].seq, r.complete});
  }
  return rows;
}

// Per rank: the step intervals, in time order, and per step its end so far.
struct RankSteps {
  std::vector<int64_t> step;  // step number
  std::vector<Interval> span;  // [start, end)
};

// Steps given by ranges of seq on one communicator: each instance of a range belongs to the
// step; on each rank a step ends when its last call of the step returns and begins where the
// previous one ended (step 0: at the end of the rank's last earlier call on the communicator).
void stepsFromRanges(AnalysisState& s, const std::string& comm,
                     const std::vector<storage::StepRow>& rows, std::map<int, RankSteps>* ranks) {
  Analysis& a = *s.out;
  std::vector<std::pair<int64_t, int32_t>> on_comm;  // (seq, instance), by seq
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    if (a.collectives[i].comm == comm) on_comm.emplace_back(a.collectives[i].seq, static_cast<int32_t>(i));
  }
  std::sort(on_comm.begin(), on_comm.end());
  std::map<int, int64_t> last_end;  // rank -> end of its latest call before the current step
  size_t at = 0;
  for (const storage::StepRow& row : rows) {
    std::map<int, Interval> span;  // rank -> [first start, last end] of its calls in the step
    for (; at < on_comm.size() && on_comm[at].first <= row.last_seq; ++at) {
      const int32_t i = on_comm[at].second;
      const bool inside = on_comm[at].first >= row.first_seq;
      if (inside) a.collectives[static_cast<size_t>(i)].step = row.step;
      for (const Arrival& arr : s.arrivals[static_cast<size_t>(i)]) {
        const int64_t end = arr.start_ns + std::max<int64_t>(0, arr.host_ns);
        if (!inside) {
          // Setup calls before a rank's first step: the step begins when they end. Calls
          // between steps (DDP's bucket-rebuild broadcast) belong to the step they fall in.
          if (ranks->count(arr.rank) == 0) last_end[arr.rank] = std::max(last_end[arr.rank], end);
          continue;
        }
        auto [it, fresh] = span.try_emplace(arr.rank, Interval{arr.start_ns, end});
        if (!fresh) {
          it->second.first = std::min(it->second.first, arr.start_ns);
          it->second.second = std::max(it->second.second, end);
        }
      }
    }
    for (const auto& [rank, sp] : span) {
      auto prev = last_end.find(rank);
      const int64_t start = prev != last_end.end() ? std::min(prev->second, sp.first) : sp.first;
      RankSteps& rs = (*ranks)[rank];
      rs.step.push_back(row.step);
      rs.span.emplace_back(start, sp.second);
      last_end[rank] = sp.second;
    }
  }
}

// Steps given by markers: on each rank from one marker to its next (the last step to the rank's
// last event).
void stepsFromMarkers(const AnalysisState& s,
                      const std::map<int, std::vector<storage::StepMarkerRow>>& markers,
                      std::map<int, RankSteps>* ranks) {
  for (const auto& [rank, list] : markers) {
    auto acc = s.rank_acc.find(rank);
    const int64_t rank_end = acc != s.rank_acc.end() && acc->second.events.any()
                                 ? acc->second.events.last()
                                 : list.back().start_ns;
    RankSteps& rs = (*ranks)[rank];
    for (size_t k = 0; k < list.size(); ++k) {
      const int64_t end = k + 1 < list.size() ? list[k + 1].start_ns
                                              : std::max(rank_end, list[k].start_ns);
      rs.step.push_back(list[k].step);
      rs.span.emplace_back(list[k].start_ns, end);
    }
  }
}

// Makes `v` its sorted, disjoint union, in place.
void unionInPlace(std::vector<Interval>* v) {
  std::sort(v->begin(), v->end());
  size_t n = 0;
  for (const Interval& x : *v) {
    if (n > 0 && x.first <= (*v)[n - 1].second) {
      (*v)[n - 1].second = std::max((*v)[n - 1].second, x.second);
    } else {
      (*v)[n++] = x;
    }
  }
  v->resize(n);
}

// Sum of the overlaps of disjoint sorted `u` with each of the sorted disjoint `spans`.
std::vector<int64_t> overlaps(const std::vector<Interval>& u, const std::vector<Interval>& spans) {
  std::vector<int64_t> out(spans.size(), 0);
  size_t j = 0;
  for (size_t k = 0; k < spans.size(); ++k) {
    const auto [a, b] = spans[k];
    while (j < u.size() && u[j].second <= a) ++j;
    for (size_t m = j; m < u.size() && u[m].first < b; ++m) {
      out[k] += std::min(b, u[m].second) - std::max(a, u[m].first);
    }
  }
  return out;
}

// One rank's calls and its waits (docs/metrics.md), as disjoint sorted intervals.
void callAndWaitUnions(const AnalysisState& s, int rank, std::vector<Interval>* calls,
                       std::vector<Interval>* waits) {
  const Analysis& a = *s.out;
  calls->clear();
  waits->clear();
  for (const Arrival& arr : s.arrivals.ofRank(rank)) {
    const int64_t end = arr.start_ns + std::max<int64_t>(0, arr.host_ns);
    calls->emplace_back(arr.start_ns, end);
    const int64_t until =
        waitedUntil(arr, a.collectives[static_cast<size_t>(arr.instance)].last_start_ns);
    if (until > arr.start_ns) waits->emplace_back(arr.start_ns, until);
  }
  unionInPlace(calls);
  unionInPlace(waits);
}

// Steps of instances not placed by a range (other communicators, markers): the step whose span
// on the instance's first rank holds its entry.
void placeInstances(AnalysisState& s, const std::map<int, RankSteps>& ranks) {
  Analysis& a = *s.out;
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    CollectiveInstance& c = a.collectives[i];
    if (c.step >= 0 || s.arrivals[i].empty()) continue;
    const Arrival& arr = s.arrivals.first(i);
    auto it = ranks.find(arr.rank);
    if (it == ranks.end()) continue;
    const auto& spans = it->second.span;
    auto after = std::upper_bound(spans.begin(), spans.end(), Interval{arr.start_ns, INT64_MAX});
    if (after == spans.begin()) continue;
    const size_t k = static_cast<size_t>(after - spans.begin()) - 1;
    // The last span ends at the rank's last event: a call entered then and left open (a hang)
    // is that step's too.
    const bool last = k + 1 == spans.size();
    if (arr.start_ns < spans[k].second || (last && arr.start_ns == spans[k].second)) {
      c.step = it->second.step[k];
    }
  }
  // Buckets: the all-reduces of a step on one communicator, in seq order.
  std::vector<std::tuple<int64_t, std::string_view, int64_t, size_t>> order;
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const CollectiveInstance& c = a.collectives[i];
    if (c.step >= 0 && collective::is(c.op, collective::Op::kAllreduce)) order.emplace_back(c.step, c.comm, c.seq, i);
  }
  std::sort(order.begin(), order.end());
  for (size_t k = 0; k < order.size(); ++k) {
    const bool same = k > 0 && std::get<0>(order[k]) == std::get<0>(order[k - 1]) &&
                      std::get<1>(order[k]) == std::get<1>(order[k - 1]);
    const int bucket = same ? a.collectives[std::get<3>(order[k - 1])].bucket + 1 : 0;
    a.collectives[std::get<3>(order[k])].bucket = bucket;
  }
}

// Fills Analysis::steps from the per-rank spans. Vectors, not maps: a long job has many steps.
void measureSteps(AnalysisState& s, const std::map<int, RankSteps>& ranks,
                  const std::set<int64_t>& incomplete) {
  Analysis& a = *s.out;
  std::vector<Interval> calls, waits;  // of one rank at a time
  std::vector<StepRankStats>& per_rank = a.steps.per_rank;
  size_t total = 0;
  for (const auto& [rank, rs] : ranks) total += rs.span.size();
  per_rank.reserve(total);
  for (const auto& [rank, rs] : ranks) {
    callAndWaitUnions(s, rank, &calls, &waits);
    const std::vector<int64_t> in_calls = overlaps(calls, rs.span);
    const std::vector<int64_t> waiting = overlaps(waits, rs.span);
    for (size_t k = 0; k < rs.span.size(); ++k) {
      StepRankStats r;
      r.step = rs.step[k];
      r.rank = rank;
      std::tie(r.start_ns, r.end_ns) = rs.span[k];
      r.comm_ns = std::min(r.step_ns(), in_calls[k]);
      r.wait_ns = std::min(r.comm_ns, waiting[k]);
      per_rank.push_back(r);
    }
  }
  std::sort(per_rank.begin(), per_rank.end(), [](const StepRankStats& x, const StepRankStats& y) {
    return std::tie(x.step, x.rank) < std::tie(y.step, y.rank);
  });
  std::vector<StepStats>& steps = a.steps.steps;
  for (const StepRankStats& r : per_rank) {
    if (steps.empty() || steps.back().step != r.step) {
      StepStats st;
      st.step = r.step;
      st.start_ns = r.start_ns;
      st.end_ns = r.end_ns;
      st.complete = incomplete.count(r.step) == 0;
      steps.push_back(st);
    }
    StepStats& st = steps.back();
    st.start_ns = std::min(st.start_ns, r.start_ns);
    st.end_ns = std::max(st.end_ns, r.end_ns);
    st.wait_ns += r.wait_ns;
  }
  for (const CollectiveInstance& c : a.collectives) {
    if (c.step < 0) continue;
    auto it = std::lower_bound(steps.begin(), steps.end(), c.step,
                               [](const StepStats& st, int64_t step) { return st.step < step; });
    if (it == steps.end() || it->step != c.step) continue;
    ++it->calls;
    if (c.ranks >= 2 && c.arrival_skew_ns > it->late_by_ns) {
      it->late_by_ns = c.arrival_skew_ns;
      it->late_rank = c.straggler_rank;
    }
  }
}

// The markers in the window, per rank in time order.
bool readMarkers(AnalysisState& s, std::map<int, std::vector<storage::StepMarkerRow>>* markers) {
  return s.reader.forEachStepMarker(
      [&](int32_t rank, const storage::StepMarkerRow& row) {
        if (!s.rankOk(rank) || !s.timesOk(row.start_ns, row.start_ns)) return true;
        if (row.start_ns < s.window_start_ns || row.start_ns > s.window_end_ns) return true;
        (*markers)[rank].push_back(row);
        return true;
      },
      s.error);
}

// What merge stored about its detection (meta keys steps_confidence, steps_left_out_calls,
// steps_left_out); a trace merged before them has none (confidence stays -1).
template <class Meta>
void readStoredSummary(const Meta& meta, StepInfo* info) {
  auto text = [&](const char* key) -> std::string {
    auto it = meta.find(key);
    return it == meta.end() ? std::string() : std::string(it->second);
  };
  const std::string confidence = text("steps_confidence");
  char* end = nullptr;
  const double c = confidence.empty() ? -1 : std::strtod(confidence.c_str(), &end);
  if (!confidence.empty() && end != nullptr && *end == '\0' && c >= 0 && c <= 1) {
    info->confidence = c;
  }
  const std::string calls = text("steps_left_out_calls");
  const long long n = calls.empty() ? 0 : std::strtoll(calls.c_str(), &end, 10);
  if (!calls.empty() && *end == '\0' && n >= 0) info->left_out_calls = n;
  info->left_out = text("steps_left_out");
}

// Steps detected from the instances of this analysis.
std::vector<storage::StepRow> detectFromInstances(AnalysisState& s) {
  const Analysis& a = *s.out;
  OpKeys keys;
  CommMap comms;
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    const CollectiveInstance& c = a.collectives[i];
    CommSteps& cs = comms[c.comm];
    SeqCall call{c.seq, keys.id(c.op, c.library, c.algorithm), collective::is(c.op, collective::Op::kAllreduce), c.bytes};
    for (const Arrival& arr : s.arrivals[i]) {
      if (call.rank >= 0 && arr.rank >= call.rank) continue;
      call.rank = arr.rank;
      call.start_ns = arr.start_ns;
      call.end_ns = arr.start_ns + std::max<int64_t>(0, arr.host_ns);
    }
    cs.calls.push_back(call);
    cs.instance.push_back(static_cast<int32_t>(i));
  }
  CommSteps best = bestComm(comms, &s.out->steps.note);
  if (best.found.steps.empty()) return {};
  StepInfo& info = s.out->steps;
  info.calls_per_step = best.found.calls_per_step;
  info.setup_calls = best.found.setup_calls;
  const StepDetectionSummary sum = summaryOf(best, keys);
  info.confidence = sum.confidence;
  info.left_out_calls = sum.left_out_calls;
  info.left_out = sum.left_out;
  return stepRows(best);
}

}  // namespace

bool findSteps(AnalysisState& s) {
  StepInfo& info = s.out->steps;
  std::map<int, std::vector<storage::StepMarkerRow>> markers;
  if (!readMarkers(s, &markers)) return false;
  std::map<int, RankSteps> ranks;
  std::set<int64_t> incomplete;
  if (!markers.empty()) {
    info.source = "markers";
    info.confidence = 1;
    stepsFromMarkers(s, markers, &ranks);
  } else {
    std::vector<storage::StepRow> rows;
    const auto meta = s.reader.meta();
    if (meta.count("steps_detected") != 0) {
      info.source = "stored";
      // A damaged step table (found by fuzzing: a first_seq of INT64_MIN overflowed the
      // calls-per-step arithmetic): rows whose call range no trace can hold are skipped.
      int64_t bad = 0;
      std::string first_bad;
      if (!s.reader.forEachStep(
              [&](const storage::StepRow& row) {
                const bool ok = row.first_seq >= 0 && row.last_seq >= row.first_seq &&
                                row.last_seq - row.first_seq < (int64_t{1} << 40);
                if (ok) {
                  rows.push_back(row);
                } else if (bad++ == 0) {
                  first_bad = "step " + std::to_string(row.step) + ": calls " +
                              std::to_string(row.first_seq) + ".." + std::to_string(row.last_seq);
                }
                return true;
              },
              s.error)) {
        return false;
      }
      if (bad > 0) {
        s.out->warnings.push_back("the trace's step table has " + std::to_string(bad) +
                                  " row(s) no trace can hold (first: " + first_bad +
                                  "); skipped");
      }
      if (rows.empty()) info.note = "merge found no repeating sequence of calls";
      readStoredSummary(meta, &info);
    } else {
      info.source = "detected";
      rows = detectFromInstances(s);
    }
    if (rows.empty()) {
      info.source.clear();
      return true;
    }
    info.comm = rows.front().comm;
    for (const storage::StepRow& row : rows) {
      if (!row.complete) incomplete.insert(row.step);
    }
    if (info.calls_per_step == 0) {
      const storage::StepRow& last = rows.back();
      info.calls_per_step = last.last_seq - last.first_seq + 1;
    }
    stepsFromRanges(s, info.comm, rows, &ranks);
  }
  placeInstances(s, ranks);
  measureSteps(s, ranks, incomplete);
  return true;
}

}  // namespace ringside::analyzer::detail

namespace ringside::analyzer {

bool detectSteps(storage::TraceReader& reader, std::vector<storage::StepRow>* steps,
                 std::string* note, std::string* error, StepDetectionSummary* summary) {
  using detail::CommSteps;
  steps->clear();
  detail::OpKeys keys;
  // (comm, seq) -> the call's index in its communicator's list: rows of one call on several
  // ranks make one call (the largest bytes, the earliest entry, the latest return).
  detail::CommMap comms;
  std::map<std::string, std::unordered_map<int64_t, size_t>, std::less<>> index;
  const bool ok = reader.forEachCollective(
      [&](const storage::CollectiveRow& row) {
        auto cit = comms.find(row.comm);
        if (cit == comms.end()) cit = comms.try_emplace(std::string(row.comm)).first;
        CommSteps& cs = cit->second;
        auto& seqs = index[cit->first];
        const int64_t end = std::max(row.start_ns, row.end_ns);
        auto [it, fresh] = seqs.try_emplace(row.seq, cs.calls.size());
        if (fresh) {
          cs.calls.push_back({row.seq, keys.id(row.op, row.library, row.algorithm),
                              collective::is(row.op, collective::Op::kAllreduce), row.bytes, row.rank, row.start_ns, end});
          return true;
        }
        detail::SeqCall& c = cs.calls[it->second];
        c.bytes = std::max(c.bytes, row.bytes);
        if (row.rank < c.rank) std::tie(c.rank, c.start_ns, c.end_ns) = std::tie(row.rank, row.start_ns, end);
        return true;
      },
      error);
  if (!ok) return false;
  index.clear();
  CommSteps best = detail::bestComm(comms, note);
  if (!best.found.steps.empty()) *steps = detail::stepRows(best);
  if (summary != nullptr) *summary = detail::summaryOf(best, keys);
  return true;
}

}  // namespace ringside::analyzer
