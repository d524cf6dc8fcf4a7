// collector/collector.h — the in-process recorder that the wrappers feed.
//
// Contract for callers (interpose/'s wrappers, reference/'s all-reduce, the Gloo
// runs of `ringside bench`):
// - Dormant until activate() is called by the first wrapped call: until then
//   no file, no thread, no signal handler exists (launchers and shells that
//   inherit LD_PRELOAD stay untouched).
// - emit*() is the hot path: no allocation (after a thread's first event), no
//   lock, no syscall, no formatting. Events go into a per-thread single-producer
//   ring; a background writer thread drains them into the rank file. A full
//   ring or the memory cap drops the event and counts it; nothing ever blocks.
// - Never throws, never aborts, never changes the process's exit status or the
//   application's signal handling. In a child forked without exec the collector
//   goes permanently quiet (the parent's file and threads are not the child's);
//   the calls such a child makes are only counted, in the parent's rank file.
#pragma once

#include <cstdint>

#include "ringside/collector/event.h"

namespace ringside::collector {

// RINGSIDE_BUFFER_MB: the event buffer memory of one process, in MiB (the rings' cap; a quarter
// of it more for queued GPU records). `ringside record --buffer-mb` accepts the same range; a
// value outside it in the environment is ignored with one warning line (the default is used).
inline constexpr int kBufferMbMin = 1;
inline constexpr int kBufferMbMax = 65536;
inline constexpr int kBufferMbDefault = 64;

// Monotonic host time in ns: the one place ringside reads the clock
// (CLOCK_MONOTONIC; named "CLOCK_MONOTONIC" in the trace).
int64_t nowNs();

// Starts the collector if RINGSIDE_DISABLE is not set: reads the environment,
// prepares the rank file and the writer thread, registers the exit flush.
// Thread-safe and idempotent; cheap after the first call. Returns isActive().
bool activate();

// True while events are being recorded (activated, not forked, not shut down,
// not disabled after an I/O failure).
bool isActive();

// Rank identity from the communication library (first call with a
// communicator spanning the world wins; later calls are cross-checked).
void setIdentity(int32_t rank, int32_t world_size, const char* source);

// Registers a communicator (keyed by the library's object address) and
// returns its index (stable for the process) for Event::comm (event.h).
// `library` names the id prefix, e.g. "gloo". Returns -1 when the table is full.
int32_t registerComm(const void* key, int32_t rank, int32_t size, const char* library);
// Looks up a communicator registered earlier; -1 if unknown. Lock-free.
int32_t findComm(const void* key);
// Next call number on a communicator (0, 1, 2, ...). Lock-free.
int64_t nextSeq(int32_t comm);

// A process-unique id for a collective call (1, 2, ...). Lock-free.
uint64_t newCollectiveId();

// The collective the calling thread is inside (0: none); transfers posted by
// this thread are attributed to it.
uint64_t currentCollective();
void setCurrentCollective(uint64_t id);

void emit(const Event& e);

// A collective call that records itself because no wrapper sees it (ringside's
// own all-reduce, the benchmark's Gloo calls): what it was.
struct CollectiveCall {
  Op op = Op::kUnknown;
  Library library = Library::kUnknown;
  Algorithm algorithm = Algorithm::kDefault;
  DType dtype = DType::kUnknown;
  ReduceOp reduce_op = ReduceOp::kUnknown;
  uint64_t count = 0;  // elements
  uint64_t bytes = 0;
  // The call's number on its communicator, the same on every rank; -1: the communicator's
  // next seq (calls numbered in the order they are emitted).
  int64_t seq = -1;
};
// Emits its kCollective event on communicator `comm` (key: call.seq, or the communicator's
// next seq), with the id it took from newCollectiveId(), timed t0..t1, status 0
// when ok, else 1.
void emitCollective(int32_t comm, uint64_t id, const CollectiveCall& call, int64_t t0, int64_t t1,
                    bool ok);

// Records that the job begins training step `step` now (ringside_step(), docs/steps.md):
// activates the collector like a wrapped call, then emits one kStepMarker event. Hot-path rules.
void markStep(int64_t step);

// Records a fact about the trace (e.g. "interposition", "active"). Not hot:
// takes a lock and copies the strings.
void noteMeta(const char* key, const char* value);

// Flushes and closes the rank file (called at exit; exposed for tests).
// Waits at most RINGSIDE_EXIT_TIMEOUT_MS for the writer.
void shutdown();

// Counters of this process (for tests and the final meta rows).
struct Counters {
  uint64_t emitted = 0;
  uint64_t dropped = 0;
  uint64_t recorded = 0;
  // Children forked without exec stay quiet (their calls are not recorded); what they tried is
  // counted in memory shared with this process: wrapped calls, and the children that made them.
  // The rank file says so (meta forked_child_calls, forked_children) rather than nothing.
  uint64_t forked_child_calls = 0;
  uint64_t forked_children = 0;
  // Left out on purpose by the recording window or the detail level (docs/recording.md):
  // calls, and messages (a message counts once, at its post).
  uint64_t left_out_calls = 0;
  uint64_t left_out_messages = 0;
};
Counters counters();

}  // namespace ringside::collector
