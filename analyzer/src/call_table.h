// analyzer/call_table.h — every collective call row analyze() keeps after pass 1, in one flat
// table (private to the analyzer): 24 bytes a row in blocks, never a vector per instance or per
// rank, and a 4-byte index over it. At 16,384 ranks (3.3 M call rows) that is 92 MB, where
// per-instance vectors, a sorted (instance, rank) -> entry table, a (row id, instance) list and
// per-rank interval lists held 200-400 MB (docs/analyzer.md, "Memory flat in ranks").
//
// The rows are kept in the order pass 1 reads them (rank, start_ns, id): a rank's calls are
// one stretch. Per instance its rows are listed by rank (then in reading order); per rank, in
// reading order. A damaged trace whose rows do not come grouped by rank gets a by-rank order
// of its own (4 bytes a row), so that every answer is the same as for the rows read in order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ringside::analyzer::detail {

// One rank's call of one instance: when it entered and how long it stayed on the host.
struct Arrival {
  int64_t start_ns = 0;
  int64_t host_ns = -1;  // end - start; -1 if it never returned
  int32_t rank = -1;
  int32_t instance = -1;  // index into Analysis::collectives
};

// Until when a call waited for the last rank to enter (docs/metrics.md): that entry
// (`last_start_ns`), but never after the call returned: an asynchronous call (NCCL's enqueue)
// returns before the others arrive, and its waiting happens on the GPU, not on the host. It
// waited only if this is after its start.
inline int64_t waitedUntil(const Arrival& call, int64_t last_start_ns) {
  return call.host_ns >= 0 ? std::min(last_start_ns, call.start_ns + call.host_ns) : last_start_ns;
}

class CallTable {
 public:
  // A list of rows: positions [begin, end) of an index (nullptr: the table's own order).
  class Rows {
   public:
    class Iterator {
     public:
      const Arrival& operator*() const { return t_->row(at(k_)); }
      Iterator& operator++() {
        ++k_;
        return *this;
      }
      bool operator!=(const Iterator& o) const { return k_ != o.k_; }
      uint32_t at(uint32_t k) const { return index_ != nullptr ? index_[k] : k; }

     private:
      friend class Rows;
      Iterator(const CallTable* t, const uint32_t* index, uint32_t k)
          : t_(t), index_(index), k_(k) {}
      const CallTable* t_;
      const uint32_t* index_;
      uint32_t k_;
    };
    Iterator begin() const { return {t_, index_, begin_}; }
    Iterator end() const { return {t_, index_, end_}; }
    size_t size() const { return end_ - begin_; }
    bool empty() const { return begin_ == end_; }
    const Arrival& operator[](size_t k) const {
      return t_->row(begin().at(begin_ + static_cast<uint32_t>(k)));
    }

   private:
    friend class CallTable;
    Rows(const CallTable* t, const uint32_t* index, uint32_t b, uint32_t e)
        : t_(t), index_(index), begin_(b), end_(e) {}
    const CallTable* t_;
    const uint32_t* index_;
    uint32_t begin_, end_;
  };

  // Pass 1: a new instance (its index); rows of any instance added, in reading order (a row of
  // an instance not added is ignored).
  int32_t addInstance();
  void add(int64_t row_id, const Arrival& call);
  // After the last add(): builds the indexes. False (and *error) when the rows do not fit.
  bool finish(std::string* error);

  size_t size() const { return first_.size(); }  // instances
  size_t rows() const { return size_; }
  // An instance's rows, by rank (a rank's own rows in reading order).
  Rows operator[](size_t instance) const;
  // The first row read of an instance with rows (the lowest rank's, in a trace read in order).
  const Arrival& first(size_t instance) const { return row(first_[instance]); }
  // Calls f(rank, rows) for each rank with rows, by rank; its rows in reading order.
  template <typename F>
  void forEachRank(F&& f) const {
    const uint32_t* index = by_rank_.empty() ? nullptr : by_rank_.data();
    for (size_t r = 0; r + 1 < run_begin_.size(); ++r)
      f(run_rank_[r], Rows(this, index, run_begin_[r], run_begin_[r + 1]));
  }
  // The rows of one rank, in reading order (empty: none).
  Rows ofRank(int32_t rank) const;
  // The earliest entry of `rank` into `instance`; -1 when it made no call of it.
  int64_t entry(int64_t instance, int32_t rank) const;
  // The instance of collective row `row_id`; -1: no such row kept (or outside the window).
  int32_t instanceOfRow(int64_t row_id) const;

 private:
  static constexpr int kBlockBits = 16;  // 65,536 rows (1.5 MiB) a block
  static constexpr uint32_t kBlockMask = (uint32_t{1} << kBlockBits) - 1;
  const Arrival& row(uint32_t at) const { return blocks_[at >> kBlockBits][at & kBlockMask]; }
  void rowIdsAreNotConsecutive();
  void buildRankRuns();
  void buildInstanceIndex();

  std::vector<std::unique_ptr<Arrival[]>> blocks_;
  size_t size_ = 0;
  bool too_many_ = false;              // rows past what a 32-bit position holds
  bool grouped_by_rank_ = true;        // ranks never went down in reading order
  std::vector<uint32_t> first_;        // per instance: its first row
  std::vector<uint32_t> by_rank_;      // empty: reading order is by rank; else positions by rank
  std::vector<int32_t> run_rank_;      // per rank with rows: the rank
  std::vector<uint32_t> run_begin_;    // its first place in the by-rank order; one more at the end
  std::vector<uint32_t> by_instance_;  // positions, by instance, then rank
  std::vector<uint32_t> instance_begin_;  // per instance its first place; one more at the end

  // Collective row id -> instance. Merged traces number their rows densely in reading order:
  // then the id's place is the row's own and its instance column answers; otherwise a table
  // (dense when the ids are) or a sorted list as pairs.
  bool ids_in_order_ = true;
  int64_t id_base_ = 0;
  std::vector<std::pair<int64_t, int32_t>> sorted_ids_;  // (row id, instance), by row id
  std::vector<int32_t> dense_ids_;                       // [row id - id_base_] -> instance or -1
};

// The names the transfer pass reads them by (analysis_transfers.cpp).
class RowIndex {
 public:
  explicit RowIndex(const CallTable& t) : t_(t) {}
  int32_t find(int64_t row_id) const { return t_.instanceOfRow(row_id); }

 private:
  const CallTable& t_;
};

// Each rank's entry into each collective instance (the earliest, if a rank has several calls
// of one instance): when the bytes of a receive can start to move (link_time.h).
class CallEntries {
 public:
  explicit CallEntries(const CallTable& t) : t_(t) {}
  int64_t find(int64_t instance, int32_t rank) const { return t_.entry(instance, rank); }

 private:
  const CallTable& t_;
};

}  // namespace ringside::analyzer::detail
