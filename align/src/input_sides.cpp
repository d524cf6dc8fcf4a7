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
  std::vector<detail::Side> sides;
  std::vector<size_t> begin;  // input i's sides: sides[begin[i], begin[i + 1])
  std::vector<int64_t> rows;  // transfer rows read per input
  // Written by the merging thread: transfers copied per input; -1 skipped; -2 not reported.
  std::vector<int64_t> copied;

  void join() {
    if (thread.joinable()) thread.join();
  }
  void run();
  std::unique_ptr<storage::TraceReader> open(const std::string& path);
  bool readRanks();
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
// input in the order the merged trace's reader gives them (by rank, then start).
bool InputSides::State::readRanks() {
  std::vector<storage::RankInfo> all;
  for (const storage::MergePlanInput& in : plan) {
    if (stop.load(std::memory_order_relaxed)) return false;
    std::unique_ptr<storage::TraceReader> reader = open(in.path);
    if (reader == nullptr) return false;
    std::vector<storage::RankInfo> ranks = reader->ranks();
    all.insert(all.end(), std::make_move_iterator(ranks.begin()),
               std::make_move_iterator(ranks.end()));
  }
  std::stable_sort(all.begin(), all.end(), [](const storage::RankInfo& a, const storage::RankInfo& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start_unix_ns < b.start_unix_ns;
  });
  detail::assignDomains(std::move(all), &domains);
  return true;
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
          if (detail::sideOf(domains, row, &side)) sides.push_back(side);
          return true;
        },
        &error);
    if (!read) {
      why = error;
      return false;
    }
    if (stop.load(std::memory_order_relaxed)) return false;
    rows.push_back(n);
    begin.push_back(sides.size());
  }
  return true;
}

void InputSides::State::run() {
  // Its own line: the merging thread's stages go on meanwhile (CPU of this thread).
  storage::StageTimer timer("align: sides", storage::StageTimer::kThreadCpu);
  storage::StageTally opens("open");  // one line for this thread's 2 opens per input
  try {
    ok = readRanks() && (domains.list.size() < 2 || (read_sides = readSides()));
  } catch (const std::bad_alloc&) {
    why = "out of memory";
    ok = false;
  }
  if (!ok) std::vector<detail::Side>().swap(sides);
  // Held through the merge's index build (its peak of memory): no growth slack, copied now,
  // while the copy's memory is lower.
  sides.shrink_to_fit();
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

bool takeInputSides(InputSides& from, const Domains& domains, std::vector<Side>* sides,
                    std::string* why) {
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
  // The sides of the inputs copied, moved to the front in place (no second copy of them all).
  size_t kept = 0;
  for (size_t i = 0; i < s.plan.size(); ++i) {
    if (s.copied[i] < 0) continue;
    for (size_t k = s.begin[i]; k < s.begin[i + 1]; ++k) s.sides[kept++] = s.sides[k];
  }
  s.sides.resize(kept);
  if (sides->empty()) {
    sides->swap(s.sides);
  } else {
    sides->insert(sides->end(), s.sides.begin(), s.sides.end());
  }
  std::vector<Side>().swap(s.sides);
  return true;
}

}  // namespace detail
}  // namespace ringside::align
