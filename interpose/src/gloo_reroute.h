// A/B runs of a real job: with RINGSIDE_ALLREDUCE=ring|tree|multipath the job's Gloo
// all-reduce calls run on ringside's reference all-reduce instead (traced as
// ringside-ring / ringside-tree / ringside-multipath); every other call still goes to Gloo.
//
// Each Gloo context gets its own reference communicator, set up at its first
// rerouted call: the ranks swap their listening addresses over the context's
// own Gloo transport, then connect directly.
//
// Order: PyTorch runs a process group's collectives on two worker threads, so
// two all-reduces can reach us concurrently and in a different order on
// different ranks. Gloo keeps them apart by tag; the reference runs one at a
// time, so rerouted calls run strictly in tag order (PyTorch numbers a group's
// collectives in program order, the same on every rank): a call waits until
// every lower tag on its context has entered a Gloo wrapper (kGapWait bounds
// the wait for tags that never do) and no lower rerouted tag is pending.
#pragma once

#include <gloo/allreduce.h>
#include <gloo/context.h>

#include <cstdint>

#include "gloo_probe.h"

namespace ringside::interpose {

// RINGSIDE_ALLREDUCE is set to a valid algorithm (read once; a bad value
// warns once and disables rerouting).
bool rerouteRequested();

// Every wrapped Gloo collective reports its context and tag on entry.
void noteCollectiveEntered(const gloo::Context* ctx, uint32_t tag);

// A context was (re)created at this address: forget what we knew of the old one.
void forgetContext(const gloo::Context* ctx);

// Runs an all-reduce on the reference implementation if it can (one buffer,
// a probed dtype and op the reference supports). Returns false if the caller
// must run Gloo instead; throws std::runtime_error if the reference failed.
bool rerouteAllreduce(const gloo::detail::AllreduceOptionsImpl& impl, const ReduceKind& kind);

}  // namespace ringside::interpose
