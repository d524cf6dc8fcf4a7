// NCCL's profiler plugin interface, versions 1 to 6, declared from NCCL's
// published description of it (plugins/profiler/README.md and the
// profiler_vN.h headers of NCCL 2.23 … 2.29). Layout-identical to NCCL's:
// NCCL passes pointers to these structs and calls through these tables.
//
//   version  NCCL   what it added
//   v1       2.23   group, coll, p2p, proxyOp, proxyStep, proxyCtrl events; enum-valued fields
//   v2       2.24   func/datatype/algo/proto as strings
//   v3       2.26   kernel-channel and network-plugin events; trafficBytes dropped
//   v4       2.27   GPU timer (ptimer) per kernel channel; proxy-step states carry the transfer
//                   size; init gets the communicator's name, hash, nodes, ranks and rank;
//                   name/commHash leave the coll/p2p descriptors
//   v5       2.28   API events (group/coll/p2p API, kernel launch); `type` widened to 64 bits;
//                   init takes the communicator id second
//   v6       2.29   copy-engine collectives (ceColl, ceSync, ceBatch)
//
// NCCL's anonymous unions are named `u` here (same layout; ISO C++ has no
// anonymous structs). Only what ringside reads is commented.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ringside::nccl::profiler {

// Event types (bit values; v1–v4 carry them in a uint8_t, v5+ in a uint64_t).
enum : uint64_t {
  kGroup = 1u << 0,
  kColl = 1u << 1,
  kP2p = 1u << 2,
  kProxyOp = 1u << 3,
  kProxyStep = 1u << 4,
  kProxyCtrl = 1u << 5,
  kKernelCh = 1u << 6,       // v3+
  kNetPlugin = 1u << 7,      // v3+
  kGroupApi = 1u << 8,       // v5+
  kCollApi = 1u << 9,        // v5+
  kP2pApi = 1u << 10,        // v5+
  kKernelLaunch = 1u << 11,  // v5+
  kCeColl = 1u << 12,        // v6
  kCeSync = 1u << 13,        // v6
  kCeBatch = 1u << 14,       // v6
};

// Event states (one enum for every version).
enum State : int {
  kProxyOpSendPosted = 0,       // v1–v3 proxy-op states (deprecated in v4)
  kProxyOpSendRemFifoWait = 1,
  kProxyOpSendTransmitted = 2,
  kProxyOpSendDone = 3,
  kProxyOpRecvPosted = 4,
  kProxyOpRecvReceived = 5,
  kProxyOpRecvTransmitted = 6,
  kProxyOpRecvDone = 7,
  kProxyStepSendGPUWait = 8,    // send: waiting for the GPU to fill the step
  kProxyStepSendWait = 9,       // send: on the wire
  kProxyStepRecvWait = 10,      // recv: waiting for the data from the network
  kProxyStepRecvFlushWait = 11,
  kProxyStepRecvGPUWait = 12,   // recv: waiting for the GPU to consume it
  kProxyCtrlIdle = 13,
  kProxyCtrlActive = 14,
  kProxyCtrlSleep = 15,
  kProxyCtrlWakeup = 16,
  kProxyCtrlAppend = 17,
  kProxyCtrlAppendEnd = 18,
  kProxyOpInProgressV4 = 19,
  kProxyStepSendPeerWaitV4 = 20,  // send: waiting for the receiver's credit
  kNetPluginUpdate = 21,
  kKernelChStop = 22,           // the kernel finished the channel (v4+: with its GPU timer)
  kGroupStartApiStop = 23,      // v5+
  kGroupEndApiStart = 24,       // v5+
  kCeCollStart = 25,            // v6
  kCeCollComplete = 26,
  kCeSyncStart = 27,
  kCeSyncComplete = 28,
  kCeBatchStart = 29,
  kCeBatchComplete = 30,
};

using DebugLogger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
using ResultT = int;  // ncclResult_t

struct ProxyOpDescr {
  pid_t pid;          // process that made the proxy op (PXN: may be another process)
  uint8_t channelId;
  int peer;           // the other rank of the transfer, in the communicator
  int nSteps;
  int chunkSize;      // bytes per step (v1–v3: the only size there is)
  int isSend;
};
struct ProxyStepDescr {
  int step;
};
struct NetPluginDescr {
  int64_t id;
  void* data;
};

