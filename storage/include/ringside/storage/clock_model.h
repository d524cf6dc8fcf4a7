// storage/clock_model.h — how the clocks of a multi-host trace are placed on one time line.
//
// Every rank records times on its own host's CLOCK_MONOTONIC (raw times, kept as recorded). The
// ranks that share one kernel clock form a clock domain (same boot_id and time namespace; for
// older traces, the same host). A merged trace stores one ClockModel: per domain, piecewise-linear
// segments that map the domain's raw times onto the reference time line (the domain of the lowest
// rank, whose mapping is the identity):
//
//   aligned(t) = t + offset_ns + round((t - ref_ns) * rate)     for lo_ns <= t < hi_ns
//
// The model is fitted by align/ (docs/clock-alignment.md) and written with storeClockModel();
// storage::TraceReader applies it to every time it returns (TraceOpenOptions::raw_times turns that
// off). A trace without a model, or whose ranks all share one domain, reads unchanged.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringside::storage {

// One reading of CLOCK_REALTIME taken between two readings of the rank's clock (schema v3,
// table clock_anchor_data): at trace start, about once a second while recording, and at the end.
struct ClockAnchorRow {
  int64_t clock_ns = 0;   // midpoint of the two readings of the rank's clock
  int64_t unix_ns = 0;    // CLOCK_REALTIME, ns since 1970
  int64_t spread_ns = 0;  // half the time between the two clock readings (the anchor's own error)
};

// One piece of a domain's mapping (table clock_segment).
struct ClockSegment {
  int32_t domain = 0;
  int64_t lo_ns = INT64_MIN;  // raw times this segment covers: lo_ns <= t < hi_ns
  int64_t hi_ns = INT64_MAX;
  int64_t ref_ns = 0;         // raw time at which the offset is offset_ns
  int64_t offset_ns = 0;
  double rate = 0.0;          // drift: aligned - raw grows by rate per ns (20 ppm = 2e-5)
};

// One clock domain (table clock_domain).
struct ClockDomain {
  int32_t id = 0;                // 0 is the reference domain (identity mapping)
  std::string host;              // host name of its first rank
  std::string boot_id;           // /proc/sys/kernel/random/boot_id of its ranks, "" if unknown
  std::vector<int32_t> ranks;    // ranks in the domain, ascending
  // How its mapping was found: "reference" (the time line's own clock), "evidence" (fitted to the
  // bounds that matched calls and messages put on it), "wall-clock" (too little evidence: mapped by
  // the wall-clock anchors alone).
  std::string method = "reference";
  int64_t offset_ns = 0;         // aligned - raw at the domain's first event
  double drift_ppm = 0.0;        // its clock's rate against the reference, parts per million
  // Residual uncertainty, ns: half the width of the window the evidence leaves for the offset
  // (evidence), or the assumed wall-clock error (wall-clock). 0 for the reference.
  int64_t uncertainty_ns = 0;
  int64_t bounds = 0;            // bounds (matched calls and messages) that constrained it
  int64_t violated = 0;          // of those, how many the fitted mapping could not meet
  int64_t anchors = 0;           // wall-clock anchors its ranks recorded
  int32_t segments = 1;          // pieces of its mapping
  // The fit's tree of domains (schema v7): the domain this one hangs from (-1 for the root, or
  // for a model without the tree) and how far this domain's aligned times can be off against the
  // parent's (+/- ns, -1 unknown). Two hosts that exchanged messages are bounded by those
  // messages, far tighter than by the sum of their uncertainties against the reference, which
  // compounds down a chain of hosts (pairUncertaintyNs).
  int32_t parent = -1;
  int64_t parent_uncertainty_ns = -1;
};

struct ClockModel {
  // Empty when the trace holds no model (then every mapping is the identity).
  std::vector<ClockDomain> domains;
  std::vector<ClockSegment> segments;                    // sorted by (domain, lo_ns)
  std::vector<std::pair<int32_t, int32_t>> rank_domain;  // (rank, domain), sorted by rank
  std::string method;               // "identity", "evidence", "wall-clock" (the weakest used)
  int64_t bounds = 0;               // bounds used in all
  int64_t violated = 0;             // bounds the model could not meet
  int64_t messages_checked = 0;     // matched messages between domains
  int64_t messages_before_sent = 0; // of those, received before they were sent once aligned

  // True when mapping changes no time (no model, one domain, or all offsets 0 and no drift).
  bool identity() const;
  // The largest uncertainty of any domain, ns (0 with one domain).
  int64_t maxUncertaintyNs() const;
  // The domain of `rank`, -1 if the model does not name it.
  int32_t domainOf(int32_t rank) const;
  // How far aligned times of domains `a` and `b` (ids) can be off against each other, ns: the
  // smaller of the sum of their uncertainty_ns and the sum of parent_uncertainty_ns along the
  // tree path between them; 0 when a == b. A domain the model does not name counts as uncertain
  // as the least certain one. Saturates at INT64_MAX (a damaged model may hold any value).
  int64_t pairUncertaintyNs(int32_t a, int32_t b) const;
  // The domain with id `id`, nullptr if none.
  const ClockDomain* find(int32_t id) const;
};

// Maps raw times of a rank to the reference time line. Cheap to copy; built once per reader.
class ClockMap {
 public:
  ClockMap() = default;
  explicit ClockMap(const ClockModel& model);
  bool identity() const { return identity_; }
  // The aligned time of raw time `t` on `rank` (unchanged for ranks the model does not name).
  int64_t map(int32_t rank, int64_t t) const;

 private:
  struct Piece {
    int64_t lo, ref, offset;
    double rate;
  };
  bool identity_ = true;
  // Ranks 0..dense_.size()-1: index into first_ (the rank's domain's first piece), -1 if none.
  std::vector<int32_t> rank_domain_;
  std::vector<std::pair<int32_t, int32_t>> sparse_;  // (rank, domain) for ranks past the dense part
  std::vector<std::vector<Piece>> pieces_;           // per domain, sorted by lo
};

// Stores `model` in the merged trace at `path` (replacing any earlier one): the tables
// clock_domain, clock_rank and clock_segment and the meta keys clock_*. Upgrades a version-2
// trace to version 3 on the way (new tables, views with aligned columns, index
// transfer_by_rank_time). Returns false with a one-line *error.
bool storeClockModel(const std::string& path, const ClockModel& model, std::string* error);

}  // namespace ringside::storage
