// gui/model/timeline_build.h — internal to gui/model: the lanes of a TimelineModel built from
// the calls as the loader keeps them (interned comm and op names, no strings per row). Shared
// by buildTimeline (timeline_model.cpp) and loadTimeline (timeline_loader.cpp); not a public
// header.
#pragma once

#include <cstdint>
#include <deque>
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

// Replaces `out`'s analysis and lanes: a rank lane per rank (host headers first with 2+ hosts)
// with its calls (rank by rank, as the reader delivers them) and its phases (`phases`, then any
// left in analysis.phases, which end up in out->phases too), a link lane per analysed link, the
// time bounds and the overview. `out->path` is kept.
void buildFromCompact(analyzer::Analysis analysis, const std::vector<std::string>& comms,
                      const std::vector<std::string>& ops, const std::vector<CompactCall>& calls,
                      PhaseRows phases, TimelineModel* out);
// The same, freeing `calls` as soon as the lanes hold them (before the phases' events are made).
void buildFromCompact(analyzer::Analysis analysis, const std::vector<std::string>& comms,
                      const std::vector<std::string>& ops, std::vector<CompactCall>&& calls,
                      PhaseRows phases, TimelineModel* out);

}  // namespace ringside::gui::detail
