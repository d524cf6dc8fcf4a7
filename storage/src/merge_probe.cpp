// storage/src/merge_probe.cpp — pass 1 of a merge on one input (merge_internal.h).
#include "merge_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringside/storage/privacy.h"
#include "ringside/storage/records.h"
#include "schema.h"
#include "trace_reader_impl.h"

namespace ringside::storage::merging {

std::string textOf(sqlite3_stmt* st, int index) {
  const unsigned char* t = sqlite3_column_text(st, index);
  return t ? std::string(reinterpret_cast<const char*>(t), static_cast<size_t>(sqlite3_column_bytes(st, index)))
           : std::string();
}

// "1,2,5-999999" from sorted ranks: runs of three or more as ranges, so that a world of a
// million with four rank files writes a short list, not megabytes (docs/schema.md, meta).
std::string joinInts(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (i) out += ',';
    out += std::to_string(v[i]);
    if (j >= i + 2) {
      out += '-' + std::to_string(v[j]);
    } else {
      j = i;
    }
    i = j + 1;
  }
  return out;
}

// Why `path` was skipped, without the path the message starts with (meta names it already).
std::string skipReason(const std::string& path, const std::string& why) {
  std::string_view text = why;
  if (text.starts_with(path) && text.substr(path.size()).starts_with(": "))
    text.remove_prefix(path.size() + 2);
  return detail::oneLine(text.empty() ? "unreadable" : text);
}

// "1,2,5-9" (joinInts) back into ranks; anything else in the list is ignored.
std::vector<int> parseInts(const std::string& text) {
  std::vector<int> out;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    char* rest = nullptr;
    const long lo = std::strtol(item.c_str(), &rest, 10);
    long hi = lo;
    if (rest && *rest == '-') hi = std::strtol(rest + 1, &rest, 10);
    if (rest == item.c_str() || lo < 0 || hi < lo || hi >= kMaxPlausibleWorld) continue;
    for (long r = lo; r <= hi; ++r) out.push_back(static_cast<int>(r));
  }
  return out;
}


namespace {

// A merged input's facts from its meta: world size, cut-off ranks, inputs its merge skipped.
bool probeMergedMeta(sqlite3* raw, Input* in) {
  using T = detail::MetaTable;
  Stmt st = detail::prepare(raw,
                            "SELECT key, value FROM meta WHERE key IN ('world_size', "
                            "'cut_off_ranks', 'skipped_input_reasons')",
                            nullptr);
  if (!st) return false;
  int rc;
  while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
    const std::string key = textOf(st.get(), T::key);
    const std::string value = textOf(st.get(), T::value);
    if (key == "world_size") {
      const long w = std::strtol(value.c_str(), nullptr, 10);
      if (w > 0 && w <= kMaxPlausibleWorld) in->world_size = static_cast<int32_t>(w);
    } else if (key == "cut_off_ranks") {
      in->cut_off = parseInts(value);
    } else {
      // "name: why" per line (writeMergeMeta)
      for (size_t at = 0; at < value.size();) {
        size_t end = value.find('\n', at);
        if (end == std::string::npos) end = value.size();
        const std::string line = value.substr(at, end - at);
        at = end + 1;
        const size_t colon = line.find(": ");
        if (colon != std::string::npos && colon > 0)
          in->skipped.emplace_back(line.substr(0, colon), line.substr(colon + 2));
      }
    }
  }
  return rc == SQLITE_DONE;
}

}  // namespace

