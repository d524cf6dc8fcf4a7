// align/src/input_sides.cpp — the clock fit's message sides read from a merge's inputs on a
// thread of their own, beside the copy (ringside/align/input_sides.h).
#include "ringside/align/input_sides.h"

#include <algorithm>
#include <atomic>
#include <new>
#include <thread>
#include <utility>

#include "internal.h"
#include "ringside/storage/stage_timings.h"
#include "ringside/storage/trace_reader.h"

namespace ringside::align {

struct InputSides::State {
  std::vector<storage::MergePlanInput> plan;
  std::thread thread;
  std::atomic<bool> stop{false};
  bool started = false;
  // Written by the thread, read by the merging thread once it has joined it.
  bool ok = false;
  std::string why;  // why not ok
  detail::Domains domains;  // of the inputs' rank rows
  bool read_sides = false;  // false: one domain, no side read
  // The sides as compact sorted runs (side_runs.h), each input's ending a run: a vector of
  // 40-byte sides held 262 MB at 16,384 ranks, from the copy through the fit.
  detail::SideRuns runs;
  std::vector<size_t> begin;  // input i's runs: [begin[i], begin[i + 1])
  std::vector<int64_t> rows;  // transfer rows read per input
  // Written by the merging thread: transfers copied per input; -1 skipped; -2 not reported.
  std::vector<int64_t> copied;

  void join() {
    if (thread.joinable()) thread.join();
  }
  void run();
  std::unique_ptr<storage::TraceReader> open(const std::string& path);
  void findDomains();
  bool readSides();
};

std::unique_ptr<storage::TraceReader> InputSides::State::open(const std::string& path) {
  storage::TraceOpenOptions options;
  options.quick_check = false;  // the copy reads every row through a defensive connection
  options.raw_times = true;     // as the fit reads the merged trace
  std::string error;
  std::unique_ptr<storage::TraceReader> reader = storage::TraceReader::open(path, options, &error);
  if (reader == nullptr) why = error;
  return reader;
}

// The clock domains, as findDomains will find them in the merged trace: the rank rows of every
// input (read by the merge's probe) in the order the merged trace's reader gives them (by rank,
// then start).
void InputSides::State::findDomains() {
  std::vector<storage::RankInfo> all;
  for (const storage::MergePlanInput& in : plan) all.insert(all.end(), in.ranks.begin(), in.ranks.end());
  std::stable_sort(all.begin(), all.end(), [](const storage::RankInfo& a, const storage::RankInfo& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_unix_ns < b.start_unix_ns;
  });
  detail::assignDomains(std::move(all), &domains);
}

// Every input's message sides between domains, in copy order, and its transfer rows counted.
bool InputSides::State::readSides() {
  begin.assign(1, 0);
  for (const storage::MergePlanInput& in : plan) {
    std::unique_ptr<storage::TraceReader> reader = open(in.path);
    if (reader == nullptr) return false;
    int64_t n = 0;
    std::string error;
    const bool read = reader->forEachMessageSide(
        [&](int32_t, const storage::TransferRow& row) {
          if ((++n & 0xffff) == 0 && stop.load(std::memory_order_relaxed)) return false;
          detail::Side side;
          if (detail::sideOf(domains, row, &side)) runs.add(side);
          return true;
        },
        &error);
    if (!read) {
      why = error;
      return false;
    }
    if (stop.load(std::memory_order_relaxed)) return false;
    runs.endRun();
    rows.push_back(n);
    begin.push_back(runs.runs());
  }
  return true;
}

void InputSides::State::run() {
  // Its own line: the merging thread's stages go on meanwhile (CPU of this thread).
  storage::StageTimer timer("align: sides", storage::StageTimer::kThreadCpu);
  // One line for this thread's opens, apart from the merging thread's.
  storage::StageTally opens("open", "align: opens");
  try {
    findDomains();
    ok = domains.list.size() < 2 || (read_sides = readSides());
  } catch (const std::bad_alloc&) {
    why = "out of memory";
    ok = false;
  }
  if (!ok) runs = detail::SideRuns();
  if (!ok && why.empty()) why = "stopped";
}

InputSides::InputSides() : s_(std::make_unique<State>()) {}

InputSides::~InputSides() {
  s_->stop.store(true, std::memory_order_relaxed);
  s_->join();
}

void InputSides::attachTo(storage::MergeOptions* options) {
  auto plan_hook = std::move(options->on_copy_plan);
  options->on_copy_plan = [this, plan_hook](const std::vector<storage::MergePlanInput>& plan) {
    if (plan_hook) plan_hook(plan);
    start(plan);
  };
  auto copied_hook = std::move(options->on_input_copied);
  options->on_input_copied = [this, copied_hook](size_t index, bool copied, int64_t transfers) {
    if (copied_hook) copied_hook(index, copied, transfers);
    noteCopied(index, copied, transfers);
  };
}

void InputSides::start(const std::vector<storage::MergePlanInput>& plan) {
  State& s = *s_;
  if (s.started) return;
  s.copied.assign(plan.size(), -2);
  for (const storage::MergePlanInput& in : plan) {
    if (in.live) {
      s.why = in.path + " is still being written";
      return;
    }
  }
  s.plan = plan;
  try {
    s.thread = std::thread([&s] { s.run(); });
    s.started = true;
  } catch (const std::exception&) {
    s.why = "no thread";
  }
}

void InputSides::noteCopied(size_t index, bool copied, int64_t transfers) {
  if (index < s_->copied.size()) s_->copied[index] = copied ? transfers : -1;
}

namespace detail {

bool takeInputSides(InputSides& from, const Domains& domains, SideRuns* sides, std::string* why) {
  InputSides::State& s = *from.s_;
  if (!s.started) {
    *why = s.why.empty() ? "not read" : s.why;
    return false;
  }
  s.join();
  s.started = false;  // taken once
  if (!s.ok || !s.read_sides) {
    *why = s.ok ? "not read" : s.why;
    return false;
  }
  if (s.domains.of_rank != domains.of_rank) {
    *why = "the inputs' clock domains are not the trace's";
    return false;
  }
  for (size_t i = 0; i < s.plan.size(); ++i) {
    if (s.copied[i] == -2 || (s.copied[i] >= 0 && s.copied[i] != s.rows[i])) {
      *why = s.plan[i].path + ": not the rows the merge copied";
      return false;
    }
  }
  // The runs of the inputs copied (moved, not copied: the sides are held once).
  for (size_t i = 0; i < s.plan.size(); ++i) {
    if (s.copied[i] < 0) continue;
    for (size_t r = s.begin[i]; r < s.begin[i + 1]; ++r) sides->takeRun(s.runs, r);
  }
  s.runs = SideRuns();
  return true;
}

}  // namespace detail
}  // namespace ringside::align
