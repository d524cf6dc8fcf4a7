// gui/compare_view.h — A/B compare: trace A's and trace B's timelines stacked on one
// shared zoom (B shifted so the selected pair starts together), the analyzer's diff table
// with rows coloured by speed-up or slow-down, the verdicts, and both traces' findings.
//
// The pairing is compare.h's (by order within op and size); a selection in either timeline
// selects its partner in the other.
#pragma once

#include <vector>

#include "inspector_view.h"
#include "ringside/gui/compare.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"
#include "timeline_view.h"

namespace ringside::gui {

class CompareView {
 public:
  void reset(const TimelineModel& a, const TimelineModel& b);
  void draw(const TimelineModel& a, const TimelineModel& b, ViewState* view, bool dark,
            const std::vector<int>* marked_a);
  const CompareModel& model() const { return compare_; }
  TimelineView& timelineA() { return ta_; }
  const TimelineView& timelineA() const { return ta_; }
  TimelineView& timelineB() { return tb_; }
  const TimelineView& timelineB() const { return tb_; }
  // Selects A's collective `a` (and its partner) and lines the timelines up on them.
  void selectA(int a);
  void selectB(int b);
  int64_t offsetNs() const { return offset_ns_; }

 private:
  // The parts of draw(), top to bottom, then what the clicks asked for.
  void drawTimelines(const TimelineModel& a, const TimelineModel& b, ViewState* view, bool dark,
                     const std::vector<int>* marked_a);
  void drawSummary(const TimelineModel& a, const TimelineModel& b) const;
  InspectAction drawDiffTable(const TimelineModel& a) const;
  static void drawDiffCells(const analyzer::DiffRow& row);
  void drawSelectedPair(const TimelineModel& a, const TimelineModel& b) const;
  void drawVerdicts() const;
  void apply(const TimelineModel& a, const TimelineModel& b, ViewState* view, InspectAction action,
             const InspectAction& fb);

  CompareModel compare_;
  TimelineView ta_, tb_;
  int64_t base_offset_ns_ = 0;  // B start - A start
  int64_t offset_ns_ = 0;
  const TimelineModel* a_ = nullptr;
  const TimelineModel* b_ = nullptr;
};

}  // namespace ringside::gui
