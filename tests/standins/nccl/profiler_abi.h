// The NCCL profiler plugin ABI as NCCL itself lays it out (flat structs,
// anonymous unions), transcribed separately from the plugin's own
// declarations (interpose/src/nccl_profiler_abi.h) so that the stand-ins
// check the plugin against an independent reading of NCCL's headers.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace fake_nccl::prof {

enum : uint64_t {
  Group = 1 << 0, Coll = 1 << 1, P2p = 1 << 2, ProxyOp = 1 << 3, ProxyStep = 1 << 4, ProxyCtrl = 1 << 5,
  KernelCh = 1 << 6, NetPlugin = 1 << 7, GroupApi = 1 << 8, CollApi = 1 << 9, P2pApi = 1 << 10,
  KernelLaunch = 1 << 11, CeColl = 1 << 12,
};
enum : int {
  ProxyOpSendPosted = 0, ProxyOpSendTransmitted = 2, ProxyOpSendDone = 3, ProxyOpRecvPosted = 4,
  ProxyOpRecvReceived = 5, ProxyOpRecvDone = 7,
  ProxyStepSendGPUWait = 8, ProxyStepSendWait = 9, ProxyStepRecvWait = 10, ProxyStepRecvFlushWait = 11,
  ProxyStepRecvGPUWait = 12, ProxyOpInProgress_v4 = 19, ProxyStepSendPeerWait_v4 = 20, KernelChStop = 22,
  GroupStartApiStop = 23, GroupEndApiStart = 24,
};

typedef void (*Logger)(int, unsigned long, const char*, int, const char*, ...);

struct Descr_v1 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name; uint64_t commHash; uint64_t seqNumber; uint8_t func; void const* sendBuff; void* recvBuff;
      size_t count; int root; uint8_t datatype; uint32_t op; size_t trafficBytes; uint8_t nMaxChannels;
      uint8_t nWarps; uint8_t algo; uint8_t proto; int isCollnet; int isNvls;
    } coll;
    struct { const char* name; uint64_t commHash; uint8_t func; void* buff; uint8_t datatype; size_t count; int peer; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
  };
};
union Args_v1 {
  struct { size_t transSize; int steps; } proxyOp;
  struct { int appendedProxyOps; } proxyCtrl;
};

struct Descr_v2 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name; uint64_t commHash; uint64_t seqNumber; const char* func; void const* sendBuff;
      void* recvBuff; size_t count; int root; const char* datatype; size_t trafficBytes; uint8_t nMaxChannels;
      uint8_t nWarps; const char* algo; const char* proto;
    } coll;
    struct { const char* name; uint64_t commHash; const char* func; void* buff; const char* datatype; size_t count; int peer; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
  };
};

struct Descr_v3 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      const char* name; uint64_t commHash; uint64_t seqNumber; const char* func; void const* sendBuff;
      void* recvBuff; size_t count; int root; const char* datatype; uint8_t nMaxChannels; uint8_t nWarps;
      const char* algo; const char* proto;
    } coll;
    struct { const char* name; uint64_t commHash; const char* func; void* buff; const char* datatype; size_t count; int peer; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; } kernelCh;
    struct { int64_t id; void* data; } netPlugin;
  };
};

struct Descr_v4 {
  uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      uint64_t seqNumber; const char* func; void const* sendBuff; void* recvBuff; size_t count; int root;
      const char* datatype; uint8_t nChannels; uint8_t nWarps; const char* algo; const char* proto;
    } coll;
    struct { const char* func; void* buff; const char* datatype; size_t count; int peer; uint8_t nChannels; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
    struct { int64_t id; void* data; } netPlugin;
  };
};
union Args_v4 {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void* data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
};

// v5 and v6 share the layout of everything ringside reads; v6 adds CE members.
struct Descr_v5 {
  uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct { bool graphCaptured; int groupDepth; } groupApi;
    struct { const char* func; size_t count; const char* datatype; int root; void* stream; bool graphCaptured; } collApi;
    struct { const char* func; size_t count; const char* datatype; void* stream; bool graphCaptured; } p2pApi;
    struct { void* stream; } kernelLaunch;
    struct {
      uint64_t seqNumber; const char* func; void const* sendBuff; void* recvBuff; size_t count; int root;
      const char* datatype; uint8_t nChannels; uint8_t nWarps; const char* algo; const char* proto; void* parentGroup;
    } coll;
    struct { const char* func; void* buff; const char* datatype; size_t count; int peer; uint8_t nChannels; void* parentGroup; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps; int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
    struct { int64_t id; void* data; } netPlugin;
    struct {
      uint64_t seqNumber; const char* func; void const* sendBuff; void* recvBuff; size_t count; int root;
      const char* datatype; const char* syncStrategy; bool intraBatchSync; uint32_t batchSize; uint32_t numBatches;
      uint32_t ceSeqNum; void* stream;
    } ceColl;  // v6 only
  };
};
union Args_v5 {
  struct { size_t transSize; } proxyStep;
  struct { int appendedProxyOps; } proxyCtrl;
  struct { void* data; } netPlugin;
  struct { uint64_t pTimer; } kernelCh;
  struct { uint64_t pTimer; } kernelStep;
};

template <class D, class A, class I>
struct Table {
  const char* name;
  I init;
  int (*startEvent)(void* context, void** eHandle, D* eDescr);
  int (*stopEvent)(void* eHandle);
  int (*recordEventState)(void* eHandle, int eState, A* eStateArgs);
  int (*finalize)(void* context);
};
typedef int (*Init_v1)(void**, int*);
typedef int (*Init_v4)(void**, int*, const char*, uint64_t, int, int, int, Logger);
typedef int (*Init_v5)(void**, uint64_t, int*, const char*, int, int, int, Logger);
typedef Table<Descr_v1, Args_v1, Init_v1> Table_v1;
typedef Table<Descr_v2, Args_v1, Init_v1> Table_v2;
typedef Table<Descr_v3, Args_v1, Init_v1> Table_v3;
typedef Table<Descr_v4, Args_v4, Init_v4> Table_v4;
typedef Table<Descr_v5, Args_v5, Init_v5> Table_v5;
typedef Table<Descr_v5, Args_v5, Init_v5> Table_v6;

}  // namespace fake_nccl::prof
