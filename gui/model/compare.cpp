#include "ringside/gui/compare.h"

#include <map>
#include <utility>

namespace ringside::gui {
namespace {

int64_t bucketLo(int64_t bytes) {  // as the analyzer's diff() buckets sizes
  if (bytes <= 0) return 0;
  int64_t lo = 1;
  while (lo <= bytes / 2) lo *= 2;
  return lo;
}

}  // namespace

void buildCompare(const analyzer::Analysis& a, const analyzer::Analysis& b, const std::string& label_a,
                  const std::string& label_b, CompareModel* out) {
  *out = CompareModel{};
  analyzer::diff(a, b, label_a, label_b, &out->diff);
  using Key = std::pair<std::string, int64_t>;
  // Collectives are ordered by first start, so the k-th of a group is the k-th in time.
  std::map<Key, std::vector<int>> gb;
  for (size_t i = 0; i < b.collectives.size(); ++i) {
    gb[{b.collectives[i].op, bucketLo(b.collectives[i].bytes)}].push_back(static_cast<int>(i));
  }
  std::map<Key, size_t> taken;
  out->partner_of_a.assign(a.collectives.size(), -1);
  out->partner_of_b.assign(b.collectives.size(), -1);
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    Key key{a.collectives[i].op, bucketLo(a.collectives[i].bytes)};
    auto it = gb.find(key);
    size_t& k = taken[key];
    if (it == gb.end() || k >= it->second.size()) continue;
    int j = it->second[k++];
    ComparePair p;
    p.a = static_cast<int>(i);
    p.b = j;
    const int64_t da = a.collectives[i].duration_ns, db = b.collectives[static_cast<size_t>(j)].duration_ns;
    p.speedup = da > 0 && db > 0 ? static_cast<double>(da) / static_cast<double>(db) : 0;
    out->partner_of_a[i] = j;
    out->partner_of_b[static_cast<size_t>(j)] = static_cast<int>(i);
    out->pairs.push_back(p);
  }
  for (const analyzer::DiffRow& row : out->diff.rows) {
    int found = -1;
    for (size_t p = 0; p < out->pairs.size() && found < 0; ++p) {
      const auto& c = a.collectives[static_cast<size_t>(out->pairs[p].a)];
      if (c.op == row.op && bucketLo(c.bytes) == row.size_lo) found = static_cast<int>(p);
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
