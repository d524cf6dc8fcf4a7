// gui/hang_focus.cpp — findHangFocus(), markCulprits() (hang_focus.h).
#include "ringside/gui/hang_focus.h"

#include <algorithm>

namespace ringside::gui {

HangFocus findHangFocus(const TimelineModel& model) {
  HangFocus f;
  const analyzer::Analysis& a = model.analysis;
  for (const analyzer::hang::Verdict& v : a.autopsy) {
    int at = -1, before = -1;
    for (size_t i = 0; i < a.collectives.size(); ++i) {
      const analyzer::CollectiveInstance& c = a.collectives[i];
      if (c.comm != v.comm) continue;
      if (c.seq == v.seq) at = static_cast<int>(i);
      if (c.seq == v.seq - 1) before = static_cast<int>(i);
    }
    if (at < 0) continue;
    f.collective = at;
    f.rule = v.rule;
    f.culprits = v.culprits;
    const analyzer::CollectiveInstance& c = a.collectives[static_cast<size_t>(at)];
    int64_t t0 = c.first_start_ns;
    if (before >= 0) t0 = std::min(t0, a.collectives[static_cast<size_t>(before)].first_start_ns);
    const int64_t t1 = std::max({model.end_ns, c.last_end_ns, t0 + 1});
    const int64_t margin = (t1 - t0) / 10;  // room on both sides: the ends stay readable
    f.range = {std::max(model.start_ns, t0 - margin), t1 + margin};
    return f;
  }
  return f;
}

void markCulprits(const HangFocus& focus, TimelineModel* model) {
  for (Lane& lane : model->lanes) {
    if (lane.kind != LaneKind::kRank) continue;
    if (std::find(focus.culprits.begin(), focus.culprits.end(), lane.rank) != focus.culprits.end()) {
      lane.name += " << " + focus.rule;
    }
  }
}

}  // namespace ringside::gui
