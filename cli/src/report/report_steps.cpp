// The report's tables of training steps (docs/steps.md; figures named in docs/metrics.md):
// per step over its ranks, and per rank over its steps. Human tables stay short (the slowest
// steps when there are many); CSV and JSON hold every step.
#include <algorithm>
#include <map>

#include "report/report_tables.h"
#include "ringside/format/units.h"

namespace ringside::cli {
namespace {

using analyzer::Analysis;
using analyzer::StepRankStats;
using analyzer::StepStats;

std::string num(int64_t v) { return std::to_string(v); }

// One step's figures over its ranks: means, and the rank that computed longest.
struct StepRow {
  const StepStats* step = nullptr;
  int64_t ranks = 0;
  int64_t compute_sum = 0, wait_sum = 0, moving_sum = 0;
  int64_t compute_max = -1;
  int compute_max_rank = -1;
  int64_t time() const { return step->end_ns - step->start_ns; }
  int64_t mean(int64_t sum) const { return ranks > 0 ? sum / ranks : 0; }
};

std::vector<StepRow> stepRows(const Analysis& a) {
  std::map<int64_t, StepRow> by_step;
  for (const StepStats& st : a.steps.steps) by_step[st.step].step = &st;
  for (const StepRankStats& r : a.steps.per_rank) {
    StepRow& row = by_step[r.step];
    ++row.ranks;
    row.compute_sum += r.compute_ns();
    row.wait_sum += r.wait_ns;
    row.moving_sum += r.moving_ns();
    if (r.compute_ns() > row.compute_max) {
      row.compute_max = r.compute_ns();
      row.compute_max_rank = r.rank;
    }
  }
  std::vector<StepRow> rows;
  for (auto& [step, row] : by_step) {
    if (row.step != nullptr) rows.push_back(row);
  }
  return rows;
}

int64_t median(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

std::string stepsTitle(const Analysis& a) {
  const analyzer::StepInfo& s = a.steps;
  const std::string n = num(static_cast<int64_t>(s.steps.size()));
  if (s.source == "markers") return "Training steps (" + n + ", from the job's ringside_step() markers)";
  std::string how;
  if (s.confidence >= 0) how = ", confidence " + format::fixed(s.confidence, 2);
  if (s.left_out_calls > 0) {
    how += "; left out " + num(s.left_out_calls) + " call(s)" +
           (s.left_out.empty() ? "" : ": " + s.left_out);
  }
  return "Training steps (" + n + " found in the calls on " + s.comm + ", " +
         num(s.calls_per_step) + " per step" + how + ")";
}

void stepTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = stepsTitle(a);
  const bool h = u == Units::kHuman;
  t->columns = {{"step", "step"},         {"time_ns", "time"},
                {"compute_ns", "compute"}, {"compute_max_ns", "slowest compute"},
                {"wait_ns", "waiting"},   {"moving_ns", "moving data"},
                {"late_rank", "last rank"}, {"late_by_ns", "late by"},
                {"calls", "calls"}};
  if (!h) t->columns.insert(t->columns.begin() + 4, {"compute_max_rank", "rank"});
  std::vector<StepRow> rows = stepRows(a);
  // For a person: the slowest steps, in step order, when they do not all fit.
  constexpr size_t kHumanSteps = 16;
  const size_t cap = std::min(limit == 0 ? kHumanSteps : limit, kHumanSteps);
  if (h && rows.size() > cap) {
    std::vector<int64_t> times;
    for (const StepRow& r : rows) times.push_back(r.time());
    t->note = "the " + num(static_cast<int64_t>(cap)) + " slowest of " +
              num(static_cast<int64_t>(rows.size())) + " steps; median step time " +
              format::duration(median(times)) + "; every step in the JSON and CSV reports";
    std::stable_sort(rows.begin(), rows.end(),
                     [](const StepRow& x, const StepRow& y) { return x.time() > y.time(); });
    rows.resize(cap);
    std::sort(rows.begin(), rows.end(),
              [](const StepRow& x, const StepRow& y) { return x.step->step < y.step->step; });
  }
  for (const StepRow& r : rows) {
    const StepStats& st = *r.step;
    const std::string late = st.late_rank < 0 ? (h ? "-" : "") : num(st.late_rank);
    if (h) {
      std::string mark = st.complete ? "" : " (partial)";
      t->rows.push_back({num(st.step) + mark, format::duration(r.time()),
                         format::duration(r.mean(r.compute_sum)),
                         format::duration(r.compute_max) + " (r" + num(r.compute_max_rank) + ")",
                         format::duration(r.mean(r.wait_sum)),
                         format::duration(r.mean(r.moving_sum)), late,
                         format::duration(st.late_by_ns), format::count(st.calls)});
    } else {
      t->rows.push_back({num(st.step), num(r.time()), num(r.mean(r.compute_sum)),
                         num(r.compute_max), num(r.compute_max_rank), num(r.mean(r.wait_sum)),
                         num(r.mean(r.moving_sum)), late, num(st.late_by_ns), num(st.calls)});
    }
  }
}

void rankStepTable(const Analysis& a, Units u, size_t limit, ReportTable* t) {
  t->title = "Ranks over the training steps (median per step)";
  const bool h = u == Units::kHuman;
  t->columns = {{"rank", "rank"},           {"steps", "steps"},
                {"step_ns", "step time"},   {"compute_ns", "compute"},
                {"comm_ns", "in collectives"}, {"wait_ns", "waiting"},
                {"moving_ns", "moving data"}, {"times_last", "last in"}};
  std::map<int, std::vector<const StepRankStats*>> by_rank;
  for (const StepRankStats& r : a.steps.per_rank) by_rank[r.rank].push_back(&r);
  std::map<int, int64_t> last;
  for (const StepStats& st : a.steps.steps) {
    if (st.late_rank >= 0) ++last[st.late_rank];
  }
  const int64_t steps = static_cast<int64_t>(a.steps.steps.size());
  std::vector<double> score;  // how often last, then how much it waits
  for (const auto& [rank, list] : by_rank) {
    std::vector<int64_t> step, compute, comm, wait, moving;
    for (const StepRankStats* r : list) {
      step.push_back(r->step_ns());
      compute.push_back(r->compute_ns());
      comm.push_back(r->comm_ns);
      wait.push_back(r->wait_ns);
      moving.push_back(r->moving_ns());
    }
    const int64_t n = static_cast<int64_t>(list.size());
    auto d = [h](int64_t ns) { return h ? format::duration(ns) : std::to_string(ns); };
    std::string times_last = num(last[rank]);
    if (h && steps > 0) {
      times_last += " (" + format::fixed(100.0 * static_cast<double>(last[rank]) /
                                             static_cast<double>(steps), 0) + "%)";
    }
    score.push_back(static_cast<double>(last[rank]) * 1e18 + static_cast<double>(median(wait)));
    t->rows.push_back({num(rank), num(n), d(median(step)), d(median(compute)), d(median(comm)),
                       d(median(wait)), d(median(moving)), times_last});
  }
  if (h) keepRowsForPerson(t, score, limit, /*lowest_too=*/false, "ranks");
}

}  // namespace ringside::cli
