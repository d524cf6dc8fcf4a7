#include "ringside/bench/floor.h"

#include <algorithm>
#include <cstring>

namespace ringside::bench {

namespace {
constexpr size_t kPieceBytes = size_t{256} << 10;
}

FloorWork::FloorWork(int rank, int ranks, collector::DType dtype, collector::ReduceOp op)
    : rank_(rank),
      ranks_(ranks),
      dtype_(dtype),
      op_(op),
      bounce_(kPieceBytes),
      scratch_(kPieceBytes) {}

void FloorWork::run(void* data, size_t count) {
  const size_t e = reference::dtypeSize(dtype_);
  if (ranks_ < 2 || count == 0 || e == 0) return;
  const size_t n = static_cast<size_t>(ranks_);
  const size_t base = count / n, rem = count % n;
  const size_t piece = kPieceBytes / e;  // elements
  auto* d = static_cast<unsigned char*>(data);
  auto segStart = [&](size_t s) { return s * base + std::min(s, rem); };
  auto segLen = [&](size_t s) { return base + (s < rem ? 1 : 0); };
  // The ring's steps: at global step g rank r sends segment (r-g) mod n and
  // receives segment (r-g-1) mod n; the first n-1 steps reduce.
  for (size_t g = 0; g < 2 * (n - 1); ++g) {
    const size_t r = static_cast<size_t>(rank_);
    const size_t send = (r + 2 * n - g % n) % n;
    const size_t recv = (r + 2 * n - g % n - 1) % n;
    const bool reduce = g < n - 1;
    const size_t slen = segLen(send), rlen = segLen(recv);
    for (size_t off = 0; off < std::max(slen, rlen); off += piece) {
      if (off < slen) {
        size_t len = std::min(piece, slen - off);
        std::memcpy(bounce_.data(), d + (segStart(send) + off) * e, len * e);
      }
      if (off < rlen) {
        size_t len = std::min(piece, rlen - off);
        unsigned char* place = d + (segStart(recv) + off) * e;
        if (reduce) {
          std::memcpy(scratch_.data(), bounce_.data(), len * e);
          reference::reduceInto(place, scratch_.data(), len, dtype_, op_);
        } else {
          std::memcpy(place, bounce_.data(), len * e);
        }
      }
    }
  }
}

}  // namespace ringside::bench
