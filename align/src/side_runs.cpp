// align/src/side_runs.cpp — sorted runs of message sides, delta- and varint-encoded
// (side_runs.h).
#include "side_runs.h"

#include <algorithm>

namespace ringside::align::detail {
namespace {

// A side is stored as five varints, each the difference from the run's previous side (the first
// from an all-zero side), taken modulo 2^64 so that any values (a damaged trace's) round-trip:
// (src difference zigzagged) << 1 | recv, then dst, slot, bytes and t, zigzagged. Sorted, a run
// repeats src and mostly dst, slot and bytes: about 8 bytes a side, against 40 as a Side.
uint64_t zigzag(uint64_t delta) {
  const auto v = static_cast<int64_t>(delta);
  return (delta << 1) ^ static_cast<uint64_t>(v >> 63);
}

uint64_t unzigzag(uint64_t z) { return (z >> 1) ^ (~(z & 1) + 1); }

void putVarint(std::vector<uint8_t>* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<uint8_t>(v));
}

// False when the run ends inside the varint (never for a run this file encoded).
bool getVarint(const uint8_t** at, const uint8_t* end, uint64_t* v) {
  uint64_t out = 0;
  for (int shift = 0; *at < end && shift < 64; shift += 7) {
    const uint8_t b = *(*at)++;
    out |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = out;
      return true;
    }
  }
  return false;
}

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }
uint64_t u32(int32_t v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); }

}  // namespace

bool sideBefore(const Side& x, const Side& y) {
  if (x.src != y.src) return x.src < y.src;
  if (x.dst != y.dst) return x.dst < y.dst;
  if (x.slot != y.slot) return x.slot < y.slot;
  if (x.recv != y.recv) return x.recv < y.recv;
  if (x.t != y.t) return x.t < y.t;
  return x.bytes < y.bytes;
}

void SideRuns::endRun() {
  if (pending_.empty()) return;
  std::sort(pending_.begin(), pending_.end(), sideBefore);
  scratch_.clear();
  Side prev{0, 0, 0, 0, false, 0};
  for (const Side& s : pending_) {
    putVarint(&scratch_, zigzag(u32(s.src) - u32(prev.src)) << 1 | (s.recv ? 1 : 0));
    putVarint(&scratch_, zigzag(u32(s.dst) - u32(prev.dst)));
    putVarint(&scratch_, zigzag(u(s.slot) - u(prev.slot)));
    putVarint(&scratch_, zigzag(u(s.bytes) - u(prev.bytes)));
    putVarint(&scratch_, zigzag(u(s.t) - u(prev.t)));
    prev = s;
  }
  pending_.clear();
  if (pending_.capacity() > kRun) std::vector<Side>().swap(pending_);
  runs_.emplace_back(scratch_.begin(), scratch_.end());  // exactly its size
  encoded_ += scratch_.size();
  if (scratch_.capacity() > 8 * kRun) std::vector<uint8_t>().swap(scratch_);
}

void SideRuns::takeRun(SideRuns& from, size_t i) {
  encoded_ += from.runs_[i].size();
  from.encoded_ -= from.runs_[i].size();
  runs_.push_back(std::move(from.runs_[i]));
}

bool SideRuns::Cursor::next() {
  if (at == end) return false;
  uint64_t head = 0, dst = 0, slot = 0, bytes = 0, t = 0;
  if (!getVarint(&at, end, &head) || !getVarint(&at, end, &dst) || !getVarint(&at, end, &slot) ||
      !getVarint(&at, end, &bytes) || !getVarint(&at, end, &t)) {
    return false;
  }
  // Two 32-bit values differ by less than 2^32 either way: zigzagged, 33 bits; shifted, 34.
  side.src = static_cast<int32_t>(u32(side.src) + unzigzag(head >> 1));
  side.recv = (head & 1) != 0;
  side.dst = static_cast<int32_t>(u32(side.dst) + unzigzag(dst));
  side.slot = static_cast<int64_t>(u(side.slot) + unzigzag(slot));
  side.bytes = static_cast<int64_t>(u(side.bytes) + unzigzag(bytes));
  side.t = static_cast<int64_t>(u(side.t) + unzigzag(t));
  return true;
}

std::vector<SideRuns::Cursor> SideRuns::start() {
  std::vector<Cursor> cursors;
  cursors.reserve(runs_.size());
  for (size_t i = 0; i < runs_.size(); ++i) {
    const std::vector<uint8_t>& run = runs_[i];
    Cursor c{run.data(), run.data() + run.size(), Side{0, 0, 0, 0, false, 0}, i};
    if (c.next()) cursors.push_back(c);
  }
  return cursors;
}

}  // namespace ringside::align::detail
