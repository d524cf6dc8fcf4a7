// gui/model/timeline_build.h — internal to gui/model: the lanes of a TimelineModel built from
// the calls as the loader keeps them (interned comm and op names, no strings per row). Shared
// by buildTimeline (timeline_model.cpp) and loadTimeline (timeline_loader.cpp); not a public
// header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/gui/timeline_model.h"

namespace ringside::gui::detail {

// One recorded call: interned comm and op, no strings per row.
struct CompactCall {
  int32_t rank = -1;
  int32_t comm = 0;  // index into comms
  int32_t op = 0;    // index into ops
  bool failed = false;
  int64_t seq = 0;
  int64_t start_ns = 0, end_ns = 0;
};

// Interns short strings; the last hit is checked first (consecutive rows share comm and op).
class Interner {
 public:
  int32_t get(std::string_view s) {
    if (last_ >= 0 && names_[static_cast<size_t>(last_)] == s) return last_;
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == s) return last_ = static_cast<int32_t>(i);
    }
    names_.emplace_back(s);
    return last_ = static_cast<int32_t>(names_.size() - 1);
  }
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  int32_t last_ = -1;
};

// Phase rows as the loader collects them (AnalysisOptions::on_phase): PhaseRecord::label is an
// index into `names` until buildFromCompact maps it to the model's labels.
struct PhaseRows {
  Interner names;
  std::deque<PhaseRecord> records;
};

// `p` as a PhaseRecord of instance `instance` with label `label`.
PhaseRecord phaseRecord(const analyzer::PhaseStats& p, int32_t instance, int32_t label);

// `comms` (the calls' interned names), then the analysis' comms that no call named.
std::vector<std::string> withAnalysisComms(std::vector<std::string> comms,
                                           const analyzer::Analysis& a);

// (comm, seq) -> collective instance; seqs count from 0, so a vector per comm, a map beyond.
class InstanceIndex {
 public:
  InstanceIndex() = default;
  InstanceIndex(const analyzer::Analysis& a, const std::vector<std::string>& comms);
  int32_t find(int32_t comm, int64_t seq) const {
    if (comm < 0 || static_cast<size_t>(comm) >= by_comm_.size()) return -1;
    const auto& v = by_comm_[static_cast<size_t>(comm)];
    if (seq >= 0 && static_cast<size_t>(seq) < v.size()) return v[static_cast<size_t>(seq)];
    auto it = sparse_.find({comm, seq});
    return it == sparse_.end() ? -1 : it->second;
  }

 private:
  std::vector<std::vector<int32_t>> by_comm_;
  std::map<std::pair<int32_t, int64_t>, int32_t> sparse_;
};

// What a model's unbuilt rank lanes are built from (TimelineModel::lane_sources): the calls, one
// copy shared by the early and the full model (the loader's rows, rank by rank), and per lane its
// span of them and of its phase records (indices into TimelineModel::phases).
struct LaneSources {
  std::shared_ptr<const std::vector<CompactCall>> calls;
  std::vector<int> op_label;  // CompactCall::op -> TimelineModel::labels
  InstanceIndex instances;    // (comm, seq) -> TimelineEvent::collective
  int64_t end_ns = 0;         // a call that never returned is drawn to here (the analysis' end)
  std::vector<std::pair<int64_t, int64_t>> call_span;   // per lane: its calls [first, second)
  std::vector<uint32_t> phase_order;                     // indices into phases, lane by lane
  std::vector<std::pair<int64_t, int64_t>> phase_span;  // per lane: its part of phase_order
  std::vector<std::pair<int32_t, int32_t>> rows;        // per lane: its call rows, phase rows
  // `c` as its lane's event: its op's label, its instance, drawn to end_ns if it never returned.
  TimelineEvent event(const CompactCall& c) const {
    return {c.start_ns, endOf(c), op_label[static_cast<size_t>(c.op)], instances.find(c.comm, c.seq), c.failed};
  }
  // A call that never returned (a hang: end_ns NULL) is drawn to the end of the trace, where the
  // rank was still inside it.
  int64_t endOf(const CompactCall& c) const { return c.end_ns < c.start_ns ? std::max(c.start_ns, end_ns) : c.end_ns; }
};

// Replaces `out`'s analysis and lanes: a rank lane per rank (host headers first with 2+ hosts)
// with its calls (`calls`: rank by rank, as the reader delivers them; each rank's together) and
// its phases (`phases`, then any left in analysis.phases, which end up in out->phases too), a
// link lane per analysed link, the time bounds and the overview. The rank lanes' rows are built
// at once, or with `lazy` when first needed (out->lane_sources keeps `calls`). `out->path` is kept.
void buildFromCompact(analyzer::Analysis analysis, const std::vector<std::string>& comms,
                      const std::vector<std::string>& ops,
                      std::shared_ptr<const std::vector<CompactCall>> calls, PhaseRows phases,
                      bool lazy, TimelineModel* out);

}  // namespace ringside::gui::detail
