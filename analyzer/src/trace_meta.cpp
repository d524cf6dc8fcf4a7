// analyzer/trace_meta.cpp — the meta table's per-rank facts (trace_meta.h).
#include "trace_meta.h"

#include <algorithm>
#include <set>

#include "meta_values.h"
#include "ringside/analyzer/collective_math.h"

namespace ringside::analyzer::detail {
namespace {

using RankKeys = std::map<int, std::map<std::string, std::string>>;

// Per-rank meta: "rank.<r>.<key>" in a merged trace, "<key>" in a rank file.
RankKeys keysByRank(const std::map<std::string, std::string>& meta,
                    const std::vector<storage::RankInfo>& infos) {
  // A merged trace carries the merger's keys; a lone rank file has none of them.
  bool merged = false;
  for (const char* key :
       {"world_size", "cut_off_ranks", "missing_ranks", "merged_at", "merged_at_unix_ns"}) {
    merged = merged || meta.count(key) != 0;
  }
  RankKeys by_rank;
  if (!merged) {
    by_rank[infos.empty() ? 0 : infos.front().rank] = meta;
    return by_rank;
  }
  for (const auto& [key, value] : meta) {
    int rank = 0;
    std::string_view name;
    if (splitRankKey(key, &rank, &name)) by_rank[rank][std::string(name)] = value;
  }
  return by_rank;
}

// A positive integer value of `key`, else 0.
int64_t positive(const std::map<std::string, std::string>& keys, const char* key) {
  int64_t n = 0;
  auto it = keys.find(key);
  return it != keys.end() && parseInt(it->second, &n) && n > 0 ? n : 0;
}

void readRankKeys(const RankKeys& by_rank, TraceMeta* out) {
  for (const auto& [rank, keys] : by_rank) {
    if (int64_t dropped = positive(keys, "events_dropped"); dropped > 0)
      out->dropped[rank] = dropped;
    if (auto it = keys.find("cupti"); it != keys.end()) out->gpu.cupti[rank] = it->second;
    int64_t gpu_dropped =
        positive(keys, "cupti_records_dropped") + positive(keys, "gpu_activity_dropped");
    if (gpu_dropped > 0) out->gpu.dropped[rank] = gpu_dropped;
    if (int64_t calls = positive(keys, "forked_child_calls"); calls > 0)
      out->forked[rank] = {calls, positive(keys, "forked_children")};
    if (auto it = keys.find("interposition");
        it != keys.end() && it->second.rfind("inactive", 0) == 0) {
      out->inactive[it->second].push_back(rank);
    }
  }
}

}  // namespace

TraceMeta readTraceMeta(const std::map<std::string, std::string>& meta,
                        const std::vector<storage::RankInfo>& infos) {
  TraceMeta out;
  RankKeys by_rank = keysByRank(meta, infos);
  int64_t world = -1;
  if (auto it = meta.find("world_size"); it != meta.end()) parseInt(it->second, &world);
  if (world <= 0) {
    for (const storage::RankInfo& info : infos) world = std::max<int64_t>(world, info.world_size);
  }
  if (world > kMaxWorldSize) {
    out.warnings.push_back("meta world_size " + std::to_string(world) + " is more than " +
                           std::to_string(kMaxWorldSize) + " ranks; ignored");
    world = -1;
  }
  out.world_size = world > 0 ? static_cast<int>(world) : -1;
  if (auto it = meta.find("missing_ranks"); it != meta.end()) {
    int64_t listed = 0;
    out.missing = parseRankList(it->second, &listed);
    if (listed > static_cast<int64_t>(out.missing.size())) {
      out.warnings.push_back("meta missing_ranks lists " + std::to_string(listed) +
                             " ranks; only the first " + std::to_string(out.missing.size()) +
                             " are shown");
    }
  }
  if (meta.find("missing_ranks") == meta.end() && meta.find("merged_at") == meta.end() &&
      out.world_size > 0) {
    // A rank file read alone: the world's other ranks are not in it. Said, so that a report
    // of "1 of 2 ranks" does not go on to "nothing stood out".
    std::set<int> present;
    for (const storage::RankInfo& info : infos) present.insert(info.rank);
    for (int r = 0; r < out.world_size && out.missing.size() < kMaxListedRanks; ++r) {
      if (present.count(r) == 0) out.missing.push_back(r);
    }
    out.rank_file = !out.missing.empty();
  }
  if (auto it = meta.find("live_ranks"); it != meta.end()) out.live = parseRankList(it->second);
  if (auto it = meta.find("cut_off_ranks"); it != meta.end()) {
    out.cut_off = parseRankList(it->second);
  } else {
    // No merger's verdict (a rank file, or an older merge): judge by end_state.
    for (const auto& [rank, keys] : by_rank) {
      auto state = keys.find("end_state");
      if (state == keys.end() || state->second != "clean") out.cut_off.push_back(rank);
    }
  }
  if (auto it = meta.find("skipped_inputs"); it != meta.end()) {
    std::string_view list = it->second;
    while (!list.empty()) {
      const size_t comma = std::min(list.find(','), list.size());
      if (comma > 0) out.skipped.emplace_back(list.substr(0, comma));
      list.remove_prefix(std::min(comma + 1, list.size()));
    }
  }
  readRankKeys(by_rank, &out);
  if (auto it = meta.find("command_line"); it != meta.end()) {
    out.command_line = it->second;
  } else {
    for (const auto& [rank, keys] : by_rank) {
      if (auto cmd = keys.find("command_line"); cmd != keys.end()) {
        out.command_line = cmd->second;
        break;
      }
    }
  }
  return out;
}

std::string forkedChildrenText(const std::map<int, std::pair<int64_t, int64_t>>& forked) {
  int64_t calls = 0, children = 0;
  std::string ranks;
  for (const auto& [rank, counts] : forked) {
    calls += counts.first;
    children += counts.second;
    ranks += (ranks.empty() ? "" : ",") + std::to_string(rank);
  }
  return std::string(forked.size() == 1 ? "rank " : "ranks ") + ranks + ": " +
         std::to_string(calls) + (calls == 1 ? " Gloo/NCCL call" : " Gloo/NCCL calls") + " in " +
         std::to_string(children) +
         (children == 1 ? " child process" : " child processes") +
         " forked without exec were not recorded (ringside records a process, or one it starts "
         "with exec)";
}

std::string skippedInputsNote(const std::vector<std::string>& skipped) {
  if (skipped.empty()) return "";
  constexpr size_t kNamed = 3;  // a long list of names helps nobody in one line
  std::string text = " (" + std::to_string(skipped.size()) +
                     (skipped.size() == 1 ? " input file could not be read and was skipped: "
                                          : " input files could not be read and were skipped: ");
  for (size_t i = 0; i < skipped.size() && i < kNamed; ++i) text += (i ? ", " : "") + skipped[i];
  if (skipped.size() > kNamed) text += ", ...";
  return text + ")";
}

std::string droppedTotal(const std::map<int, int64_t>& dropped, std::string_view what) {
  int64_t total = 0;
  for (const auto& [rank, n] : dropped) total = addSaturated(total, n);
  return std::to_string(total) + " " + std::string(what);
}

std::string droppedPerRank(const std::map<int, int64_t>& dropped) {
  std::string text;
  for (const auto& [rank, n] : dropped) {
    text += (text.empty() ? "" : ", ") + std::to_string(n) + " on rank " + std::to_string(rank);
  }
  return text;
}

}  // namespace ringside::analyzer::detail
