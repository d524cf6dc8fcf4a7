// The NCCL profiler plugin's one internal event model. Each plugin interface
// version (nccl_profiler_versions.cpp: ncclProfiler_v1 … ncclProfiler_v6)
// translates NCCL's descriptor of that version into an Event and calls the
// functions below; nothing here knows about versions except what an Event
// says it carries.
//
// What becomes of NCCL's events (see docs/nccl.md):
//   coll / p2p        → the collective the wrapper recorded (or one of our own):
//                       algorithm, protocol, channels; GPU start/end from its kernel channels
//   collApi / p2pApi  → (v5+) where a wrapped call is claimed, on the calling thread
//   proxyOp           → peer, channel, direction, chunk size of one channel's transfers
//   proxyStep         → one `transfer` row: peer, channel, step, bytes, posted/completed
//   kernelCh          → GPU start/stop of one channel (v4+: GPU timer; v3: host observation)
//   group, groupApi   → group ids; kernelLaunch, netPlugin, CE events → counted only
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "ringside/collector/event.h"

namespace ringside::interpose::nccl_profiler {

enum class Kind : uint8_t {
  kGroup, kColl, kP2p, kProxyOp, kProxyStep, kProxyCtrl, kKernelCh, kNetPlugin,
  kGroupApi, kCollApi, kP2pApi, kKernelLaunch, kCe, kUnknown,
};

struct Event {
  Kind kind = Kind::kUnknown;
  void* parent = nullptr;  // NCCL's parentObj: a handle we returned, or (PXN) another process's pointer
  int rank = -1;
  // coll, p2p, collApi, p2pApi
  collector::Op op = collector::Op::kUnknown;
  uint64_t comm_hash = 0;  // v1–v3 only
  size_t count = 0;
  collector::DType dtype = collector::DType::kUnknown;
  int root = -1;
  int peer = -1;           // p2p; proxyOp
  int channels = -1;       // nChannels / nMaxChannels
  collector::Algorithm algorithm = collector::Algorithm::kDefault;
  collector::Protocol protocol = collector::Protocol::kUnknown;
  void* stream = nullptr;  // API events (v5+)
  int group_depth = 0;     // groupApi (v5+)
  // proxyOp
  pid_t pid = 0;           // the posting process: not getpid() (or 0) = PXN, never dereference parent/context
  int channel = -1;        // proxyOp, kernelCh
  int steps = 0;
  int chunk_size = 0;
  bool is_send = false;
  // proxyStep
  int step = -1;
  // kernelCh (v4+): GPU globaltimer at start, 0 unknown
  uint64_t gpu_timer = 0;
};

struct StateArgs {
  size_t trans_size = 0;   // proxyStep (v4+) / proxyOp (v1–v3) bytes, 0 unknown
  uint64_t gpu_timer = 0;  // kernelCh stop (v4+), 0 unknown
};

// Communicator information NCCL gives init (v4+; zeros/null before).
struct InitInfo {
  uint64_t comm_hash = 0;
  const char* comm_name = nullptr;
  int nnodes = -1;
  int nranks = -1;
  int rank = -1;
};

// The plugin functions proper; each returns ncclResult_t (0 success).
int init(int version, void** context, int* activation_mask, const InitInfo& info);
int startEvent(void* context, void** handle, const Event& e);
int stopEvent(void* handle);
int recordEventState(void* handle, int state, const StateArgs& args);
int finalize(void* context);

// Names (v2+ strings) and values (v1 enums) → ringside's vocabulary.
collector::Op opFromName(const char* func);
collector::DType dtypeFromName(const char* datatype);
collector::Algorithm algorithmFromName(const char* algo);
collector::Protocol protocolFromName(const char* proto);
collector::Op opFromV1(uint8_t func);
collector::DType dtypeFromValue(int datatype);
collector::Algorithm algorithmFromV1(uint8_t algo);
collector::Protocol protocolFromV1(uint8_t proto);

}  // namespace ringside::interpose::nccl_profiler
