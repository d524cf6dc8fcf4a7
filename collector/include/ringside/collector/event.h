// collector/event.h — the fixed-size record the hot path writes.
//
// 64 bytes, trivially copyable, no pointers the writer dereferences. The
// names of ops, dtypes, reduce ops and phases are enum values here (collective/'s)
// and become strings (the trace's vocabulary) only on the writer thread.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ringside/collective/names.h"

namespace ringside::collector {

enum class EventKind : uint8_t {
  kCollective = 1,    // one finished call: t0 = entry, t1 = return
  kTransferPost = 2,  // a send or recv was posted: t0
  kTransferDone = 3,  // a send or recv completed: t1 (matched to its post by the writer)
  kTransfer = 4,      // a whole message known at once (t0 posted, t1 completed), e.g. from
                      // ringside's reference all-reduce; aux = chunk index, not slot
  kCollectiveGpu = 5, // what a GPU library adds to collective `id` (see below); may come
                      // long after the call's kCollective, from another thread
  kStepMarker = 6,    // the job called ringside_step(): t0 = when, key = the step number
                      // (as int64_t bits)
};

// The vocabulary is collective/'s (names.h), declared once for every module.
using collective::Algorithm;
using collective::DType;
using collective::Library;
using collective::Op;
using collective::Phase;
using collective::Protocol;
using collective::ReduceOp;
using collective::Side;

// kCollectiveGpu uses: id = the collective's id; t0/t1 = GPU start/end on
// nowNs()'s clock (0: unknown); key = CUDA stream handle (0: unknown);
// aux = group id + 1 (0: not in a group); peer = channels (-1 unknown);
// comm = CUDA device (-1 unknown); algorithm (kDefault: unknown); protocol.
// Fields left unknown never erase what an earlier kCollectiveGpu said.
struct Event {
  int64_t t0 = 0;        // ns on nowNs()'s clock
  int64_t t1 = 0;
  uint64_t id = 0;       // collective id (kCollective, and the enclosing one for kTransferPost)
  uint64_t key = 0;      // transfers: the library's buffer object; collectives: seq
  uint64_t bytes = 0;
  uint64_t aux = 0;      // collectives: element count; post: slot/tag; kTransfer: chunk
  int32_t peer = -1;     // transfers: the other rank (-1: any); collectives: root
  int16_t comm = -1;     // registered communicator index (collectives, and transfers' ranks)
  EventKind kind = EventKind::kCollective;
  uint8_t op = 0;        // Op
  uint8_t library = 0;   // Library
  union {
    uint8_t dtype = 0;   // collectives: DType
    uint8_t channel;     // transfers: NCCL channel + 1 (0: none/unknown)
    uint8_t protocol;    // kCollectiveGpu: Protocol
  };
  uint8_t reduce_op = 0; // ReduceOp
  uint8_t side = 0;      // Side (transfers)
  union {
    uint8_t phase = 0;   // transfers: Phase
    uint8_t algorithm;   // collectives: Algorithm
  };
  uint8_t status = 0;    // collectives: 0 ok, 1 threw/failed
  int16_t step = -1;     // transfers: algorithm step (-1 unknown)
};

static_assert(sizeof(Event) == 64, "Event must stay one cache line");
static_assert(std::is_trivially_copyable_v<Event>);

// The trace's names for the enum values ("" or "unknown" for unknown/none): collective/'s.
using collective::algorithmName;
using collective::dtypeName;
using collective::libraryName;
using collective::opName;
using collective::phaseName;
using collective::protocolName;
using collective::reduceOpName;
using collective::sideName;

}  // namespace ringside::collector
