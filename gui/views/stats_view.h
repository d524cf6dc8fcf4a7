// gui/stats_view.h — the statistics table: a row per op, library and power-of-two size
// bucket (count, total, mean, p50, p99, busbw), sortable by any column, filtered by text,
// clipped to the visible rows, exportable as CSV. Data, sorting and filtering come from
// stats_table.h; this file only draws.
#pragma once

#include <string>
#include <vector>

#include "export_widget.h"
#include "ringside/gui/stats_table.h"
#include "ringside/gui/timeline_model.h"

namespace ringside::gui {

class StatsView {
 public:
  void reset(const TimelineModel& model);
  void draw();
  // The CSV of the rows as shown (sorted and filtered).
  std::string csv() const { return statsCsv(rows_, shown_); }

 private:
  std::vector<StatsRow> rows_;
  std::vector<int> shown_;
  std::string filter_;
  CsvExportWidget export_{"stats.csv"};
};

}  // namespace ringside::gui
