// cli/export/export_perfetto.h — a trace as Chrome / Perfetto trace-event JSON
// ({"traceEvents":[...],"displayTimeUnit":"ns"}), for ui.perfetto.dev or
// chrome://tracing.
//
// Layout: one process per rank (pid = rank, named "rank N (host)"); one track
// per recording thread holding that thread's collectives as complete events
// (args: op, bytes, comm, seq, library, algorithm); one track per peer and
// direction ("link 0->1 send") holding the transfers the rank recorded, with
// phase/step/chunk args. Times are wall-clock microseconds since the earliest
// rank started tracing (each rank's clock mapped through rank.start_unix_ns),
// so ranks on different hosts line up.
//
// Streaming: rows go from storage::TraceReader to `out` one at a time; memory
// is O(ranks + threads), never O(rows). Only the reader is used: no analysis.
#pragma once

#include <ostream>
#include <string>

namespace ringside::storage {
class TraceReader;
}

namespace ringside::cli {

struct PerfettoCounts {
  int64_t collectives = 0;
  int64_t transfers = 0;
};

// Writes the whole JSON document. False + one line in *error on a read or
// write error (the output is then incomplete).
bool writePerfettoTrace(storage::TraceReader& reader, std::ostream& out, PerfettoCounts* counts,
                        std::string* error);

}  // namespace ringside::cli
