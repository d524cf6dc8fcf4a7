// reference/rendezvous.h — bootstrap through MASTER_ADDR/MASTER_PORT.
//
// torchrun-compatible: rank 0 serves a tiny key-value store on
// MASTER_ADDR:MASTER_PORT (TCP), every rank (0 included) is a client. Used to
// exchange the ranks' listening addresses, and by `ringside bench` as the
// store behind Gloo's rendezvous. Every frame carries the job token; a client
// with another token is refused. Every blocking call has a deadline.
// Errors: false + one line in *error; nothing throws.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ringside::reference {

struct RendezvousOptions {
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  int rank = -1;
  int world_size = -1;
  uint64_t job_token = 0;  // same on every rank of one job
  std::chrono::milliseconds timeout{60000};
  // The store rank 0 serves: at most this many connections at once (0: 2 x world size + 64),
  // so connections from elsewhere cannot take all of rank 0's descriptors; a connection that
  // has sent no request with the job's token within store_idle_timeout is closed, and when the
  // limit is reached the oldest such connection makes room for a new one. A rank's own
  // connection sends its first request at once and is never closed for being idle.
  int store_max_connections = 0;
  std::chrono::milliseconds store_idle_timeout{10000};
};

// Fills options from MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE (and
// RINGSIDE_JOB_TOKEN, or a token derived from MASTER_ADDR:PORT). False + error
// if a variable is missing or malformed.
bool rendezvousOptionsFromEnv(RendezvousOptions* out, std::string* error);

// Exchanges one blob per rank: all[r] is rank r's `mine`. Collective: every
// rank calls it with the same sequence of calls.
using ExchangeFn =
    std::function<bool(const std::string& mine, std::vector<std::string>* all, std::string* error)>;

class Rendezvous {
 public:
  static std::unique_ptr<Rendezvous> connect(const RendezvousOptions& options, std::string* error);
  virtual ~Rendezvous() = default;
  Rendezvous(const Rendezvous&) = delete;
  Rendezvous& operator=(const Rendezvous&) = delete;

  virtual bool set(const std::string& key, const std::string& value, std::string* error) = 0;
  // Waits (up to the deadline) until `key` exists.
  virtual bool get(const std::string& key, std::string* value, std::string* error) = 0;
  // Collective exchange built on set/get (keys are numbered per call).
  virtual bool exchange(const std::string& mine, std::vector<std::string>* all, std::string* error) = 0;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  virtual uint64_t jobToken() const = 0;

 protected:
  Rendezvous() = default;
};

}  // namespace ringside::reference
