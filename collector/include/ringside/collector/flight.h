// collector/flight.h — the flight recorder, always on in every active traced process
// (docs/flight-recorder.md): the last kCallsPerComm calls of each communicator and the last
// kMessages messages, kept in a memory-mapped ring file in the rank folder whatever the recording
// window or detail level, so a hang, a crash or a SIGKILL leaves them readable.
//
// Contract: every function is the hot path's kind (no allocation, no lock, no syscall, never
// throws) and does nothing when the ring could not be made (the job goes on; one verbose line).
// Called by interpose/'s wrappers and reference/'s engine between activate() and shutdown().
#pragma once

#include <cstdint>

#include "ringside/collector/event.h"

namespace ringside::collector::flight {

// A call in the ring, returned by enter() and passed to leave(); slot null: not recorded.
struct CallHandle {
  void* slot = nullptr;
  uint64_t gen = 0;
};

// Creates the ring file (called once by activate()); false when it could not be made.
bool start();
// The ring's communicator `comm` (registerComm's index): its name and shape, once.
void noteComm(int32_t comm, const char* name, int32_t comm_rank, int32_t comm_size);
void noteIdentity(int32_t rank, int32_t world_size);

// A call entered at t0 on communicator `comm`; it becomes the thread's current call.
CallHandle enter(int32_t comm, int64_t seq, Op op, Library library, DType dtype, uint64_t bytes,
                 uint64_t count, int32_t root, int64_t t0);
// The call returned at t1 (ok) or threw: `error` (the exception's text, may be null) stamps a
// dump, reason timeout when it says it timed out, else error. Restores `outer` as current.
void leave(CallHandle call, int64_t t1, bool ok, const char* error, CallHandle outer);
CallHandle current();
// Asynchronous libraries (NCCL): the API call returned at t1 with its work enqueued; the call
// becomes `queued` (unless completion was already seen) and counts as progress. Restores `outer`.
void returned(CallHandle call, int64_t t1, CallHandle outer);
// The enqueued work of `call` completed at t1 (NCCL's profiler plugin: its last kernel channel
// stopped): `done`, with t1 as its end.
void completed(CallHandle call, int64_t t1);
// An error outside any call (ncclCommAbort): stamps an `error` dump with `text`.
void error(const char* text, int64_t t);
// A message posted by the calling thread (inside its current call) and its completion (any
// thread; matched by key, peer and side).
void post(int32_t comm, uint64_t key, int32_t peer, Side side, uint64_t bytes, int64_t t0);
void done(uint64_t key, int32_t peer, Side side, int64_t t1);
void step(int64_t step);

// Dumps and ends (async-signal-safe): a fatal signal; the process exiting (stamps exit-open when
// a call is still open); SIGUSR2.
void onSignal(int sig);
void onExit();
// The child of a fork without exec drops the mapping (the parent's ring is not its).
void onForkChild();

}  // namespace ringside::collector::flight
