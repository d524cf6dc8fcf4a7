// storage/src/clock_model.cpp — the clock model's mapping (ClockMap) and its storage.
#include "ringside/storage/clock_model.h"

#include <algorithm>
#include <cmath>

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

