// reference/communicator.h — ringside's own all-reduce over TCP.
//
// One connection per peer pair that the ring or the double binary tree uses,
// set up once by create(); every frame carries the run's link token (the job
// token mixed with a secret each rank publishes in the address exchange: only
// peers that present it become links, strangers are dropped), a sequence
// number (the collective's) and a length, checked before anything is
// allocated. Every blocking step has a deadline, so a dead peer (reset) or a
// silent one (SIGSTOP) makes allreduce() fail within the timeout with an error
// that names the peer rank and the sequence number, never hang.
//
// Tracing: when the collector is active, each allreduce() emits one collective
// event (library ringside-ring / ringside-tree) and one complete transfer
// event per message with its phase (reduce-scatter, all-gather, reduce,
// broadcast), step and chunk. When it is not, nothing is recorded.
//
// Threads: allreduceTagged() may be called from several threads at once, each
// call naming its collective with an id that every rank gives the same
// collective (PyTorch's Gloo process group runs its collectives on two worker
// threads, and the order in which they reach a rank differs between ranks;
// Gloo's tag names them): the calls run side by side and each frame goes only
// to the collective whose id it carries. allreduce(), ringFloor() and
// pingPong() number their calls themselves: they are called by one thread at
// a time, in the same order on every rank, and not while a tagged call is in
// flight. Results are bit-identical whatever the transport's read/write
// granularity and whatever else runs at the same time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ringside/reference/rendezvous.h"
#include "ringside/reference/types.h"

namespace ringside::reference {

struct CommunicatorOptions {
  int rank = -1;
  int world_size = -1;
  uint64_t job_token = 0;
  std::chrono::milliseconds timeout{30000};  // deadline of every blocking step
  // Where this rank accepts its peers. Default: the advertise address (127.0.0.1 for a local
  // job), so no other interface takes connections; every interface when advertise_address is set.
  std::string listen_address;
  std::string advertise_address;             // what peers dial; default: the local address used to reach the master, or 127.0.0.1
  size_t chunk_bytes = 0;                    // pipelining chunk; 0 = automatic
  std::string comm_name;                     // trace communicator name; default "ringside/<size>/<k>"
  // Plan Algorithm::kMultipath in create() instead of at its first call: connect the peers its
  // rings need and, with no RINGSIDE_TOPOLOGY and ranks on several hosts, probe every host
  // pair's bandwidth (docs/reference.md). Set it when the caller will run multipath.
  bool prepare_multipath = false;
};

class Communicator {
 public:
  // Collective over all ranks: listens, exchanges addresses through
  // `exchange`, connects to the peers the algorithms need.
  static std::unique_ptr<Communicator> create(const CommunicatorOptions& options, const ExchangeFn& exchange,
                                              std::string* error);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place: data holds `count` elements of `dtype` on entry, the reduction
  // over all ranks on return. Collective. False + one-line error on failure
  // ("allreduce seq 17: rank 3 closed the connection", "... rank 0 got no data from rank 2 for
  // 30000 ms").
  virtual bool allreduce(void* data, size_t count, DType dtype, ReduceOp op, Algorithm algorithm,
                         std::string* error) = 0;

  // allreduce() for callers with collectives in flight on several threads: `id` (below 2^63)
  // names this collective, the same on every rank and not used again while it is in flight.
  // Errors read "allreduce tag <id>: ...".
  virtual bool allreduceTagged(uint64_t id, void* data, size_t count, DType dtype, ReduceOp op,
                               Algorithm algorithm, std::string* error) = 0;

  // Not an all-reduce (bench): the floor of a TCP ring on these connections.
  // Moves exactly the frames the ring moves between the same neighbours, in
  // the same chunks, and reduces the same received chunks into place, but
  // sends every chunk at once instead of waiting for it to arrive from the
  // previous rank, and from the buffer's first chunk (which stays in cache):
  // what the data alone costs through these sockets, with no step waiting on
  // another and no send reading memory. Leaves `data` holding no meaningful
  // result. Collective; fails like allreduce().
  virtual bool ringFloor(void* data, size_t count, DType dtype, ReduceOp op, std::string* error) = 0;

  // Point-to-point helpers for measuring α and β (bench): rank `a` sends
  // `bytes` to `b` and back `iters` times; returns the mean round trip in
  // seconds on both ranks (other ranks return 0 immediately).
  virtual bool pingPong(int a, int b, size_t bytes, int iters, double* seconds, std::string* error) = 0;

 protected:
  Communicator() = default;
};

}  // namespace ringside::reference
