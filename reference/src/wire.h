// reference/src/wire.h — the byte formats on ringside's reference sockets.
//
// Three fixed-size headers, all little-endian, each starting with its own
// magic and a version, each carrying the job token:
//   frame (40 bytes): every data message of a collective, and aborts;
//   hello (24 bytes): the first bytes on a peer connection, both directions;
//   kv    (24 bytes): every request and reply of the rendezvous store.
// A receiver checks the whole header (magic, version, token, kind, sequence,
// length against what it expects) before it allocates or reads a payload
// byte; docs/reference.md has the tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "io.h"

namespace ringside::reference::detail {

inline constexpr uint8_t kWireVersion = 1;

// ---- frame --------------------------------------------------------------
inline constexpr uint32_t kFrameMagic = 0x46525352;  // "RSRF"
inline constexpr size_t kFrameHeaderBytes = 40;
inline constexpr uint64_t kMaxFramePayload = uint64_t{1} << 31;  // never accepted above this
inline constexpr size_t kMaxAbortPayload = 512;

// What a frame carries. Each (link, kind) is one in-order stream.
enum class FrameKind : uint8_t {
  kRing = 1,       // ring reduce-scatter and all-gather messages
  kTreeUp0 = 2,    // tree 0: reduce towards the root
  kTreeDown0 = 3,  // tree 0: broadcast from the root
  kTreeUp1 = 4,    // tree 1
  kTreeDown1 = 5,
  kPing = 6,   // pingPong (its own sequence numbers)
  kAbort = 7,  // "this collective failed": u32 origin rank + reason text
  kMultipath0 = 8,  // multipath: ring k of the plan is kind 8+k (ring.cpp's messages)
};
inline constexpr uint8_t kMultipathKinds = 32;  // multipath.h kMaxMultipathCycles
inline constexpr uint8_t kLastFrameKind = 8 + kMultipathKinds - 1;

inline bool isAllreduceKind(uint8_t k) {
  return (k >= 1 && k <= 5) || (k >= 8 && k <= kLastFrameKind);
}

struct FrameHeader {
  uint32_t magic = kFrameMagic;
  uint8_t version = kWireVersion;
  uint8_t kind = 0;     // FrameKind
  uint8_t phase = 0;    // collector::Phase of the message (checked)
  uint8_t flags = 0;    // 0
  uint64_t token = 0;   // job token
  uint64_t seq = 0;     // the collective's sequence number on this communicator
  uint32_t step = 0;    // algorithm step (ring: 0..2n-3 across both phases; tree: level)
  uint32_t chunk = 0;   // chunk index
  uint64_t length = 0;  // payload bytes that follow
};

inline void encodeFrame(const FrameHeader& h, unsigned char* p) {
  put32(p, h.magic);
  p[4] = h.version;
  p[5] = h.kind;
  p[6] = h.phase;
  p[7] = h.flags;
  put64(p + 8, h.token);
  put64(p + 16, h.seq);
  put32(p + 24, h.step);
  put32(p + 28, h.chunk);
  put64(p + 32, h.length);
}

inline FrameHeader decodeFrame(const unsigned char* p) {
  FrameHeader h;
  h.magic = get32(p);
  h.version = p[4];
  h.kind = p[5];
  h.phase = p[6];
  h.flags = p[7];
  h.token = get64(p + 8);
  h.seq = get64(p + 16);
  h.step = get32(p + 24);
  h.chunk = get32(p + 28);
  h.length = get64(p + 32);
  return h;
}

// ---- hello --------------------------------------------------------------
inline constexpr uint32_t kHelloMagic = 0x53485352;  // "RSHS"
inline constexpr size_t kHelloBytes = 24;
enum class HelloKind : uint8_t { kHello = 1, kAck = 2 };

struct Hello {
  uint32_t magic = kHelloMagic;
  uint8_t version = kWireVersion;
  uint8_t kind = 0;  // HelloKind
  uint16_t pad = 0;  // 0
  uint64_t token = 0;
  uint32_t rank = 0;        // the sender's rank
  uint32_t world_size = 0;  // the sender's communicator size
};

inline void encodeHello(const Hello& h, unsigned char* p) {
  put32(p, h.magic);
  p[4] = h.version;
  p[5] = h.kind;
  p[6] = 0;
  p[7] = 0;
  put64(p + 8, h.token);
  put32(p + 16, h.rank);
  put32(p + 20, h.world_size);
}

inline Hello decodeHello(const unsigned char* p) {
  Hello h;
  h.magic = get32(p);
  h.version = p[4];
  h.kind = p[5];
  h.pad = get16(p + 6);
  h.token = get64(p + 8);
  h.rank = get32(p + 16);
  h.world_size = get32(p + 20);
  return h;
}

// ---- kv (rendezvous) ------------------------------------------------------
inline constexpr uint32_t kKvMagic = 0x564b5352;  // "RSKV"
inline constexpr size_t kKvHeaderBytes = 24;
inline constexpr uint32_t kMaxKeyBytes = 4096;
inline constexpr uint32_t kMaxValueBytes = 64u << 20;
enum class KvOp : uint8_t {
  kSet = 1,
  kGet = 2,
  kOk = 3,
  kValue = 4,
  kError = 5,
  kCheck = 6,
  kMissing = 7
};

struct KvHeader {
  uint32_t magic = kKvMagic;
  uint8_t version = kWireVersion;
  uint8_t op = 0;  // KvOp
  uint64_t token = 0;
  uint32_t key_len = 0;
  uint32_t value_len = 0;
};

inline void encodeKv(const KvHeader& h, unsigned char* p) {
  put32(p, h.magic);
  p[4] = h.version;
  p[5] = h.op;
  p[6] = 0;
  p[7] = 0;
  put64(p + 8, h.token);
  put32(p + 16, h.key_len);
  put32(p + 20, h.value_len);
}

inline KvHeader decodeKv(const unsigned char* p) {
  KvHeader h;
  h.magic = get32(p);
  h.version = p[4];
  h.op = p[5];
  h.token = get64(p + 8);
  h.key_len = get32(p + 16);
  h.value_len = get32(p + 20);
  return h;
}

}  // namespace ringside::reference::detail
