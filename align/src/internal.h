// align/src/internal.h — the pieces of the clock fit, shared by align.cpp, domains.cpp,
// evidence.cpp and fit.cpp. Not installed.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringside/align/input_sides.h"
#include "ringside/storage/records.h"
#include "ringside/storage/trace_reader.h"
#include "side_runs.h"

namespace ringside::align::detail {

// A clock domain: ranks that read one kernel clock.
struct Domain {
  std::string host;
  std::string boot_id;
  std::vector<int32_t> ranks;
  // Wall-clock anchors of its ranks: (raw clock ns, unix ns - raw clock ns), sorted by raw time.
  std::vector<std::pair<int64_t, int64_t>> wall;
};

struct Domains {
  std::vector<Domain> list;  // list[0] is the reference (the domain of the lowest rank)
  std::unordered_map<int32_t, int32_t> of_rank;
  int32_t of(int32_t rank) const {
    auto it = of_rank.find(rank);
    return it == of_rank.end() ? -1 : it->second;
  }
};

// Groups the ranks into domains (same boot id and time namespace; without a boot id, the same
// host and a monotonic-to-wall offset within 100 ms) and collects their anchors.
bool findDomains(storage::TraceReader& raw, Domains* out, std::string* error);
// The grouping alone, of rank rows in the order TraceReader::ranks() gives them (by rank, then
// start): each domain's ranks, and the ranks' starts as its only anchors.
void assignDomains(std::vector<storage::RankInfo> ranks, Domains* out);

// What one matched call says, per domain present: the latest raw time a rank of the domain had
// entered in a way the others wait for (`enter`), and the earliest raw time a rank of the domain
// left in a way that waited for the others (`exit`). INT64_MIN / INT64_MAX when the domain has
// none. For every pair of domains A != B, the true time of enter(A) <= that of exit(B).
struct Mark {
  int32_t domain;
  int64_t enter;
  int64_t exit;
};

// A message between domains: sent (posted) on `from` at raw `sent`, received (completed) on
// `to` at raw `received`; the true time of sent <= that of received.
struct Message {
  int32_t from;
  int32_t to;
  int64_t sent;
  int64_t received;
};

struct Evidence {
  std::vector<Mark> marks;               // instance i: marks[begin[i] .. begin[i+1])
  std::vector<uint32_t> begin{0};
  std::vector<Message> messages;         // every matched message between two domains
  std::vector<Message> representatives;  // the tightest message per (from, to, 10 ms of receipt)
  int64_t instances() const { return static_cast<int64_t>(begin.size()) - 1; }
};

// Of one matched call (instance i), the two latest entries and the two earliest exits among the
// `usable` domains, valued by enter_value(mark) and exit_value(mark) (aligned times, perhaps
// loosened): the latest entry other than a domain's own is what that domain's exit must follow,
// the earliest other exit what its entry must precede. A call has one mark per domain.
struct Extremes {
  struct Best {
    int64_t mark = -1;  // index into Evidence::marks; -1: none
    double value = 0;
  };
  Best enter[2], exit[2];  // [0] the extreme, [1] the runner-up
  const Best& enterOtherThan(uint32_t k) const {
    return enter[0].mark == static_cast<int64_t>(k) ? enter[1] : enter[0];
  }
  const Best& exitOtherThan(uint32_t k) const {
    return exit[0].mark == static_cast<int64_t>(k) ? exit[1] : exit[0];
  }
};

template <typename EnterValue, typename ExitValue>
Extremes extremesOf(const Evidence& ev, int64_t i, const std::vector<char>& usable,
                    EnterValue enter_value, ExitValue exit_value) {
  Extremes x;
  auto keep = [](Extremes::Best* best, int64_t mark, double value, bool later) {
    const auto better = [&](const Extremes::Best& b) {
      return b.mark < 0 || (later ? value > b.value : value < b.value);
    };
    if (better(best[0])) {
      best[1] = best[0];
      best[0] = {mark, value};
    } else if (better(best[1])) {
      best[1] = {mark, value};
    }
  };
  for (uint32_t k = ev.begin[static_cast<size_t>(i)]; k < ev.begin[static_cast<size_t>(i) + 1]; ++k) {
    const Mark& m = ev.marks[k];
    if (!usable[static_cast<size_t>(m.domain)]) continue;
    if (m.enter != INT64_MIN) keep(x.enter, k, enter_value(m), true);
    if (m.exit != INT64_MAX) keep(x.exit, k, exit_value(m), false);
  }
  return x;
}

bool gatherCalls(storage::TraceReader& raw, const Domains& domains, Evidence* out,
                 std::string* error);
bool gatherMessages(storage::TraceReader& raw, const Domains& domains, Evidence* out,
                    std::string* error);

// The side that `row` is when it is a send, or a completed receive, between two domains.
bool sideOf(const Domains& domains, const storage::TransferRow& row, Side* out);
// Pairs the k-th send of each (src, dst, slot) with its k-th receive into out->messages, and
// picks out->representatives. The result does not depend on the order the sides were added in;
// *sides is emptied.
void pairSides(SideRuns* sides, const Domains& domains, Evidence* out);
// The sides a merge's inputs gave (InputSides, read beside the copy), when they are those of the
// merged trace whose domains are `domains`: then their runs moved to *sides and true. False (*why
// says which check failed) when the caller must read the merged trace instead.
bool takeInputSides(InputSides& from, const Domains& domains, SideRuns* sides, std::string* why);

// A domain's mapping f: aligned = raw + f(raw), f piecewise linear.
struct Piece {
  int64_t lo = INT64_MIN;  // raw times from here on (the first piece covers all before)
  int64_t ref = 0;
  double offset = 0;       // f(ref)
  double rate = 0;         // df/dt
};
struct Mapping {
  std::vector<Piece> pieces{Piece{}};
  double at(int64_t t) const {
    const Piece* p = &pieces.front();
    for (const Piece& q : pieces) {
      if (q.lo <= t) p = &q;
    }
    return p->offset + (static_cast<double>(t) - static_cast<double>(p->ref)) * p->rate;
  }
};

// A bound on f at raw time t: f(t) >= v (lower) or f(t) <= v (upper).
struct Point {
  int64_t t;
  double v;
};

struct Fit {
  Mapping map;
  double slack = 0;       // the least slack of any bound (negative: some bound is not met)
  int64_t violated = 0;   // bounds not met
  bool two_sided = false; // bounds from both sides (else the offset is only limited one way)
};

// The mapping that meets the bounds with the most slack: a line (drift between -1000 and
// +1000 ppm, the smallest |drift| among the near-best), split into pieces where one line cannot
// meet them. With bounds on one side only, the estimate `prior` moved just enough to meet them.
Fit fitMapping(std::vector<Point> lower, std::vector<Point> upper, double prior);

// Bounds of `lower`/`upper` that mapping `m` does not meet (by more than half a nanosecond).
int64_t countViolated(const std::vector<Point>& lower, const std::vector<Point>& upper,
                      const Mapping& m);

}  // namespace ringside::align::detail
