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

// "1,3, 5" -> {1, 3, 5}, sorted and unique; unparsable items are skipped.
inline std::vector<int> parseRankList(std::string_view text) {
  std::vector<int> ranks;
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = text.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    int64_t value = 0;
    if (parseInt(item, &value) && value >= 0 && value <= INT32_MAX) {
      ranks.push_back(static_cast<int>(value));
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
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
