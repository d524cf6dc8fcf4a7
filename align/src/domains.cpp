// align/src/domains.cpp — which ranks share a kernel clock, and their wall-clock anchors.
#include <algorithm>
#include <map>
#include <string>

#include "internal.h"

namespace ringside::align::detail {
namespace {

// Two processes of one host and boot without a boot id on record (a version-2 trace): their
// monotonic-to-wall offsets differ only by NTP's slewing between their starts.
constexpr int64_t kSameClockNs = 100'000'000;

}  // namespace

void assignDomains(std::vector<storage::RankInfo> ranks, Domains* out) {
  // First row of each rank wins (a rank rerun into one folder appears twice).
  std::sort(ranks.begin(), ranks.end(), [](const storage::RankInfo& a, const storage::RankInfo& b) {
    return a.rank < b.rank;
  });
  struct Group {
    std::string key;
    int64_t wall_offset;  // start_unix_ns - start_ns of its first rank
    int32_t domain;
  };
  std::vector<Group> groups;
  std::map<int32_t, const storage::RankInfo*> first;
  for (const storage::RankInfo& r : ranks) {
    if (r.rank < 0 || first.count(r.rank)) continue;
    first[r.rank] = &r;
  }
  for (const auto& [rank, info] : first) {
    const bool booted = !info->boot_id.empty();
    const std::string key = booted ? "boot:" + info->boot_id + "/" + std::to_string(info->timens_offset_ns)
                                   : "host:" + info->host;
    const int64_t wall = info->start_unix_ns - info->start_ns;
    int32_t domain = -1;
    for (const Group& g : groups) {
      if (g.key != key) continue;
      // With a boot id the clock is known to be one; without, the offsets must agree.
      if (booted || std::llabs(g.wall_offset - wall) <= kSameClockNs) {
        domain = g.domain;
        break;
      }
    }
    if (domain < 0) {
      domain = static_cast<int32_t>(out->list.size());
      groups.push_back({key, wall, domain});
      Domain d;
      d.host = info->host;
      d.boot_id = info->boot_id;
      out->list.push_back(std::move(d));
    }
    out->list[static_cast<size_t>(domain)].ranks.push_back(rank);
    out->of_rank[rank] = domain;
    // The trace's start is an anchor too (the only one of a version-2 trace).
    out->list[static_cast<size_t>(domain)].wall.emplace_back(info->start_ns, wall);
  }
}

bool findDomains(storage::TraceReader& raw, Domains* out, std::string* error) {
  assignDomains(raw.ranks(), out);
  std::string why;
  const bool ok = raw.forEachClockAnchor(
      [&](int32_t rank, const storage::ClockAnchorRow& a) {
        const int32_t d = out->of(rank);
        if (d >= 0) out->list[static_cast<size_t>(d)].wall.emplace_back(a.clock_ns, a.unix_ns - a.clock_ns);
        return true;
      },
      &why);
  if (!ok) {
    if (error) *error = why;
    return false;
  }
  for (Domain& d : out->list) std::sort(d.wall.begin(), d.wall.end());
  return true;
}

}  // namespace ringside::align::detail
