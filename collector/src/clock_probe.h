// collector/src/clock_probe.h — what the writer reads about this process's clocks for align/:
// wall-clock anchors, the kernel's boot id and the time namespace's offset.
#pragma once

#include <cstdint>
#include <string>

#include "ringside/storage/clock_model.h"

namespace ringside::collector::detail {

// CLOCK_REALTIME read between two readings of CLOCK_MONOTONIC; the tightest of a few tries (a
// preemption between the readings widens one).
storage::ClockAnchorRow takeAnchor();

// The kernel's boot id ("" if unreadable): ranks with the same one and the same time namespace
// offset read one CLOCK_MONOTONIC.
std::string readBootId();

// CLOCK_MONOTONIC's offset in this process's time namespace (0 outside one, or if unreadable):
// the line "monotonic <seconds> <nanoseconds>" of /proc/self/timens_offsets (Linux 5.6+).
int64_t readTimensOffsetNs();

}  // namespace ringside::collector::detail
