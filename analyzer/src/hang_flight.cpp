// analyzer/hang_flight.cpp — flight rows as judgeHang()'s input (hang_flight.h).
#include "ringside/analyzer/hang_flight.h"

namespace ringside::analyzer::hang {

Call fromFlight(const storage::FlightCallRow& row) {
  Call out;
  out.comm = row.comm;
  out.seq = row.seq;
  out.op = row.op;
  out.library = row.library;
  out.bytes = row.bytes == storage::kNone ? 0 : row.bytes;
  out.dtype = row.dtype;
  out.root = row.root;
  if (!parseCallState(row.state, &out.state)) out.state = CallState::kEntered;
  out.enter_ns = row.enter_ns;
  out.exit_ns = out.open() ? -1 : row.exit_ns;
  out.step = row.step;
  return out;
}

Message fromFlight(const storage::FlightMessageRow& row) {
  Message out;
  out.comm = row.comm;
  out.seq = row.seq;
  out.peer = row.peer;
  out.send = row.direction == "send";
  out.bytes = row.bytes == storage::kNone ? 0 : row.bytes;
  out.posted_ns = row.posted_ns;
  out.done_ns = row.done_ns;
  return out;
}

void applyExit(int exit_status, int signal, Rank* rank) {
  if (signal > 0) {
    rank->liveness = Liveness::kSignaled;
    rank->signal = signal;
  } else if (exit_status >= 0) {
    rank->liveness = Liveness::kExited;
    rank->exit_status = exit_status;
  }
}

}  // namespace ringside::analyzer::hang
