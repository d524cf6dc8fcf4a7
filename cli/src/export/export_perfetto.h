// cli/export/export_perfetto.h — a trace as Chrome / Perfetto trace-event JSON
// ({"displayTimeUnit":"ns","traceEvents":[...],"otherData":{...}}), for ui.perfetto.dev or
// chrome://tracing. docs/report.md describes the file's shape; in short:
//
// - one process per rank (pid = rank, named "rank N (host)");
// - collectives as complete events ("X") on one track per recording thread, named by op and
//   bytes; calls of one thread that overlap go to sub-tracks ("thread T, lane 2");
// - messages as complete events on one track per (rank, peer, side), "send 0->1" in rank 0 and
//   "recv 0->1" in rank 1, named "send 0->1 reduce-scatter 64 KiB"; overlapping messages go to
//   sub-tracks (greedy lanes), so no two slices on one track overlap;
// - flow arrows ("s"/"f") from each send to its matched receive (k-th send of (src, dst, slot)
//   with the k-th receive);
// - one counter ("C") per link, "link 0->1", in bytes/s per bin (the bin is in the counter's
//   name and in otherData.counter_bin_ns).
//
// Times are nanoseconds since the earliest rank started tracing, written as microseconds with
// three decimals: the reader's times (one time line when the trace has a clock model) plus one
// wall-clock offset per clock domain.
//
// Streaming: rows go from storage::TraceReader to `out` one at a time; memory is O(ranks + tracks
// + lanes + messages in flight), never O(rows). Only the reader is used: no analysis.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace ringside::storage {
class TraceReader;
}

namespace ringside::cli {

struct PerfettoSettings {
  // Width of the link counters' bins, ns; 0: chosen from the trace (its calls' span / 10000,
  // rounded down to 1, 2 or 5 times a power of ten, at least 1 us).
  int64_t counter_bin_ns = 0;
};

struct PerfettoCounts {
  int64_t collectives = 0;
  int64_t transfers = 0;
  int64_t flows = 0;          // send -> receive arrows
  int64_t counter_points = 0; // "C" events
  int64_t counter_bin_ns = 0; // the bin used
};

// "200 us", "2 ms", "1 s": a counter bin in the largest unit that divides it (as the counters'
// names say it).
std::string counterBinLabel(int64_t ns);

// Writes the whole JSON document. False + one line in *error on a read or
// write error (the output is then incomplete).
bool writePerfettoTrace(storage::TraceReader& reader, std::ostream& out,
                        const PerfettoSettings& settings, PerfettoCounts* counts,
                        std::string* error);

}  // namespace ringside::cli
