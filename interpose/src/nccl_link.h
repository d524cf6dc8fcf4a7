// What links the NCCL API wrappers (nccl_wrappers.cpp) to NCCL's profiler
// plugin (nccl_profiler*.cpp), both served by libringside_preload.so. Either
// half works without the other: with only the plugin (NCCL_PROFILER_PLUGIN
// set, no LD_PRELOAD) the plugin records collectives itself; with only the
// wrappers (an NCCL without profiler support) calls are recorded without their
// GPU side.
//
// How a wrapped call meets its profiler events:
// - Communicators: the wrapper opens a creation window around the real
//   ncclCommInit*/Split; NCCL calls the plugin's init for the new communicator
//   inside that window, possibly on one of its own threads. When the call
//   returns, the wrapper binds the plugin contexts created in its window (same
//   NCCL hash, or same rank/size, or, for plugins < v4 that are told nothing,
//   in creation order) to the communicator it registered.
// - Calls: before calling the real collective the wrapper queues a Pending
//   entry on its thread (collective id, comm, op, group, stream). NCCL starts
//   the matching profiler event on the calling thread: inside the API call
//   (v5+: the collApi/p2pApi event; earlier: the coll/p2p event of an
//   implicit group) or inside ncclGroupEnd (user groups, < v5), in call order.
//   The plugin claims the first entry with the same comm and op. Entries
//   nobody claimed are dropped when the call (or the outermost group) returns.
// Not the hot path of the traced job's compute, but on every NCCL call: no
// allocation, no lock in push/claim (thread-local); the creation window takes
// a mutex (communicators are created rarely).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringside/collector/flight.h"

namespace ringside::interpose::nccl_link {

// One communicator as the profiler plugin sees it (NCCL's "context").
struct PluginComm {
  std::atomic<int32_t> comm{-1};  // collector communicator index, -1 until bound
  std::atomic<int32_t> device{-1};
  int version = 0;                // plugin interface version NCCL chose
  uint64_t nccl_hash = 0;         // v4+: from init; v1–v3: from the first coll/p2p event
  int32_t rank = -1;              // v4+
  int32_t nranks = -1;            // v4+
  int32_t nnodes = -1;            // v4+
  char name[48] = {};             // v4+: the communicator's user-given name
  uint64_t created_seq = 0;       // order of creation among contexts
  PluginComm* next = nullptr;     // registry list (never freed: NCCL may race finalize with late events)
  std::atomic<bool> finalized{false};
};

// ---- communicator creation window ----
struct CreationWindow {
  uint64_t first_seq = 0;  // contexts created from this sequence number on
  uint64_t nccl_hash = 0;  // expected NCCL hash, 0 unknown
};
CreationWindow openCreationWindow(uint64_t expected_nccl_hash);
// Binds the unbound contexts created since `w` that fit (hash, or rank/size
// when known, else the oldest) to `comm`. Returns how many were bound.
int bindCreatedContexts(const CreationWindow& w, int32_t comm, int32_t rank, int32_t nranks, int32_t device,
                        int max_bind);
// Called by the plugin's init. Never fails.
PluginComm* newPluginComm(int version);
// Communicator index for an NCCL hash seen by a bound context (-1 unknown).
int32_t commForNcclHash(uint64_t hash);
void noteNcclHash(uint64_t hash, int32_t comm);
// CUDA device of a registered communicator (-1 unknown); set by the wrappers.
void setCommDevice(int32_t comm, int32_t device);
int32_t commDevice(int32_t comm);
// Communicators the wrappers registered: on them a call the plugin cannot
// match was recorded by the wrapper already (see nccl_profiler.cpp).
void markWrapped(int32_t comm);
bool isWrapped(int32_t comm);

// ---- calls in flight ----
struct Pending {
  uint64_t id = 0;        // collector collective id
  int32_t comm = -1;
  uint8_t op = 0;         // collector::Op
  uint64_t group = 0;     // group id + 1 (0: not in a group)
  uint64_t stream = 0;
  collector::flight::CallHandle flight;  // its flight ring slot (completed at its kernels' end)
};
// Wrapper side.
bool pushPending(const Pending& p);  // false (dropped) when the thread's queue is full
bool retirePending(uint64_t id);     // the call returned, not in a group; false: the plugin claimed it
void retireGroup();                  // the outermost group ended
// Plugin side, on the thread that made the call. comm < 0 matches any.
bool claimPending(int32_t comm, uint8_t op, Pending* out);
// A pending composite (alltoall, gather, scatter) on `comm` that NCCL may run
// as point-to-point operations: its entry (not claimed), or false.
bool peekComposite(int32_t comm, Pending* out);

// ---- groups ----
// Per-thread ncclGroupStart depth; the outermost start takes a new group id.
void groupStarted();
// Returns true when the outermost group ended (depth back to 0).
bool groupEnded();
uint64_t currentGroupPlusOne();  // 0 outside a group
uint64_t newGroupId();           // process-wide, from 0

// ---- GPU timer → host clock (the one place) ----
// NCCL's kernel-channel timestamps are the GPU's globaltimer (ns). On NVIDIA
// GPUs it counts ns since the Unix epoch, kept near CLOCK_REALTIME by the
// driver; ringside's clock is CLOCK_MONOTONIC. The conversion takes the
// REALTIME-to-MONOTONIC offset when the timer looks like Unix time (within a
// day of it), and in every case never lets a GPU time land after the host
// instant NCCL told us about it (`observed_ns`, a causality bound): the offset
// only ever moves earlier, by the smallest amount that keeps every sample
// causal. A timer that is not Unix time is converted by that bound alone.
int64_t gpuTimerToHostNs(uint64_t gpu_ns, int64_t observed_ns);

// ---- counters (meta nccl_profiler_events) ----
struct Counters {
  std::atomic<uint64_t> colls{0}, p2ps{0}, claimed{0}, own{0}, proxy_ops{0}, proxy_steps{0},
      kernel_ch{0}, net_plugin{0}, pxn_remote{0}, ce{0}, api{0}, unknown{0}, unmatched{0},
      stale_parent{0};  // a slot handle (API, coll/p2p event) used after its slot was reused
};
Counters& counters();
void noteCountersMeta();

// The rank's identity from the first communicator whose size is the
// launcher's WORLD_SIZE (or the first one when the launcher said nothing).
void maybeSetIdentity(int32_t rank, int32_t size);

// Starts CUPTI activity once per process (first communicator or first plugin init).
void startGpuActivityOnce();

}  // namespace ringside::interpose::nccl_link
