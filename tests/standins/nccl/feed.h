// Drives an NCCL profiler plugin the way NCCL does, for any interface version
// 1–6: the stand-in libnccl.so.2 (fake_nccl.cpp) uses it for every call it
// runs, the plugin driver (plugin_driver.cpp) to replay a fixed sequence.
//
// The order mimics NCCL's: (v5+) groupApi / collApi / p2pApi inside the API
// call; at launch a group event (v1–v4; v5+ too, as the coll's parentGroup),
// per operation coll/p2p start → (v5+) kernelLaunch → coll/p2p stop
// (= enqueued) → per channel a kernel-channel event (v4+: GPU timer) and,
// between ranks, a send and a recv proxy op with its steps and their states
// (v4+: transfer size per step) → kernel channel stop.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace fake_nccl::feed {

struct Plugin {
  int version = 0;            // 0: no plugin
  const void* table = nullptr;
  int mask = 0;               // what init asked for (union over communicators)
};

// dlopen()s `spec` (a path, or NAME for libnccl-profiler-NAME.so) and takes the
// newest ncclProfiler_vN with N <= max_version. False (and *err) if none.
bool load(const char* spec, int max_version, Plugin* out, std::string* err);
// Uses the table `ncclProfiler_v<version>` found in `dl_handle`.
bool fromHandle(void* dl_handle, int version, Plugin* out);

// Per communicator. Returns the context (nullptr: the plugin declined).
void* init(Plugin& p, uint64_t comm_hash, const char* name, int nnodes, int nranks, int rank, bool* ok);
void finalize(Plugin& p, void* ctx);

struct Op {
  bool p2p = false;
  const char* func = "AllReduce";  // NCCL's names: AllReduce, Broadcast, ..., Send, Recv
  size_t count = 0;
  int dtype = 7;                   // ncclDataType_t
  const char* dtype_name = "ncclFloat32";
  int root = -1;
  int peer = -1;                   // p2p
  void* stream = nullptr;
  uint64_t comm_hash = 0;
  uint64_t seq = 0;
  int rank = 0;
  int nranks = 1;
  size_t bytes = 0;
  int channels = 2;
  const char* algo = "Ring";
  const char* proto = "Simple";
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  int steps = 2;                   // proxy steps per proxy op
};

// API stage (v5+; no-ops before).
void* groupApiStart(Plugin& p, void* ctx, int depth);
void groupApiStop(Plugin& p, void* handle);
// Starts and stops the collApi/p2pApi event of one call; returns its handle
// (NCCL keeps naming it as the parent of the coll/p2p event).
void* apiEvent(Plugin& p, void* ctx, void* group_api, const Op& op);

// Launch stage.
void* groupStart(Plugin& p, void* ctx, void* group_api, int rank);
void groupStop(Plugin& p, void* handle);
// One operation: its coll/p2p event, proxy ops and steps, kernel channels;
// `work` runs between the kernel channels' start and stop (the "GPU" work).
void runOp(Plugin& p, void* ctx, const Op& op, void* api, void* group, const std::function<void()>& work);

// The same in two parts, as NCCL splits them for a group (every task event in
// ncclGroupEnd, then the launch) or a CUDA graph (the task events again on
// every replay, naming the capture's API events): the coll/p2p event
// (started and stopped: enqueued; returns its handle), then its children
// (kernel channels, proxy ops and steps) naming that handle.
void* taskEvent(Plugin& p, void* ctx, const Op& op, void* api, void* group);
void taskWork(Plugin& p, void* ctx, const Op& op, void* task, const std::function<void()>& work);

// PXN: a proxy op another process posted, run by this process's proxy: NCCL
// passes that process's context and parent (src/proxy.cc,
// src/plugin/profiler.cc ncclProfilerStartProxyOpEvent) and its pid; the
// steps name the op's handle, with the same foreign context.
void pxnProxyOp(Plugin& p, void* foreign_ctx, void* foreign_parent, pid_t pid, int rank, int channel, int peer,
                bool send, int steps, size_t bytes_per_step);

// GPU globaltimer stand-in: CLOCK_REALTIME in ns, as NVIDIA's timer roughly is.
uint64_t gpuTimerNow();

}  // namespace fake_nccl::feed
