// storage/src/clock_model.cpp — the clock model's mapping (ClockMap) and its storage.
#include "ringside/storage/clock_model.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace ringside::storage {

bool ClockModel::identity() const {
  if (domains.size() <= 1) return true;
  for (const ClockSegment& s : segments) {
    if (s.offset_ns != 0 || s.rate != 0.0) return false;
  }
  return true;
}

int64_t ClockModel::maxUncertaintyNs() const {
  int64_t worst = 0;
  for (const ClockDomain& d : domains) worst = std::max(worst, d.uncertainty_ns);
  return worst;
}

int32_t ClockModel::domainOf(int32_t rank) const {
  auto it = std::lower_bound(rank_domain.begin(), rank_domain.end(), std::make_pair(rank, INT32_MIN));
  return it != rank_domain.end() && it->first == rank ? it->second : -1;
}

const ClockDomain* ClockModel::find(int32_t id) const {
  // Domains are numbered from 0 in order (align/), and read sorted by id (a reader of any file).
  if (id >= 0 && static_cast<size_t>(id) < domains.size() && domains[static_cast<size_t>(id)].id == id) {
    return &domains[static_cast<size_t>(id)];
  }
  auto it = std::lower_bound(domains.begin(), domains.end(), id,
                             [](const ClockDomain& d, int32_t x) { return d.id < x; });
  return it != domains.end() && it->id == id ? &*it : nullptr;
}

namespace {
int64_t addSaturating(int64_t a, int64_t b) {  // both >= 0
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}
}  // namespace

int64_t ClockModel::pairUncertaintyNs(int32_t a, int32_t b) const {
  if (a == b) return 0;
  auto own = [this](int32_t id) {
    const ClockDomain* d = find(id);
    return d != nullptr ? std::max<int64_t>(0, d->uncertainty_ns) : maxUncertaintyNs();
  };
  int64_t best = addSaturating(own(a), own(b));
  // Up the tree from a (each ancestor with its distance from a), then from b until the paths meet.
  // A damaged model may hold a loop or a missing parent: every walk stops after as many steps as
  // there are domains, or where the chain breaks.
  auto step = [this](int32_t* at, int64_t* dist) {
    const ClockDomain* d = find(*at);
    if (d == nullptr || d->parent < 0 || d->parent_uncertainty_ns < 0) return false;
    *dist = addSaturating(*dist, d->parent_uncertainty_ns);
    *at = d->parent;
    return true;
  };
  std::unordered_map<int32_t, int64_t> from_a;
  int32_t at = a;
  int64_t dist = 0;
  for (size_t i = 0; i <= domains.size() && from_a.emplace(at, dist).second; ++i) {
    if (!step(&at, &dist)) break;
  }
  at = b;
  dist = 0;
  for (size_t i = 0; i <= domains.size(); ++i) {
    if (auto it = from_a.find(at); it != from_a.end()) {
      best = std::min(best, addSaturating(dist, it->second));
      break;
    }
    if (!step(&at, &dist)) break;
  }
  return best;
}

ClockMap::ClockMap(const ClockModel& model) : identity_(model.identity()) {
  if (identity_) return;
  int32_t max_domain = -1;
  for (const ClockSegment& s : model.segments) max_domain = std::max(max_domain, s.domain);
  if (max_domain < 0 || max_domain > (1 << 20)) {  // a damaged model: no mapping
    identity_ = true;
    return;
  }
  pieces_.resize(static_cast<size_t>(max_domain) + 1);
  for (const ClockSegment& s : model.segments) {
    if (s.domain < 0) continue;
    pieces_[static_cast<size_t>(s.domain)].push_back({s.lo_ns, s.ref_ns, s.offset_ns, s.rate});
  }
  for (auto& p : pieces_) {
    std::sort(p.begin(), p.end(), [](const Piece& a, const Piece& b) { return a.lo < b.lo; });
  }
  constexpr int32_t kDense = 1 << 20;
  for (const auto& [rank, domain] : model.rank_domain) {
    if (domain < 0 || domain > max_domain) continue;
    if (rank >= 0 && rank < kDense) {
      if (static_cast<size_t>(rank) >= rank_domain_.size()) rank_domain_.resize(static_cast<size_t>(rank) + 1, -1);
      rank_domain_[static_cast<size_t>(rank)] = domain;
    } else {
      sparse_.emplace_back(rank, domain);
    }
  }
  std::sort(sparse_.begin(), sparse_.end());
}

int64_t ClockMap::map(int32_t rank, int64_t t) const {
  if (identity_) return t;
  int32_t domain = -1;
  if (rank >= 0 && static_cast<size_t>(rank) < rank_domain_.size()) {
    domain = rank_domain_[static_cast<size_t>(rank)];
  } else if (!sparse_.empty()) {
    auto it = std::lower_bound(sparse_.begin(), sparse_.end(), std::make_pair(rank, INT32_MIN));
    if (it != sparse_.end() && it->first == rank) domain = it->second;
  }
  if (domain < 0) return t;
  const std::vector<Piece>& pieces = pieces_[static_cast<size_t>(domain)];
  if (pieces.empty()) return t;
  // The last piece starting at or before t (the first piece covers everything before it).
  auto it = std::upper_bound(pieces.begin(), pieces.end(), t,
                             [](int64_t v, const Piece& p) { return v < p.lo; });
  const Piece& p = it == pieces.begin() ? *it : *(it - 1);
  // As the views compute it in SQL: the integer difference (a double when it overflows), times
  // the rate, rounded half away from zero.
  int64_t diff = 0;
  const double span = __builtin_sub_overflow(t, p.ref, &diff)
                          ? static_cast<double>(t) - static_cast<double>(p.ref)
                          : static_cast<double>(diff);
  const double drift = std::round(span * p.rate);
  // Saturate: a damaged trace's times must not overflow.
  const double shifted = static_cast<double>(t) + static_cast<double>(p.offset) + drift;
  if (!(shifted < 9.2e18)) return INT64_MAX;
  if (!(shifted > -9.2e18)) return INT64_MIN;
  return t + p.offset + static_cast<int64_t>(drift);
}

}  // namespace ringside::storage

