// gui/traffic_matrix.h — the traffic matrix view's data: bytes per (src, dst) rank pair,
// straight from Analysis::traffic, with row and column totals and the heat scale.
// No ImGui here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringside/analyzer/analysis.h"
#include "ringside/gui/palette.h"

namespace ringside::gui {

struct TrafficMatrix {
  int n = 0;                    // ranks (rows = src, columns = dst)
  std::vector<int64_t> bytes;   // n * n, row major
  std::vector<int64_t> row_total, col_total;
  int64_t total = 0, max = 0;
  int64_t at(int src, int dst) const { return bytes[static_cast<size_t>(src * n + dst)]; }
};

TrafficMatrix trafficMatrix(const analyzer::Analysis& a);

// The heat colour of a cell: loadRgb(bytes / max); an empty cell (0 bytes) gets `empty`.
Rgb heatRgb(int64_t bytes, int64_t max, Rgb empty);

// "src\dst,0,1,...,total" then a line per src rank and a "total" line; bytes as integers.
std::string matrixCsv(const TrafficMatrix& m);

}  // namespace ringside::gui