// Pass 1 on one file: returns false with *why (one line, naming the file).
bool probe(const std::string& path, bool accept_merged, Input* in, std::string* why) {
  int version = 0;
  // No quick_check (1.9 of the probe's 2.5 CPU-s at 1,024 inputs): the copy reads every row of
  // every table the merge takes from the file, through the same defensive connection, and a
  // damaged page, a malformed record, a page count beyond the file's end or a NULL where the
  // schema forbids one fails that input's copy (rolled back, the input skipped with -k, named
  // otherwise) as the check would have failed it here. What quick_check sees beyond that
  // (indexes, the free list) the merge never reads, and the output is built anew.
  Db db = detail::openTraceReadOnly(path, &version, why, /*quick_check=*/false);
  if (!db) return false;
  sqlite3* raw = db.get();
  auto fail = [&](std::string_view what) {
    *why = detail::oneLine(path + ": " + std::string(what) + ": " + detail::lastError(raw));
    return false;
  };
  in->path = path;
  in->version = version;
  int rank_rows = 0;
  {
    using T = detail::RankTable;
    const std::string sql = detail::selectSql(
        T::kDef, version, "",
        detail::columns({T::rank, T::world_size, T::start_unix_ns, T::host, T::pid}));
    Stmt st = detail::prepare(raw, sql, nullptr);
    if (!st) return fail("cannot read the rank table");
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      if (++rank_rows > 1 && !accept_merged) {
        *why = detail::oneLine(path + ": has several rank rows (a merged trace?), not a rank file");
        return false;
      }
      const int64_t r = detail::columnNullable(st.get(), T::rank);
      const int64_t w = detail::columnNullable(st.get(), T::world_size);
      const int64_t start = sqlite3_column_int64(st.get(), T::start_unix_ns);
      const bool known = r >= 0 && r < kMaxPlausibleWorld;
      if (known) in->ranks.push_back(static_cast<int>(r));
      // A merged input sorts by its first rank and start.
      if (rank_rows == 1 || (known && (in->rank < 0 || r < in->rank))) {
        in->rank = known ? static_cast<int32_t>(r) : -1;
        in->start_unix_ns = start;
      }
      if (rank_rows == 1) {
        in->host = textOf(st.get(), T::host);
        in->pid = detail::columnNullable(st.get(), T::pid);
      }
      if (w > 0 && w <= kMaxPlausibleWorld) in->world_size = std::max<int32_t>(in->world_size, static_cast<int32_t>(w));
    }
    if (rc != SQLITE_DONE) return fail("cannot read the rank table");
  }
  {
    using T = detail::MetaTable;
    const std::string sql =
        detail::selectSql(T::kDef, version, " WHERE key IN ('end_state', 'merged_at_unix_ns')");
    Stmt st = detail::prepare(raw, sql, nullptr);
    if (!st) return fail("cannot read the meta table");
    int rc;
    while ((rc = sqlite3_step(st.get())) == SQLITE_ROW) {
      const std::string key = textOf(st.get(), T::key);
      if (key == "merged_at_unix_ns") {
        if (!accept_merged) {
          *why = detail::oneLine(path + ": is a merged trace, not a rank file");
          return false;
        }
        in->merged = true;
      }
      if (key == "end_state") in->clean = textOf(st.get(), T::value) == "clean";
    }
    if (rc != SQLITE_DONE) return fail("cannot read the meta table");
  }
  in->rank_infos = reader::rankInfos(raw, version);
  if (rank_rows > 1 && !in->merged) {
    *why = detail::oneLine(path + ": has several rank rows but no merge keys in its meta");
    return false;
  }
  if (in->merged) {
    if (!probeMergedMeta(raw, in)) return fail("cannot read the meta table");
    std::sort(in->ranks.begin(), in->ranks.end());
    if (in->ranks.empty()) {
      *why = detail::oneLine(path + ": merged trace without ranks");
      return false;
    }
  }
  if (in->rank < 0) {
    // Cut off before the rank was known: the rows may still say it.
    int64_t r = -1;
    if (detail::queryInt(raw, "SELECT rank FROM collective_data WHERE rank >= 0 LIMIT 1", &r, nullptr) &&
        r >= 0 && r < kMaxPlausibleWorld) {
      in->rank = static_cast<int32_t>(r);
    }
  }
  if (in->rank < 0 && !in->merged) rankFromRing(path, in);
  if (in->rank < 0) {
    *why = detail::oneLine(path + ": rank unknown (no rank row and no ranked rows)");
    return false;
  }
  int64_t nc = 0, nt = 0;
  std::string err;
  if (!detail::queryInt(raw, "SELECT count(*) FROM collective_data", &nc, &err) ||
      !detail::queryInt(raw, "SELECT count(*) FROM transfer_data", &nt, &err)) {
    *why = detail::oneLine(path + ": cannot count rows: " + err);
    return false;
  }
  in->rows = nc + nt;
  return true;
}

}  // namespace ringside::storage::merging
