// Values of a trace's meta table: integers and rank lists ("1,3, 5").
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ringside::analyzer::detail {

inline bool parseInt(std::string_view text, int64_t* out) {
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

// A rank list read from meta keeps at most this many ranks: "5-999999" must not become a
// million-entry vector (and a million-number report line).
inline constexpr size_t kMaxListedRanks = 1024;

// "1,3, 5-7" -> {1, 3, 5, 6, 7}, sorted and unique; unparsable items are skipped. Ranges are
// written by merges since ranges were introduced ("5-999999"); only the first kMaxListedRanks
// ranks are kept (*listed, if given, counts the ranks the text lists, kept or not).
inline std::vector<int> parseRankList(std::string_view text, int64_t* listed = nullptr) {
  std::vector<int> ranks;
  int64_t total = 0;
  auto add = [&](int64_t from, int64_t to) {
    total += to - from + 1;
    for (int64_t r = from; r <= to; ++r) {
      if (ranks.size() >= kMaxListedRanks) return;
      ranks.push_back(static_cast<int>(r));
    }
  };
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t value = 0, last = 0;
    size_t dash = item.find('-', 1);
    if (parseInt(item, &value) && value >= 0 && value <= INT32_MAX) {
      add(value, value);
    } else if (dash != std::string_view::npos && parseInt(item.substr(0, dash), &value) &&
               parseInt(item.substr(dash + 1), &last) && value >= 0 && last >= value &&
               last <= INT32_MAX) {
      add(value, last);
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (listed != nullptr) *listed = total;
  return ranks;
}

// A merged trace's per-rank meta key "rank.<r>.<key>": true and *rank, *key
// when `full` has that form.
inline bool splitRankKey(std::string_view full, int* rank, std::string_view* key) {
  if (full.rfind("rank.", 0) != 0) return false;
  std::string_view rest = full.substr(5);
  size_t dot = rest.find('.');
  int64_t r = 0;
  if (dot == std::string_view::npos || !parseInt(rest.substr(0, dot), &r) || r < 0 || r > INT32_MAX)
    return false;
  *rank = static_cast<int>(r);
  *key = rest.substr(dot + 1);
  return true;
}

}  // namespace ringside::analyzer::detail
