// analyzer/src/hang.cpp — the hang verdict (hang.h).
#include "ringside/analyzer/hang.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "ringside/format/units.h"

namespace ringside::analyzer {
namespace {

using storage::FlightCallRow;

bool isOpen(const FlightCallRow& c) { return c.exit_ns == storage::kNone && c.state != "failed"; }

// "gloo/4/0" spans a world of 4: its size is the number after the library.
bool spansWorld(const std::string& comm, int32_t world_size) {
  const size_t a = comm.find('/');
  const size_t b = a == std::string::npos ? a : comm.find('/', a + 1);
  if (b == std::string::npos || world_size <= 0) return false;
  return comm.substr(a + 1, b - a - 1) == std::to_string(world_size);
}

struct Point {
  std::string comm;
  int64_t seq = -1;
};

// The stuck point: the communicator and lowest open seq whose first entry is the oldest.
Point stuckPoint(const std::vector<HangRank>& ranks) {
  std::map<std::string, std::pair<int64_t, int64_t>> lowest;  // comm -> (seq, earliest entry)
  for (const HangRank& r : ranks) {
    for (const FlightCallRow& c : r.calls) {
      if (!isOpen(c)) continue;
      auto [it, fresh] = lowest.emplace(c.comm, std::pair{c.seq, c.enter_ns});
      if (!fresh && (c.seq < it->second.first ||
                     (c.seq == it->second.first && c.enter_ns < it->second.second)))
        it->second = {c.seq, c.enter_ns};
    }
  }
  Point p;
  int64_t oldest = INT64_MAX;
  for (const auto& [comm, at] : lowest) {
    if (at.second < oldest) p = {comm, at.first}, oldest = at.second;
  }
  return p;
}

std::string callText(const FlightCallRow& c) {
  return c.op + " #" + std::to_string(c.seq) + " " + std::to_string(c.bytes) + " bytes" +
         (c.dtype.empty() ? "" : " " + c.dtype) + " (" + c.state + ")";
}

// What rank `r` did at the stuck point: its call of that seq, or null; *last its highest seq.
const FlightCallRow* callAt(const HangRank& r, const Point& p, const FlightCallRow** last) {
  const FlightCallRow* at = nullptr;
  *last = nullptr;
  for (const FlightCallRow& c : r.calls) {
    if (c.comm != p.comm) continue;
    if (c.seq == p.seq) at = &c;
    if (*last == nullptr || c.seq > (*last)->seq) *last = &c;
  }
  return at;
}

bool sameCall(const FlightCallRow& a, const FlightCallRow& b) {
  return a.op == b.op && a.bytes == b.bytes && a.dtype == b.dtype && a.root == b.root;
}

}  // namespace

HangVerdict judgeHang(const std::vector<HangRank>& ranks, int32_t world_size) {
  HangVerdict v;
  const Point p = stuckPoint(ranks);
  if (p.seq < 0) return v;
  v.comm = p.comm;
  v.seq = p.seq;
  std::map<int32_t, const HangRank*> members;
  for (const HangRank& r : ranks) {
    for (const FlightCallRow& c : r.calls) {
      if (c.comm == p.comm) members[r.rank] = &r;
    }
  }
  std::set<int32_t> all;
  for (const auto& [rank, r] : members) all.insert(rank);
  if (spansWorld(p.comm, world_size)) {
    for (int32_t k = 0; k < world_size; ++k) all.insert(k);
  }
  // The waiting ranks' call: the majority shape, taken from the first entered.
  std::vector<std::pair<int32_t, const FlightCallRow*>> entered;
  bool any_ended = false;
  for (int32_t rank : all) {
    auto it = members.find(rank);
    const FlightCallRow* last = nullptr;
    const FlightCallRow* at = it == members.end() ? nullptr : callAt(*it->second, p, &last);
    if (at != nullptr) {
      entered.emplace_back(rank, at);
      continue;
    }
    v.culprits.push_back(rank);
    v.culprit_calls.push_back(last != nullptr ? callText(*last) : "no call on " + p.comm);
    any_ended |= it != members.end() && it->second->ended;
  }
  if (entered.empty()) return {};
  // The reference shape: the one most ranks entered.
  const FlightCallRow* ref = entered.front().second;
  size_t best = 0;
  for (const auto& [rank, c] : entered) {
    const size_t n = static_cast<size_t>(std::count_if(
        entered.begin(), entered.end(), [&](const auto& e) { return sameCall(*e.second, *c); }));
    if (n > best) best = n, ref = c;
  }
  v.op = ref->op;
  v.bytes = ref->bytes;
  v.dtype = ref->dtype;
  v.step = ref->step;
  v.since_ns = INT64_MAX;
  for (const auto& [rank, c] : entered) {
    v.since_ns = std::min(v.since_ns, c->enter_ns);
    if (sameCall(*c, *ref)) {
      v.waiting.push_back(rank);
    } else if (v.culprits.empty() || v.kind == HangVerdict::Kind::kMismatch) {
      v.kind = HangVerdict::Kind::kMismatch;
      v.culprits.push_back(rank);
      v.culprit_calls.push_back(callText(*c));
    }
  }
  if (v.kind == HangVerdict::Kind::kNone && !v.culprits.empty())
    v.kind = any_ended ? HangVerdict::Kind::kExited : HangVerdict::Kind::kStuck;
  return v;
}

std::string verdictLine(const HangVerdict& v, int64_t now_ns) {
  if (v.kind == HangVerdict::Kind::kNone) return "";
  auto list = [](const std::vector<int32_t>& ranks) {
    std::string out;
    for (int32_t r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r);
    return out;
  };
  const std::string who = (v.culprits.size() == 1 ? "rank " : "ranks ") + list(v.culprits);
  const std::string call = v.op + " #" + std::to_string(v.seq);
  std::string what;
  switch (v.kind) {
    case HangVerdict::Kind::kMismatch: what = who + " called another collective than " + call; break;
    case HangVerdict::Kind::kExited: what = who + " ended without entering " + call; break;
    default: what = who + " never entered " + call; break;
  }
  std::string line = "hang: " + what + " (comm " + v.comm + ", " + format::bytes(v.bytes) +
                     (v.dtype.empty() ? "" : " " + v.dtype) +
                     (v.step != storage::kNone ? ", step " + std::to_string(v.step) : "") + ")";
  if (v.kind == HangVerdict::Kind::kMismatch && !v.culprit_calls.empty())
    line += ": it entered " + v.culprit_calls.front();
  if (!v.waiting.empty()) {
    line += "; " + std::string(v.waiting.size() == 1 ? "rank " : "ranks ") + list(v.waiting) +
            " waiting for " + format::duration(std::max<int64_t>(0, now_ns - v.since_ns));
  }
  return line;
}

}  // namespace ringside::analyzer
