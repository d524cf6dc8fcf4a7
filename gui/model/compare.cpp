#include "ringside/gui/compare.h"

#include <algorithm>

#include "ringside/format/units.h"

namespace ringside::gui {

std::string describeTrace(const std::string& label, const analyzer::Analysis& a) {
  const size_t ranks = a.ranks_present.size();
  std::string out = label + ": " + std::to_string(ranks) + (ranks == 1 ? " rank, " : " ranks, ") +
                    std::to_string(a.collectives.size()) + " collectives over " +
                    format::durationSignificant(static_cast<double>(std::max<int64_t>(0, a.end_ns - a.start_ns)));
  // The libraries it used, in order of first appearance (ops are per library).
  std::vector<std::string> libraries;
  for (const analyzer::OpStats& o : a.ops) {
    if (!o.library.empty() && std::find(libraries.begin(), libraries.end(), o.library) == libraries.end()) {
      libraries.push_back(o.library);
    }
  }
  for (size_t i = 0; i < libraries.size(); ++i) out += (i ? "+" : ", ") + libraries[i];
  return out;
}

void buildCompare(const analyzer::Analysis& a, const analyzer::Analysis& b, const std::string& label_a,
                  const std::string& label_b, CompareModel* out) {
  *out = CompareModel{};
  analyzer::diff(a, b, label_a, label_b, &out->diff);
  out->partner_of_a.assign(a.collectives.size(), -1);
  out->partner_of_b.assign(b.collectives.size(), -1);
  // diff()'s own alignment, by A's order.
  for (const auto& [i, j] : analyzer::pairCollectives(a, b)) {
    ComparePair p;
    p.a = i;
    p.b = j;
    const int64_t da = a.collectives[static_cast<size_t>(i)].duration_ns;
    const int64_t db = b.collectives[static_cast<size_t>(j)].duration_ns;
    p.speedup = da > 0 && db > 0 ? static_cast<double>(da) / static_cast<double>(db) : 0;
    out->partner_of_a[static_cast<size_t>(i)] = j;
    out->partner_of_b[static_cast<size_t>(j)] = i;
    out->pairs.push_back(p);
  }
  for (const analyzer::DiffRow& row : out->diff.rows) {
    int found = -1;
    for (size_t p = 0; p < out->pairs.size() && found < 0; ++p) {
      const auto& c = a.collectives[static_cast<size_t>(out->pairs[p].a)];
      if (c.op == row.op && analyzer::sizeBucketLo(c.bytes) == row.size_lo) {
        found = static_cast<int>(p);
      }
    }
    out->first_pair_of_row.push_back(found);
  }
}

int64_t CompareModel::offsetFor(const analyzer::Analysis& a, const analyzer::Analysis& b, int pair) const {
  if (pair >= 0 && static_cast<size_t>(pair) < pairs.size()) {
    return b.collectives[static_cast<size_t>(pairs[static_cast<size_t>(pair)].b)].first_start_ns -
           a.collectives[static_cast<size_t>(pairs[static_cast<size_t>(pair)].a)].first_start_ns;
  }
  return b.start_ns - a.start_ns;
}

}  // namespace ringside::gui
