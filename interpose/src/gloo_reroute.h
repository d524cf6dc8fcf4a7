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
// different ranks. Gloo keeps them apart by tag, and so does the reference:
// each rerouted call runs at once as Communicator::allreduceTagged with an id
// from its tag (PyTorch numbers a group's collectives in program order, the
// same on every rank; a program that repeats a tag gets the tag and how often
// it was used before), and every frame goes only to the call whose id it
// carries, whatever order the calls reach each rank in. (Before issue 29 rerouted
// calls ran one at a time in tag order, giving up after 200 ms on a lower tag
// that had not arrived: a worker thread delayed that long ran its all-reduce
// after the next one on that rank only, and the ranks read each other's
// frames as the wrong call's.)
#pragma once

#include <gloo/allreduce.h>
#include <gloo/context.h>

#include <cstdint>

#include "gloo_probe.h"

namespace ringside::interpose {

// RINGSIDE_ALLREDUCE is set to a valid algorithm (read once; a bad value
// warns once and disables rerouting).
bool rerouteRequested();

// A context was (re)created at this address: forget what we knew of the old one.
void forgetContext(const gloo::Context* ctx);

// Runs an all-reduce on the reference implementation if it can (one buffer,
// a probed dtype and op the reference supports). Returns false if the caller
// must run Gloo instead; throws std::runtime_error if the reference failed.
// `unique_tags`: the program never repeats a tag on a context (PyTorch).
bool rerouteAllreduce(const gloo::detail::AllreduceOptionsImpl& impl, const ReduceKind& kind,
                      bool unique_tags);

}  // namespace ringside::interpose
