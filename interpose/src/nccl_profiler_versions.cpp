// The NCCL profiler plugin interface, every version ringside serves: one
// exported table per version (ncclProfiler_v1 … ncclProfiler_v6), each a thin
// adapter from that version's descriptors (nccl_profiler_abi.h) to the one
// internal event model (nccl_profiler.h). NCCL looks the tables up newest
// first and uses the first one it knows, so one library serves NCCL 2.23 …
// 2.29 (and a later NCCL that still accepts v6).
#include <cstdint>

#include "nccl_profiler.h"
#include "nccl_profiler_abi.h"
#include "symbols.h"

namespace ringside::interpose::nccl_profiler {
namespace {

namespace abi = ringside::nccl::profiler;

Kind kindOf(uint64_t type) {
  switch (type) {
    case abi::kGroup: return Kind::kGroup;
    case abi::kColl: return Kind::kColl;
    case abi::kP2p: return Kind::kP2p;
    case abi::kProxyOp: return Kind::kProxyOp;
    case abi::kProxyStep: return Kind::kProxyStep;
    case abi::kProxyCtrl: return Kind::kProxyCtrl;
    case abi::kKernelCh: return Kind::kKernelCh;
    case abi::kNetPlugin: return Kind::kNetPlugin;
    case abi::kGroupApi: return Kind::kGroupApi;
    case abi::kCollApi: return Kind::kCollApi;
    case abi::kP2pApi: return Kind::kP2pApi;
    case abi::kKernelLaunch: return Kind::kKernelLaunch;
    case abi::kCeColl: case abi::kCeSync: case abi::kCeBatch: return Kind::kCe;
    default: return Kind::kUnknown;
  }
}

void proxyFields(Event* e, const abi::ProxyOpDescr& p) {
  e->pid = p.pid;
  e->channel = p.channelId;
  e->peer = p.peer;
  e->steps = p.nSteps;
  e->chunk_size = p.chunkSize;
  e->is_send = p.isSend != 0;
}

// Fields every version lays out the same way once the kind is known.
template <class D>
void common(Event* e, const D* d) {
  e->kind = kindOf(d->type);
  e->parent = d->parentObj;
  e->rank = d->rank;
}

// v2/v3: string-valued coll and p2p (v3 has no trafficBytes, same names otherwise).
template <class D>
void stringCollP2p(Event* e, const D* d) {
  if (e->kind == Kind::kColl) {
    e->comm_hash = d->u.coll.commHash;
    e->op = opFromName(d->u.coll.func);
    e->count = d->u.coll.count;
    e->root = d->u.coll.root;
    e->dtype = dtypeFromName(d->u.coll.datatype);
    e->channels = d->u.coll.nMaxChannels;
    e->algorithm = algorithmFromName(d->u.coll.algo);
    e->protocol = protocolFromName(d->u.coll.proto);
  } else if (e->kind == Kind::kP2p) {
    e->comm_hash = d->u.p2p.commHash;
    e->op = opFromName(d->u.p2p.func);
    e->count = d->u.p2p.count;
    e->dtype = dtypeFromName(d->u.p2p.datatype);
    e->peer = d->u.p2p.peer;
  }
}

// v4+ coll/p2p.
void collV4(Event* e, const abi::CollV4& c) {
  e->op = opFromName(c.func);
  e->count = c.count;
  e->root = c.root;
  e->dtype = dtypeFromName(c.datatype);
  e->channels = c.nChannels;
  e->algorithm = algorithmFromName(c.algo);
  e->protocol = protocolFromName(c.proto);
}
void p2pV4(Event* e, const abi::P2pV4& p) {
  e->op = opFromName(p.func);
  e->count = p.count;
  e->dtype = dtypeFromName(p.datatype);
  e->peer = p.peer;
  e->channels = p.nChannels;
}

Event fromV1(const abi::DescrV1* d) {
  Event e;
  common(&e, d);
  switch (e.kind) {
    case Kind::kColl:
      e.comm_hash = d->u.coll.commHash;
      e.op = opFromV1(d->u.coll.func);
      e.count = d->u.coll.count;
      e.root = d->u.coll.root;
      e.dtype = dtypeFromValue(d->u.coll.datatype);
      e.channels = d->u.coll.nMaxChannels;
      e.algorithm = algorithmFromV1(d->u.coll.algo);
      e.protocol = protocolFromV1(d->u.coll.proto);
      break;
    case Kind::kP2p:
      e.comm_hash = d->u.p2p.commHash;
      e.op = opFromV1(d->u.p2p.func);
      e.count = d->u.p2p.count;
      e.dtype = dtypeFromValue(d->u.p2p.datatype);
      e.peer = d->u.p2p.peer;
      break;
    case Kind::kProxyOp: proxyFields(&e, d->u.proxyOp); break;
    case Kind::kProxyStep: e.step = d->u.proxyStep.step; break;
    default: break;
  }
  return e;
}

Event fromV2(const abi::DescrV2* d) {
  Event e;
  common(&e, d);
  stringCollP2p(&e, d);
  if (e.kind == Kind::kProxyOp) proxyFields(&e, d->u.proxyOp);
  if (e.kind == Kind::kProxyStep) e.step = d->u.proxyStep.step;
  return e;
}

Event fromV3(const abi::DescrV3* d) {
  Event e;
  common(&e, d);
  stringCollP2p(&e, d);
  if (e.kind == Kind::kProxyOp) proxyFields(&e, d->u.proxyOp);
  if (e.kind == Kind::kProxyStep) e.step = d->u.proxyStep.step;
  if (e.kind == Kind::kKernelCh) e.channel = d->u.kernelCh.channelId;  // no GPU timer before v4
  return e;
}

Event fromV4(const abi::DescrV4* d) {
  Event e;
  common(&e, d);
  switch (e.kind) {
    case Kind::kColl: collV4(&e, d->u.coll); break;
    case Kind::kP2p: p2pV4(&e, d->u.p2p); break;
    case Kind::kProxyOp: proxyFields(&e, d->u.proxyOp); break;
    case Kind::kProxyStep: e.step = d->u.proxyStep.step; break;
    case Kind::kKernelCh:
      e.channel = d->u.kernelCh.channelId;
      e.gpu_timer = d->u.kernelCh.pTimer;
      break;
    default: break;
  }
  return e;
}

template <class U>
void unionV5(Event* e, const U& u) {
  switch (e->kind) {
    case Kind::kGroupApi: e->group_depth = u.groupApi.groupDepth; break;
    case Kind::kCollApi:
      e->op = opFromName(u.collApi.func);
      e->count = u.collApi.count;
      e->dtype = dtypeFromName(u.collApi.datatype);
      e->root = u.collApi.root;
      e->stream = u.collApi.stream;
      break;
    case Kind::kP2pApi:
      e->op = opFromName(u.p2pApi.func);
      e->count = u.p2pApi.count;
      e->dtype = dtypeFromName(u.p2pApi.datatype);
      e->stream = u.p2pApi.stream;
      break;
    case Kind::kKernelLaunch: e->stream = u.kernelLaunch.stream; break;
    case Kind::kColl: collV4(e, u.coll.v4); break;
    case Kind::kP2p: p2pV4(e, u.p2p.v4); break;
    case Kind::kProxyOp: proxyFields(e, u.proxyOp); break;
    case Kind::kProxyStep: e->step = u.proxyStep.step; break;
    case Kind::kKernelCh:
      e->channel = u.kernelCh.channelId;
      e->gpu_timer = u.kernelCh.pTimer;
      break;
    default: break;
  }
}

Event fromV5(const abi::DescrV5* d) {
  Event e;
  common(&e, d);
  unionV5(&e, d->u);
  return e;
}

Event fromV6(const abi::DescrV6* d) {
  Event e;
  common(&e, d);
  unionV5(&e, d->u.v5);  // CE events carry nothing else ringside keeps (counted)
  return e;
}

// ---- the entry points of each version ----
int initV1(void** context, int* mask) { return init(1, context, mask, InitInfo{}); }
int initV2(void** context, int* mask) { return init(2, context, mask, InitInfo{}); }
int initV3(void** context, int* mask) { return init(3, context, mask, InitInfo{}); }
int initV4(void** context, int* mask, const char* name, uint64_t hash, int nnodes, int nranks, int rank,
           abi::DebugLogger) {
  return init(4, context, mask, InitInfo{hash, name, nnodes, nranks, rank});
}
template <int V>
int initV5(void** context, uint64_t id, int* mask, const char* name, int nnodes, int nranks, int rank,
           abi::DebugLogger) {
  return init(V, context, mask, InitInfo{id, name, nnodes, nranks, rank});
}

int startV1(void* c, void** h, abi::DescrV1* d) { return d == nullptr ? 0 : startEvent(c, h, fromV1(d)); }
int startV2(void* c, void** h, abi::DescrV2* d) { return d == nullptr ? 0 : startEvent(c, h, fromV2(d)); }
int startV3(void* c, void** h, abi::DescrV3* d) { return d == nullptr ? 0 : startEvent(c, h, fromV3(d)); }
int startV4(void* c, void** h, abi::DescrV4* d) { return d == nullptr ? 0 : startEvent(c, h, fromV4(d)); }
int startV5(void* c, void** h, abi::DescrV5* d) { return d == nullptr ? 0 : startEvent(c, h, fromV5(d)); }
int startV6(void* c, void** h, abi::DescrV6* d) { return d == nullptr ? 0 : startEvent(c, h, fromV6(d)); }

// v1–v3: the only size is the proxy op's transferred total; steps use the chunk size.
int stateV1(void* h, int state, abi::StateArgsV1*) { return recordEventState(h, state, StateArgs{}); }
int stateV4(void* h, int state, abi::StateArgsV4* a) {
  StateArgs s;
  if (a != nullptr) {
    if (state >= abi::kProxyStepSendGPUWait && state <= abi::kProxyStepRecvGPUWait) s.trans_size = a->proxyStep.transSize;
    if (state == abi::kProxyStepSendPeerWaitV4) s.trans_size = a->proxyStep.transSize;
    if (state == abi::kKernelChStop) s.gpu_timer = a->kernelCh.pTimer;
  }
  return recordEventState(h, state, s);
}
int stateV5(void* h, int state, abi::StateArgsV5* a) { return stateV4(h, state, a != nullptr ? &a->v4 : nullptr); }

}  // namespace
}  // namespace ringside::interpose::nccl_profiler

