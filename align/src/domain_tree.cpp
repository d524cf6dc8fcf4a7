// align/src/domain_tree.cpp — the fit's tree of domains: what bounds two hosts against each other.
//
// Each domain's uncertainty_ns bounds it against the reference. Between two hosts, the sum of the
// two is sound but compounds down a chain: in a tree all-reduce over 2,048 hosts every host is
// placed through its parent, each hop adds the window its messages leave (about +/-110 us for
// 1 MiB), and two leaves 11 levels down are +/-2.4 ms apart by the sum while the messages between
// a leaf and its parent bound them to +/-110 us. Every path between two domains bounds their
// relative error by the sum of its edges (the errors along it add up to theirs), so one tree of
// the least total bound, over the links jointOffsets found and each domain's own bound against the
// reference, serves every pair: two domains that exchanged messages meet at once.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "joint.h"

namespace ringside::align::detail {
namespace {

struct Edge {
  int64_t bound;
  int32_t a, b;
};

int64_t ceilNs(double v) {
  if (!(v < 9e18)) return INT64_MAX;
  return std::max<int64_t>(0, static_cast<int64_t>(std::ceil(v)));
}

// Union-find over domain indexes.
struct Sets {
  std::vector<int32_t> up;
  explicit Sets(size_t n) : up(n) { std::iota(up.begin(), up.end(), 0); }
  int32_t root(int32_t x) {
    while (up[static_cast<size_t>(x)] != x) {
      up[static_cast<size_t>(x)] = up[static_cast<size_t>(up[static_cast<size_t>(x)])];
      x = up[static_cast<size_t>(x)];
    }
    return x;
  }
  bool join(int32_t a, int32_t b) {
    a = root(a);
    b = root(b);
    if (a == b) return false;
    up[static_cast<size_t>(a)] = b;
    return true;
  }
};

}  // namespace

void chainDomains(const std::vector<Link>& links, storage::ClockModel* model) {
  auto& domains = model->domains;
  const size_t n = domains.size();
  for (storage::ClockDomain& d : domains) d.parent = -1, d.parent_uncertainty_ns = -1;
  if (n < 2) return;
  std::vector<Edge> edges;
  edges.reserve(n + links.size());
  for (size_t d = 1; d < n; ++d) {
    edges.push_back({std::max<int64_t>(0, domains[d].uncertainty_ns), static_cast<int32_t>(d), 0});
  }
  for (const Link& l : links) {
    if (l.a < 0 || l.b < 0 || static_cast<size_t>(l.a) >= n || static_cast<size_t>(l.b) >= n) continue;
    edges.push_back({ceilNs(l.bound), l.a, l.b});
  }
  // Kruskal: the least edges first (ties: the reference's edges, listed first, win).
  std::stable_sort(edges.begin(), edges.end(),
                   [](const Edge& x, const Edge& y) { return x.bound < y.bound; });
  Sets sets(n);
  std::vector<std::vector<std::pair<int32_t, int64_t>>> next(n);
  for (const Edge& e : edges) {
    if (!sets.join(e.a, e.b)) continue;
    next[static_cast<size_t>(e.a)].emplace_back(e.b, e.bound);
    next[static_cast<size_t>(e.b)].emplace_back(e.a, e.bound);
  }
  // Hang it from the reference.
  // (Built from its first element: GCC's -O3 -Wnull-dereference took seen[0] on a vector of
  // size n for a possible null dereference, n >= 2 notwithstanding.)
  std::vector<char> seen{1};
  seen.resize(n, 0);
  std::vector<int32_t> todo{0};
  while (!todo.empty()) {
    const int32_t at = todo.back();
    todo.pop_back();
    for (const auto& [to, bound] : next[static_cast<size_t>(at)]) {
      if (seen[static_cast<size_t>(to)]) continue;
      seen[static_cast<size_t>(to)] = 1;
      domains[static_cast<size_t>(to)].parent = domains[static_cast<size_t>(at)].id;
      domains[static_cast<size_t>(to)].parent_uncertainty_ns = bound;
      todo.push_back(to);
    }
  }
}

}  // namespace ringside::align::detail
