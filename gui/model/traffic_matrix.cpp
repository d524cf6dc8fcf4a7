#include "ringside/gui/traffic_matrix.h"

#include <algorithm>

#include "ringside/format/csv.h"

namespace ringside::gui {

TrafficMatrix trafficMatrix(const analyzer::Analysis& a) {
  TrafficMatrix m;
  m.n = static_cast<int>(a.traffic.size());
  for (const auto& row : a.traffic) m.n = std::max(m.n, static_cast<int>(row.size()));
  const size_t n = static_cast<size_t>(m.n);
  m.bytes.assign(n * n, 0);
  m.row_total.assign(n, 0);
  m.col_total.assign(n, 0);
  for (size_t s = 0; s < a.traffic.size(); ++s) {
    for (size_t d = 0; d < a.traffic[s].size(); ++d) {
      const int64_t b = a.traffic[s][d];
      m.bytes[s * n + d] = b;
      m.row_total[s] += b;
      m.col_total[d] += b;
      m.total += b;
      m.max = std::max(m.max, b);
    }
  }
  return m;
}

Rgb heatRgb(int64_t bytes, int64_t max, Rgb empty) {
  if (bytes <= 0 || max <= 0) return empty;
  return loadRgb(static_cast<double>(bytes) / static_cast<double>(max));
}

std::string matrixCsv(const TrafficMatrix& m) {
  std::vector<std::string> head{"src\\dst"};
  for (int d = 0; d < m.n; ++d) head.push_back(std::to_string(d));
  head.push_back("total");
  std::string out = format::csvLine(head);
  for (int s = 0; s < m.n; ++s) {
    std::vector<std::string> row{std::to_string(s)};
    for (int d = 0; d < m.n; ++d) row.push_back(std::to_string(m.at(s, d)));
    row.push_back(std::to_string(m.row_total[static_cast<size_t>(s)]));
    out += format::csvLine(row);
  }
  std::vector<std::string> total{"total"};
  for (int d = 0; d < m.n; ++d) total.push_back(std::to_string(m.col_total[static_cast<size_t>(d)]));
  total.push_back(std::to_string(m.total));
  return out + format::csvLine(total);
}

}  // namespace ringside::gui