namespace rnp = ringside::interpose::nccl_profiler;
namespace rabi = ringside::nccl::profiler;

extern "C" {
RINGSIDE_EXPORT extern const rabi::TableV1 ncclProfiler_v1;
RINGSIDE_EXPORT extern const rabi::TableV2 ncclProfiler_v2;
RINGSIDE_EXPORT extern const rabi::TableV3 ncclProfiler_v3;
RINGSIDE_EXPORT extern const rabi::TableV4 ncclProfiler_v4;
RINGSIDE_EXPORT extern const rabi::TableV5 ncclProfiler_v5;
RINGSIDE_EXPORT extern const rabi::TableV6 ncclProfiler_v6;

const rabi::TableV1 ncclProfiler_v1 = {"ringside", rnp::initV1, rnp::startV1, rnp::stopEvent, rnp::stateV1,
                                       rnp::finalize};
const rabi::TableV2 ncclProfiler_v2 = {"ringside", rnp::initV2, rnp::startV2, rnp::stopEvent, rnp::stateV1,
                                       rnp::finalize};
const rabi::TableV3 ncclProfiler_v3 = {"ringside", rnp::initV3, rnp::startV3, rnp::stopEvent, rnp::stateV1,
                                       rnp::finalize};
const rabi::TableV4 ncclProfiler_v4 = {"ringside", rnp::initV4, rnp::startV4, rnp::stopEvent, rnp::stateV4,
                                       rnp::finalize};
const rabi::TableV5 ncclProfiler_v5 = {"ringside", rnp::initV5<5>, rnp::startV5, rnp::stopEvent, rnp::stateV5,
                                       rnp::finalize};
const rabi::TableV6 ncclProfiler_v6 = {"ringside", rnp::initV5<6>, rnp::startV6, rnp::stopEvent, rnp::stateV5,
                                       rnp::finalize};
}
