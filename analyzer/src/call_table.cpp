// analyzer/call_table.cpp — the flat table of call rows (call_table.h).
#include "call_table.h"

#include <algorithm>
#include <limits>

namespace ringside::analyzer::detail {

namespace {
// Positions are 32-bit; one more than the last position marks ends.
constexpr size_t kMaxRows = std::numeric_limits<uint32_t>::max() - 1;
constexpr uint32_t kNoRow = std::numeric_limits<uint32_t>::max();
}  // namespace

int32_t CallTable::addInstance() {
  first_.push_back(kNoRow);
  return static_cast<int32_t>(first_.size() - 1);
}

void CallTable::add(int64_t row_id, const Arrival& call) {
  if (call.instance < 0 || static_cast<size_t>(call.instance) >= first_.size()) return;
  if (size_ >= kMaxRows) {
    too_many_ = true;
    return;
  }
  uint32_t& first = first_[static_cast<size_t>(call.instance)];
  if (first == kNoRow) first = static_cast<uint32_t>(size_);
  if (size_ == 0) {
    id_base_ = row_id;
  } else {
    if (call.rank < row(static_cast<uint32_t>(size_ - 1)).rank) grouped_by_rank_ = false;
    // Ids taken unsigned: whatever the trace holds, no overflow.
    if (ids_in_order_ && static_cast<uint64_t>(row_id) - static_cast<uint64_t>(id_base_) != size_)
      rowIdsAreNotConsecutive();
  }
  if ((size_ & kBlockMask) == 0) blocks_.emplace_back(new Arrival[size_t{1} << kBlockBits]);
  blocks_.back()[size_ & kBlockMask] = call;
  if (!ids_in_order_) sorted_ids_.emplace_back(row_id, call.instance);
  ++size_;
}

void CallTable::rowIdsAreNotConsecutive() {
  ids_in_order_ = false;
  sorted_ids_.reserve(size_ + 1);
  for (uint32_t at = 0; at < size_; ++at) {
    sorted_ids_.emplace_back(static_cast<int64_t>(static_cast<uint64_t>(id_base_) + at),
                             row(at).instance);
  }
}

bool CallTable::finish(std::string* error) {
  if (too_many_) {
    *error = "more than " + std::to_string(kMaxRows) + " collective rows: too many to analyze";
    return false;
  }
  buildRankRuns();
  buildInstanceIndex();
  if (!ids_in_order_) {
    // As the ids come: usually sorted already. A flat table replaces the search when they are
    // dense.
    auto& ids = sorted_ids_;
    if (!std::is_sorted(ids.begin(), ids.end())) std::sort(ids.begin(), ids.end());
    if (!ids.empty()) {
      id_base_ = ids.front().first;
      uint64_t extent = static_cast<uint64_t>(ids.back().first) - static_cast<uint64_t>(id_base_);
      if (extent < 4 * static_cast<uint64_t>(ids.size()) + 1024) {
        dense_ids_.assign(static_cast<size_t>(extent) + 1, -1);
        for (const auto& [id, index] : ids)
          dense_ids_[static_cast<size_t>(static_cast<uint64_t>(id) -
                                         static_cast<uint64_t>(id_base_))] = index;
        std::vector<std::pair<int64_t, int32_t>>().swap(ids);
      }
    }
  }
  return true;
}

void CallTable::buildRankRuns() {
  const auto n = static_cast<uint32_t>(size_);
  if (!grouped_by_rank_) {
    by_rank_.resize(n);
    for (uint32_t at = 0; at < n; ++at) by_rank_[at] = at;
    std::stable_sort(by_rank_.begin(), by_rank_.end(),
                     [&](uint32_t x, uint32_t y) { return row(x).rank < row(y).rank; });
  }
  for (uint32_t k = 0; k < n; ++k) {
    const int32_t rank = row(by_rank_.empty() ? k : by_rank_[k]).rank;
    if (run_rank_.empty() || run_rank_.back() != rank) {
      run_rank_.push_back(rank);
      run_begin_.push_back(k);
    }
  }
  run_begin_.push_back(n);
}

void CallTable::buildInstanceIndex() {
  const auto n = static_cast<uint32_t>(size_);
  instance_begin_.assign(first_.size() + 1, 0);
  for (uint32_t at = 0; at < n; ++at) ++instance_begin_[static_cast<size_t>(row(at).instance) + 1];
  for (size_t i = 1; i < instance_begin_.size(); ++i) instance_begin_[i] += instance_begin_[i - 1];
  // Filled in by-rank order: each instance's rows come out by rank, stably.
  std::vector<uint32_t> next(instance_begin_.begin(), instance_begin_.end() - 1);
  by_instance_.resize(n);
  for (uint32_t k = 0; k < n; ++k) {
    const uint32_t at = by_rank_.empty() ? k : by_rank_[k];
    by_instance_[next[static_cast<size_t>(row(at).instance)]++] = at;
  }
}

CallTable::Rows CallTable::operator[](size_t instance) const {
  return Rows(this, by_instance_.data(), instance_begin_[instance], instance_begin_[instance + 1]);
}

CallTable::Rows CallTable::ofRank(int32_t rank) const {
  const uint32_t* index = by_rank_.empty() ? nullptr : by_rank_.data();
  auto it = std::lower_bound(run_rank_.begin(), run_rank_.end(), rank);
  if (it == run_rank_.end() || *it != rank) return Rows(this, index, 0, 0);
  const auto r = static_cast<size_t>(it - run_rank_.begin());
  return Rows(this, index, run_begin_[r], run_begin_[r + 1]);
}

int64_t CallTable::entry(int64_t instance, int32_t rank) const {
  if (instance < 0 || static_cast<uint64_t>(instance) >= first_.size() || rank < 0) return -1;
  const uint32_t* b = by_instance_.data() + instance_begin_[static_cast<size_t>(instance)];
  const uint32_t* e = by_instance_.data() + instance_begin_[static_cast<size_t>(instance) + 1];
  if (b == e) return -1;
  // An instance of every rank once, from rank r0: rank r is at r - r0.
  const int64_t guess = static_cast<int64_t>(rank) - row(*b).rank;
  const uint32_t* at = nullptr;
  if (guess >= 0 && guess < e - b && row(b[guess]).rank == rank &&
      (guess == 0 || row(b[guess - 1]).rank != rank)) {
    at = b + guess;
  } else {
    at = std::lower_bound(b, e, rank, [&](uint32_t p, int32_t r) { return row(p).rank < r; });
  }
  int64_t earliest = -1;
  for (; at != e && row(*at).rank == rank; ++at) {
    const int64_t start = row(*at).start_ns;
    if (earliest < 0 || start < earliest) earliest = start;
  }
  return earliest;
}

int32_t CallTable::instanceOfRow(int64_t row_id) const {
  const uint64_t at = static_cast<uint64_t>(row_id) - static_cast<uint64_t>(id_base_);
  if (ids_in_order_) {
    return row_id >= id_base_ && at < size_ ? row(static_cast<uint32_t>(at)).instance : -1;
  }
  if (!dense_ids_.empty()) {
    return row_id >= id_base_ && at < dense_ids_.size() ? dense_ids_[static_cast<size_t>(at)] : -1;
  }
  auto it =
      std::lower_bound(sorted_ids_.begin(), sorted_ids_.end(), std::make_pair(row_id, INT32_MIN));
  return it != sorted_ids_.end() && it->first == row_id ? it->second : -1;
}

}  // namespace ringside::analyzer::detail
