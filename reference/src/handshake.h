// reference/src/handshake.h — establishing the peer links of a communicator.
//
// The higher rank of a pair dials the lower one. The dialler sends a hello
// (its rank, the world size, the link token: the job token mixed with the
// secrets from the address exchange, communicator.cpp); the listener checks it and
// answers with an ack carrying its own rank; the dialler checks that. A
// listener discards, without an answer, any connection whose hello is
// malformed, truncated, late, from another job (token), from a rank it does
// not expect or already has: a stray connection never breaks the job. It
// keeps accepting until every expected peer arrived or the deadline passed.
#pragma once

#include <string>
#include <vector>

#include "engine.h"
#include "io.h"

namespace ringside::reference::detail {

struct HandshakeParams {
  int listen_fd = -1;
  int rank = 0;
  int world_size = 1;
  uint64_t token = 0;  // the link token
  const std::vector<std::string>* addresses = nullptr;  // "host:port" per rank (dialled peers)
  std::vector<int> dial;                                // peers to dial (lower ranks)
  std::vector<int> accept;                              // peers expected to dial us (higher ranks)
  Deadline deadline;
};

// Appends one Link per peer to *links. False + *error naming the missing
// peers when the deadline passes or a dialled peer answers wrongly.
bool connectPeers(const HandshakeParams& p, std::vector<Link>* links, std::string* error);

}  // namespace ringside::reference::detail
