// gui/matrix_view.h — the traffic matrix: a rank x rank heat map of bytes (row = src,
// column = dst) with the numbers on hover, a legend and CSV export. The data is
// traffic_matrix.h's (Analysis::traffic); this file only draws it.
#pragma once

#include <imgui.h>

#include "export_widget.h"
#include "ringside/gui/timeline_model.h"
#include "ringside/gui/traffic_matrix.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

class MatrixView {
 public:
  void reset(const TimelineModel& model);
  void draw(const TimelineModel& model, ViewState* view);

 private:
  struct Grid {  // where the cells are: the top-left cell's corner and a cell's side, pixels
    float x0 = 0, y0 = 0, cell = 0;
  };
  // The parts of draw(), top to bottom, then the mouse.
  void drawAxes(const Grid& g, ImVec2 origin) const;
  void drawCells(const Grid& g, LinkRef hovered) const;
  void drawLegend(const Grid& g, float ly, float lw) const;
  void hoverCell(const Grid& g, ViewState* view) const;

  TrafficMatrix matrix_;
  CsvExportWidget export_{"traffic-matrix.csv"};
};

}  // namespace ringside::gui
