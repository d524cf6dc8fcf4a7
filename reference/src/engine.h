// reference/src/engine.h — moves collectives' messages over the peer links.
//
// An algorithm (ring.cpp, tree.cpp, the ping-pong) describes one collective
// from one rank's view as a Schedule: in-order streams of messages per
// (link, frame kind), to send and to receive, and what happens when a
// message has arrived (reduce it, make later sends ready). The engine knows
// nothing of rings or trees; it only moves bytes:
//
//   non-blocking sockets, poll() over every link, one thread at a time
//   driving. Whenever a link can take bytes, the next ready message of one
//   of its send streams (round robin between streams, and between the
//   collectives in flight, never switching inside a message) is written from
//   where it lies; whenever a link has bytes, the frame header is read and
//   checked, then the payload is read straight into its place (or into a
//   scratch chunk when it is to be reduced). A completed receive is handed
//   to its schedule at once, and the sends it made ready are written before
//   anything else is read. While the driving thread reduces chunk k, the
//   kernel keeps receiving chunk k+1 into the socket buffer and keeps sending
//   what was already written: sending, receiving and reducing overlap
//   without a second thread.
//
// Several collectives at once (Engine::run from several threads): each is
// named by a key that every rank gives the same collective, carried in every
// frame (the space, from the frame kind and the sequence number's top bit,
// and the sequence number). A frame is only ever handed to the collective
// whose key, stream kind, step, chunk and length it carries. A frame of a
// tagged collective that has not started here yet is read on and kept ("stashed",
// 256 MiB of payload at most in all; past that its link waits until that
// collective starts) and handed over, in the order it came, when it starts:
// a rank that runs its collectives in another order than its peers
// (PyTorch's two Gloo worker threads) never takes one collective's bytes for
// another's, and never stops reading a link that a collective in flight
// needs (with several peers, a link that waited could hold up a collective
// here while that collective held up the peer). Whichever waiting thread
// finds nobody driving drives every collective in flight until its own is
// done, then hands over. A frame of a later collective numbered by the
// communicator (they run one at a time: a peer ran ahead) stays in its link's
// header buffer ("parked"; the link is not read again until that collective
// starts), so its payload is read straight into place.
//
// Deadline: the collectives fail when no byte moved on any link for
// `timeout` (a silent peer), naming the peer waited for. A reset or EOF fails
// them at once, naming that peer. On failure the engine tells every other
// peer (an abort frame, after finishing a half-written message) so that all
// survivors fail quickly and name the same cause; the engine is unusable
// from then on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringside/collector/event.h"
#include "wire.h"

namespace ringside::reference::detail {

// One TCP connection to a peer; lives as long as the communicator.
struct Link {
  int fd = -1;
  int peer = -1;
  bool closed = false;  // EOF seen, or shut down after a failure
};

// Sequence numbers with this bit set name collectives that may run at once
// (Communicator::allreduceTagged: the caller's id, the same on every rank);
// without it, the communicator's own count of its calls (one at a time).
inline constexpr uint64_t kTaggedSeqBit = uint64_t{1} << 63;

struct Message {
  char* ptr = nullptr;  // send: the bytes; receive: where they go (unless reduce)
  size_t bytes = 0;
  uint32_t step = 0;        // as carried in the frame header
  uint32_t chunk = 0;       // as carried in the frame header, and the trace's chunk
  uint8_t phase = 0;        // collector::Phase
  int16_t trace_step = -1;  // the trace's step
  bool reduce = false;      // receive: payload goes to a scratch chunk handed to received()
};

// A message of a point-to-point exchange (ping-pong, barrier rounds): `bytes` at `ptr`, its step
// (in the frame and the trace) the exchange's round.
inline Message roundMessage(char* ptr, size_t bytes, uint32_t round) {
  Message m;
  m.ptr = ptr;
  m.bytes = bytes;
  m.step = round;
  m.trace_step = static_cast<int16_t>(round);
  return m;
}

struct SendStream {
  int link = -1;
  FrameKind kind = FrameKind::kRing;
  uint32_t total = 0;
  uint32_t ready = 0;  // messages [next, ready) may be written now
  uint32_t next = 0;
};

struct RecvStream {
  int link = -1;
  FrameKind kind = FrameKind::kRing;
  uint32_t total = 0;
  uint32_t next = 0;
};

// Chunk-sized buffers for received data that is to be reduced. Kept by the
// communicator across collectives.
class ScratchPool {
 public:
  void prepare(size_t bytes);
  char* acquire();
  void release(char* p) { free_.push_back(p); }

 private:
  size_t bytes_ = 0;
  std::vector<std::unique_ptr<char[]>> owned_;
  std::vector<char*> free_;
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual Message sendMessage(size_t stream, uint32_t index) = 0;
  virtual Message recvMessage(size_t stream, uint32_t index) = 0;
  // Message `index` of receive stream `stream` is complete. For a reducing
  // message its payload is in `scratch`, which the schedule gives back to
  // `pool` once reduced (it may hold it to keep a fixed reduction order).
  virtual void received(size_t stream, uint32_t index, char* scratch) = 0;

  std::vector<SendStream> sends;
  std::vector<RecvStream> recvs;
  ScratchPool* pool = nullptr;
  size_t scratch_bytes = 0;  // the largest reducing message (pool chunk size)
};

struct EngineParams {
  uint64_t token = 0;
  uint64_t seq = 0;   // this collective's sequence number (kTaggedSeqBit: a tagged one)
  int rank = -1;      // this rank, for the failure messages
  bool ping = false;  // frames of pingPong (their own sequence numbers)
  std::chrono::milliseconds timeout{30000};
  // Tracing: when non-null, one kTransfer event per message is appended
  // (comm and id taken from `trace_template`).
  std::vector<collector::Event>* events = nullptr;
  collector::Event trace_template;
};

// The links' I/O state across collectives, and the collectives in flight.
// Thread-safe: run() may be called from several threads at once, each with a
// collective of its own key (seq, ping); token, rank and timeout are the
// engine's (the first run's params give them when not set here).
class Engine {
 public:
  Engine(std::vector<Link>& links, uint64_t token, int rank, std::chrono::milliseconds timeout);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Runs the schedule to completion. False + *error (one line, naming a peer
  // rank) on failure; then every link is closed for writing after an abort
  // frame, and the engine fails every later run.
  bool run(Schedule& schedule, const EngineParams& params, std::string* error);
  // The links vector grew (a peer connected later). Only with no run in progress.
  void linksAdded();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One collective on links that no other engine uses (tests).
bool runEngine(Schedule& schedule, std::vector<Link>& links, const EngineParams& params,
               std::string* error);

}  // namespace ringside::reference::detail
