// ringside/bench/floor.h — the `floor` row of `ringside bench`: the copies and
// reductions that a ring all-reduce's data needs, done in memory with no
// network, by the same ranks, in the same run as the measured rows.
//
// Over TCP every byte a rank sends is copied once into the kernel and every
// byte it receives once out of it; the reduce-scatter half is also reduced.
// FloorWork does exactly those copies and reductions, on the ring's segments
// in the ring's order: per step, per 256 KiB piece, the piece to send is
// copied into a bounce buffer (the copy into the kernel) and the piece to
// receive is copied out of it into place or, in the reduce-scatter, into a
// scratch piece that is then reduced into place (the copy out of the kernel
// and the reduction). The bounce buffer and the scratch piece stay in the
// core's cache: the floor is the data's cost at its best, with no protocol,
// no waiting and no cross-core transfer. The result is not an all-reduce (the
// bytes received are the rank's own), so the row is never checked.
#pragma once

#include <cstddef>
#include <vector>

#include "ringside/reference/types.h"

namespace ringside::bench {

class FloorWork {
 public:
  FloorWork(int rank, int ranks, collector::DType dtype, collector::ReduceOp op);
  void run(void* data, size_t count);

 private:
  int rank_, ranks_;
  collector::DType dtype_;
  collector::ReduceOp op_;
  std::vector<unsigned char> bounce_, scratch_;
};

}  // namespace ringside::bench