// ---- v1 (NCCL 2.23): enum-valued fields ----
struct DescrV1 {
  uint8_t type;
  void* parentObj;  // coll: the group; proxyOp: the coll/p2p; proxyStep: the proxyOp
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;        // ncclFunc_t of 2.23 (Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4)
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;    // ncclDataType_t
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;        // Tree 0, Ring 1, CollNetDirect 2, CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6
      uint8_t proto;       // LL 0, LL128 1, Simple 2
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;        // Send 6, Recv 7
      void* buff;
      uint8_t datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
  } u;
};
union StateArgsV1 {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
};

// ---- v2 (NCCL 2.24): strings ----
struct DescrV2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
  } u;
};
using StateArgsV2 = StateArgsV1;

// ---- v3 (NCCL 2.26): kernel channels, network plugin events ----
struct DescrV3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    struct {
      uint8_t channelId;
    } kernelCh;
    NetPluginDescr netPlugin;
  } u;
};
using StateArgsV3 = StateArgsV1;

// ---- v4 (NCCL 2.27): GPU timers, transfer sizes per step ----
struct CollV4 {
  uint64_t seqNumber;
  const char* func;
  const void* sendBuff;
  void* recvBuff;
  size_t count;
  int root;
  const char* datatype;
  uint8_t nChannels;
  uint8_t nWarps;
  const char* algo;
  const char* proto;
};
struct P2pV4 {
  const char* func;
  void* buff;
  const char* datatype;
  size_t count;
  int peer;
  uint8_t nChannels;
};
struct KernelChV4 {
  uint8_t channelId;
  uint64_t pTimer;  // GPU globaltimer (ns) when the kernel started this channel's work
};
struct DescrV4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    CollV4 coll;
    P2pV4 p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChV4 kernelCh;
    NetPluginDescr netPlugin;
  } u;
};
union StateArgsV4 {
  struct {
    size_t transSize;  // bytes this step moves
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;  // GPU globaltimer (ns) when the kernel finished the channel
  } kernelCh;
};

// ---- v5 (NCCL 2.28): API events ----
struct DescrV5 {
  uint64_t type;
  void* parentObj;  // coll/p2p: the collApi/p2pApi event; API events: the groupApi event
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;  // 1: NCCL's implicit group; > 1: the user's ncclGroupStart
    } groupApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      CollV4 v4;
      void* parentGroup;  // the v4-style group event
    } coll;
    struct {
      P2pV4 v4;
      void* parentGroup;
    } p2p;
    ProxyOpDescr proxyOp;
    ProxyStepDescr proxyStep;
    KernelChV4 kernelCh;
    NetPluginDescr netPlugin;
  } u;
};
union StateArgsV5 {
  StateArgsV4 v4;
  struct {
    uint64_t pTimer;
  } kernelStep;
};

// ---- v6 (NCCL 2.29): copy-engine collectives. The v5 members keep their
// offsets (a union); the CE members are only counted by ringside. ----
struct DescrV6 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    decltype(DescrV5::u) v5;
    struct {
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      const char* syncStrategy;
      bool intraBatchSync;
      uint32_t batchSize;
      uint32_t numBatches;
      uint32_t ceSeqNum;
      void* stream;
    } ceColl;
  } u;
};
using StateArgsV6 = StateArgsV5;

// The tables NCCL looks up as ncclProfiler_v1 … ncclProfiler_v6.
template <class Descr, class Args, class Init>
struct Table {
  const char* name;
  Init init;
  ResultT (*startEvent)(void* context, void** eHandle, Descr* eDescr);
  ResultT (*stopEvent)(void* eHandle);
  ResultT (*recordEventState)(void* eHandle, int eState, Args* eStateArgs);
  ResultT (*finalize)(void* context);
};
using InitV1 = ResultT (*)(void** context, int* eActivationMask);
using InitV4 = ResultT (*)(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                           int nNodes, int nranks, int rank, DebugLogger logfn);
using InitV5 = ResultT (*)(void** context, uint64_t commId, int* eActivationMask, const char* commName,
                           int nNodes, int nranks, int rank, DebugLogger logfn);
using TableV1 = Table<DescrV1, StateArgsV1, InitV1>;
using TableV2 = Table<DescrV2, StateArgsV2, InitV1>;
using TableV3 = Table<DescrV3, StateArgsV3, InitV1>;
using TableV4 = Table<DescrV4, StateArgsV4, InitV4>;
using TableV5 = Table<DescrV5, StateArgsV5, InitV5>;
using TableV6 = Table<DescrV6, StateArgsV6, InitV5>;

}  // namespace ringside::nccl::profiler
