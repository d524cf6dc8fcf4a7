// reference/src/algorithms.h — the all-reduce algorithms as engine schedules.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "engine.h"
#include "ringside/reference/types.h"
#include "topology.h"

namespace ringside::reference::detail {

struct CollectiveArgs {
  char* data = nullptr;
  size_t count = 0;  // elements, > 0
  DType dtype = DType::kF32;
  ReduceOp op = ReduceOp::kSum;
  int rank = 0;
  int size = 1;            // > 1
  size_t chunk_bytes = 0;  // 0: the algorithm chooses
  bool unordered = false;  // ring only, Communicator::ringFloor(): every send ready at once
};

// link_of[peer rank] = index into the communicator's links (-1: none).
std::unique_ptr<Schedule> makeRingSchedule(const CollectiveArgs& a,
                                           const std::vector<int>& link_of);
// The ring over given links, its frames of `kind` (multipath: one ring per kind); a.rank is the
// position in the ring, a.size its length.
std::unique_ptr<Schedule> makeRingScheduleOn(const CollectiveArgs& a, int left_link, int right_link,
                                             FrameKind kind);
std::unique_ptr<Schedule> makeTreeSchedule(const CollectiveArgs& a, const TreeNode trees[2],
                                           const std::vector<int>& link_of);
// pingPong: `initiator` sends first; `iters` round trips of `bytes` over `link`.
std::unique_ptr<Schedule> makePingSchedule(bool initiator, int link, char* buf, size_t bytes,
                                           uint32_t iters);

// Elements per chunk: the option if set, else the algorithm's choice for
// `part_bytes` (the bytes one pipeline carries), between lo and hi bytes.
size_t chunkElements(size_t chunk_bytes, size_t part_bytes, size_t esize, size_t divisor, size_t lo,
                     size_t hi);

}  // namespace ringside::reference::detail
