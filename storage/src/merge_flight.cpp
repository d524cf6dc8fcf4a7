// storage/src/merge_flight.cpp — the merger's part for the flight recorder: a rank file's ring
// into the flight tables, and the rank of a rank file killed before its first commit.
#include <string>

#include "flight_store.h"
#include "merge_internal.h"
#include "ringside/storage/flight_ring.h"

namespace ringside::storage::merging {
namespace {

std::string folderOf(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool allDigits(const std::string& s, size_t most) {
  return !s.empty() && s.size() <= most && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

void rankFromRing(const std::string& path, Input* in) {
  const std::string name = detail::baseName(path);
  const size_t dot = name.rfind(".sqlite");
  const size_t b = dot == std::string::npos ? dot : name.rfind('-', dot);
  const size_t a = b == std::string::npos || b == 0 ? std::string::npos : name.rfind('-', b - 1);
  if (a == std::string::npos) return;
  const std::string pid = name.substr(a + 1, b - a - 1), start = name.substr(b + 1, dot - b - 1);
  if (!allDigits(pid, 9) || !allDigits(start, 19)) return;
  const std::string ring = detail::findRing(folderOf(path), std::stoll(pid), std::stoll(start));
  flight::Snapshot snap;
  std::string ignored;
  if (ring.empty() || !flight::readRing(ring, &snap, &ignored) || snap.rank < 0 ||
      snap.rank >= kMaxPlausibleWorld)
    return;
  in->rank = snap.rank;
  in->pid = snap.pid;
  in->start_unix_ns = snap.start_unix_ns;
  if (snap.world_size > 0 && snap.world_size <= kMaxPlausibleWorld) in->world_size = snap.world_size;
}

bool Merger::copyRing(const Input& in) {
  const std::string ring = detail::findRing(folderOf(in.path), in.pid, in.start_unix_ns);
  if (ring.empty()) return true;
  flight::Snapshot snap;
  std::string why;
  if (!flight::readRing(ring, &snap, &why)) {
    res_.warnings.push_back("flight record left out: " + detail::oneLine(why));
    return true;
  }
  sqlite3* out = out_.get();
  if (!detail::exec(out, "BEGIN", &why) || !detail::storeFlight(out, snap, in.rank, &why) ||
      !detail::exec(out, "COMMIT", &why)) {
    detail::exec(out, "ROLLBACK", nullptr);
    res_.error = detail::oneLine(tmp_ + ": " + why);
    return false;
  }
  res_.merged_rings.push_back(ring);
  return true;
}

}  // namespace ringside::storage::merging
