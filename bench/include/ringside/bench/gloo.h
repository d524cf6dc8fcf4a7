// ringside/bench/gloo.h — the Gloo side of a `ringside bench` rank: a Gloo context
// connected through ringside's Rendezvous (no FileStore, no Redis), and
// gloo::allreduce calls that record themselves in the trace, since bench
// workers do not run under the preload library.
//
// Built with Debian's libgloo-dev (RINGSIDE_BENCH_GLOO); without it
// glooBenchAvailable() is false and connect() fails with a one-line reason.
// Errors: false/nullptr + one line in *error; Gloo's exceptions never escape.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "ringside/collector/event.h"
#include "ringside/reference/rendezvous.h"

namespace ringside::bench {

bool glooBenchAvailable();

class GlooBench {
 public:
  struct Options {
    int rank = -1;
    int size = -1;
    std::chrono::milliseconds timeout{30000};
    std::string hostname;  // address Gloo's TCP device binds to and advertises
    std::string iface;     // or a network interface (GLOO_SOCKET_IFNAME); wins when set
  };

  // Collective: every rank connects a full mesh; the addresses travel through
  // `rendezvous` under keys prefixed "ringside-bench/gloo/". When the collector
  // is active, the context is registered as communicator "gloo/<size>/<k>".
  static std::unique_ptr<GlooBench> connect(reference::Rendezvous* rendezvous,
                                            const Options& options, std::string* error);
  virtual ~GlooBench() = default;
  GlooBench(const GlooBench&) = delete;
  GlooBench& operator=(const GlooBench&) = delete;

  // In-place all-reduce of `count` elements with Gloo's ring (bcube = false)
  // or BCUBE algorithm; the reduction is reference::reduceInto, the same
  // kernel ringside's ring and tree use, so only the communication differs.
  // Emits one collective event (library gloo) when the collector is active.
  virtual bool allreduce(void* data, size_t count, collector::DType dtype,
                         collector::ReduceOp op, bool bcube, std::string* error) = 0;

 protected:
  GlooBench() = default;
};

}  // namespace ringside::bench
