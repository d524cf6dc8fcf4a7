// analyzer/analysis_phases.h — phases of collectives from their sends, during the transfer pass.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis_state.h"
#include "pending_instances.h"

namespace ringside::analyzer::detail {

// Buffers the sends of the instances whose phases we report (a phase named by the transfer, or
// Gloo's ring all-reduce, whose phases are inferred) and folds an instance's sends into
// PhaseStats as soon as the stream, ordered by start, has passed the instance's last_end_ns: no
// later send can belong to it. An instance's rows go to AnalysisOptions::on_phase, or are kept
// in Analysis::phases or folded into Analysis::phases_left_out (AnalysisOptions::phase_rows).
class PhaseBuilder {
 public:
  explicit PhaseBuilder(AnalysisState& s) : s_(s), pending_(s.out->collectives.size()) {}

  // Folds every instance that ended before `start_ns`.
  void foldEndedBefore(int64_t start_ns) {
    pending_.endedBefore(start_ns, [this](int32_t instance, std::vector<Send>&& sends) {
      fold(instance, std::move(sends));
    });
  }
  // A send row of instance `instance`; `phase` is its PhaseNames id, -1 none.
  void addSend(int32_t instance, const storage::TransferRow& row, int phase, int64_t end);
  void foldAll();  // at the end of the stream

 private:
  struct Send {
    int rank;
    int phase;  // PhaseNames id; -1 none
    int step;
    int64_t start, end;
  };
  void fold(int32_t instance, std::vector<Send> sends);
  void orderByRank(std::vector<Send>* sends);
  void inferGlooRingPhases(std::vector<Send>* sends);
  void addPhaseRows(const CollectiveInstance& c, std::vector<Send>* sends, bool inferred);
  void addPhaseRow(const CollectiveInstance& c, const Send* from, const Send* to, int64_t lo,
                   int64_t hi, bool inferred);
  void keepRows();  // rows_ into Analysis::phases or left_out_

  AnalysisState& s_;
  PendingInstances<std::vector<Send>> pending_;  // instance -> its sends so far
  std::vector<Send> scratch_;                    // one rank's sends, in fold
  std::vector<uint32_t> order_;                  // fold's: the sends' indices by (rank, start)
  std::vector<size_t> rank_first_;               // orderByRank's counts
  std::vector<PhaseStats> rows_;                // the instance's rows being made (without on_phase)
  int64_t rows_made_ = 0;                       // rows made so far, all instances
  std::map<std::string, PhaseTotal> left_out_;  // phase name -> rows not kept, folded
};

}  // namespace ringside::analyzer::detail
