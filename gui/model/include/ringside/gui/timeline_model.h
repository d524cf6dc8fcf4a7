// gui/timeline_model.h — what the viewer's timeline shows, as plain values.
//
// Built once from a trace (storage::TraceReader + analyzer::analyze()); the views
// only read it. Lanes: one per rank (rows 0 .. call_rows-1 its collectives, then their
// phases), then one per directed link (bytes/s over time as a counter). Events of a row
// are sorted by start and do not overlap: calls that overlap on one rank (DDP's bucket
// all-reduces) go to sub-rows, as Perfetto and Tracy stack them. Nothing here touches OpenGL or ImGui, so all of it is
// unit-tested without a display.
// Errors: false + one line in *error; nothing throws.
// Threads: load() may run on a loader thread; the result is handed to the UI
// thread whole (move) and is read-only afterwards.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ringside/analyzer/analysis.h"

namespace ringside::gui {

namespace detail {
struct LaneSources;  // timeline_build.h: what unbuilt rank lanes are built from
}

// kHost: the header of a host's group of rank lanes (traces of 2+ hosts): folding it hides them.
enum class LaneKind { kRank, kLink, kHost };

// One interval on a row: a collective call on a rank, or one phase of it.
struct TimelineEvent {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int32_t label = 0;        // index into TimelineModel::labels (op or phase name)
  int32_t collective = -1;  // index into Analysis::collectives; -1 when unmatched
  bool failed = false;
};

// A row of events, with the running maximum of end_ns so that the first event
// reaching into a view can be found by binary search even when events overlap.
struct EventRow {
  std::string name;  // "collectives", "collectives 2", "phases", "phases 2", ...
  std::vector<TimelineEvent> events;
  std::vector<int64_t> max_end_prefix;  // max(events[0..i].end_ns)
  // Per chunk of kChunk events: the longest duration and the latest end, so the level of
  // detail can merge a whole chunk of narrow events in one step (lod.cpp).
  // Two levels (64 and 4096 events), each chunk summarised next to its neighbours so a zoomed-out
  // frame reads a few cache lines per thousands of events.
  struct ChunkSummary {
    int64_t max_duration = 0, max_end = 0, last_start = 0;
    int64_t max_gap = 0;  // largest start - (latest end of the chunk's earlier events)
  };
  static constexpr size_t kChunk = 64, kBigChunk = 4096;
  std::vector<ChunkSummary> chunks, big_chunks;
  void finish();                        // sort by start, fill max_end_prefix and the chunks
};

// A counter sampled in uniform bins: values[i] covers [start + i*bin, start + (i+1)*bin).
struct Counter {
  int64_t start_ns = 0;
  int64_t bin_ns = 1;
  std::vector<double> values;  // bytes per second
  double max_value = 0;
};

// One message on a link (a transfer row of the side the link's counter counts: send, or recv where
// no send was recorded), as the level of detail bins it when zoomed in past the stored bins.
struct LinkMessage {
  int64_t start_ns = 0, end_ns = 0;  // end_ns >= start_ns
  int64_t bytes = 0;
};

struct Lane {
  LaneKind kind = LaneKind::kRank;
  std::string name;        // "rank 3", "0 -> 1", "host h1 (2 ranks)"
  int rank = -1;           // kRank
  int host = -1;           // kRank, kHost: index into analysis.hosts when the trace has 2+ hosts
  int src = -1, dst = -1;  // kLink
  // kRank: collectives (call_rows of them), then phases. A loaded model builds them when first
  // needed (TimelineModel::buildLane): until then `built` is false and `rows` empty. Mutable:
  // built from const readers (the layout, the inspector), on the one thread that reads the model.
  mutable std::vector<EventRow> rows;
  mutable int call_rows = 1;  // kRank: how many of `rows` hold calls; the rest hold phases
  mutable bool built = true;
  Counter counter;             // kLink: bytes/s, the analysis' bins over the whole trace
  // kLink, levels of detail that follow the zoom (lod.h, downsampleLink): the same bytes/s in
  // finer bins (LoadOptions::fine_bins_budget), then the link's messages themselves, by start,
  // with the running maximum of their ends. Both empty when the loader kept no messages (over
  // LoadOptions::max_link_transfers rows, or a model built without a trace).
  Counter fine;
  std::vector<LinkMessage> messages;
  std::vector<int64_t> messages_max_end;
  void finishMessages(int fine_bins);  // sorts the messages, fills messages_max_end and `fine`
};

// The ranks x time overview (docs/viewer.md): per row (a rank, or a group of consecutive rank
// lanes when there are more ranks than rows) and time bin, the share of the bin its ranks spent
// waiting inside collectives (entered, others not yet arrived) and moving data (everyone had
// arrived), averaged over the row's ranks; the rest of the bin is outside collectives
// (computing, or anything else). Built from the rank lanes' calls and the analysis' arrivals.
struct Overview {
  int64_t start_ns = 0, bin_ns = 1;
  int bins = 0, rows = 0;
  std::vector<float> wait, move;  // rows x bins, row-major; each in [0, 1]
  std::vector<int> first_lane, last_lane;  // per row: the rank lanes it covers (indices into lanes)
  std::vector<int> first_rank, last_rank;  // per row: the lowest and highest rank it covers
  int most_ranks_in_row = 0;               // 1: a row per rank
  // The rank that arrived last in the most collective instances (-1: none), and in how many.
  int latest_rank = -1;
  int64_t latest_count = 0;
  float waitAt(int row, int bin) const { return wait[static_cast<size_t>(row) * static_cast<size_t>(bins) + static_cast<size_t>(bin)]; }
  float moveAt(int row, int bin) const { return move[static_cast<size_t>(row) * static_cast<size_t>(bins) + static_cast<size_t>(bin)]; }
};

// Bytes one collective instance moved over one directed link (from the transfer rows that name
// its calls; the send side, or the recv side where no send was recorded).
struct CollectiveLink {
  int src = -1, dst = -1;
  int64_t bytes = 0, messages = 0;
};

// One phase of one collective on one rank: the analysis' PhaseStats without its two strings (the
// phase's name is a label, comm and seq are its instance's): 56 bytes where a PhaseStats takes
// 128, so 5 M of them (4,096 ranks x 10 M events) fit in 280 MB.
struct PhaseRecord {
  int64_t start_ns = 0, end_ns = 0;
  int64_t slowest_step_ns = 0, wait_ns = 0;
  int32_t instance = -1;  // index into Analysis::collectives; -1 when unmatched
  int32_t rank = -1;
  int32_t steps = 0, slowest_step = -1;
  int32_t label = 0;      // index into TimelineModel::labels
  bool inferred = false;
};

struct TimelineModel {
  std::string path;
  analyzer::Analysis analysis;
  // Ranks first (by rank; with 2+ hosts grouped by host, each group after its kHost lane), then
  // links (by src, dst).
  std::vector<Lane> lanes;
  std::vector<std::string> labels;  // interned op and phase names
  int64_t start_ns = 0, end_ns = 0; // the whole trace
  // The one scale of every link lane, bytes/s: the busiest link's peak, so that a link's bars
  // compare with every other link's (a link that carried one small broadcast stays low).
  double link_scale = 0;
  // Links per collective instance: collective_links[links_begin[c] .. links_begin[c + 1]),
  // by (src, dst). Empty when the loader did not read the transfers.
  std::vector<CollectiveLink> collective_links;
  std::vector<int64_t> links_begin;
  // Every phase row of the analysis (which the loader keeps out of analysis.phases, empty here),
  // each instance's rows together; phase_spans[c]: instance c's rows, [first, second).
  std::deque<PhaseRecord> phases;
  std::vector<std::pair<int64_t, int64_t>> phase_spans;
  // The analysis' PhaseStats of one instance (comm, seq and phase name filled in), by rank, then start.
  std::vector<analyzer::PhaseStats> phasesOf(int collective) const;
  // False in the early model LoadOptions::on_timeline hands over: rank lanes with their calls
  // only (no phases, no link lanes, every event's collective -1, `analysis` empty but for
  // ranks_present). The model loadTimeline() returns always has it true.
  bool analysed = true;
  Overview overview;  // filled by buildTimeline / loadTimeline

  // Levels of detail loaded on demand: a rank lane's rows (its events, their running ends and
  // chunk summaries) are built from one compact copy of the calls and from `phases` when the
  // lane is first shown or read, not at load. Null when every lane was built at once.
  std::shared_ptr<const detail::LaneSources> lane_sources;
  // Builds rank lane `lane`'s rows if they are not built yet (any other lane: nothing). Const: a
  // cache behind every reader; call it on the thread that reads the model (the UI thread).
  void buildLane(size_t lane) const;
  void buildLanes() const;         // every lane
  // Gives rank lane `lane`'s rows back (folded again), to be built again when needed; nothing
  // when the model keeps no sources to build it from.
  void releaseLane(size_t lane) const;
  size_t unbuiltLanes() const;     // rank lanes not built yet
  // Lane `lane`'s rows, built or not (an unbuilt lane's are counted at load): the layout's height.
  size_t rowCount(size_t lane) const;
  // Rank lane `lane`'s calls as events, built or not, in the order their rows are built from.
  std::vector<TimelineEvent> callsOf(size_t lane) const;

  int label(const std::string& name);  // interns
  // Every (lane, row, event) of collective instance `collective` (one per rank that recorded it).
  struct EventRef {
    int lane = -1, row = -1, event = -1;
  };
  // Builds every rank lane (the refs point into their rows).
  std::vector<EventRef> eventsOfCollective(int collective) const;
  // The same calls as events with their lane, built or not: no lane is built for them.
  struct CallRef {
    int lane = -1;
    TimelineEvent event;
  };
  std::vector<CallRef> callsOfCollective(int collective) const;
};

// Builds the overview of `model`'s rank lanes: `bins` time bins over [start_ns, end_ns), at most
// `max_rows` rows. Calls without a matched instance count as moving data.
Overview buildOverview(const TimelineModel& model, int bins = 1024, int max_rows = 128);

// The overview as an RGBA image, `width` columns (each the mean of the bins it covers) by
// overview.rows rows: the background where ranks were outside collectives, blending to orange
// with the waiting share and to blue with the share moving data.
std::vector<uint8_t> overviewRgba(const Overview& overview, int width, bool dark);

struct LoadOptions {
  int counter_bins = 2048;  // resolution of the link counters over the whole trace ...
  // ... unless the ranks x 2 (a ring's or a tree's links) x counter_bins exceed this: then fewer
  // bins a link, at least 256 (the analysis and the link lanes each keep 8 bytes a bin and link:
  // 16,384 ranks' 32,766 tree links took 537 MB a copy at 2,048 bins). Zoomed in, the lanes bin
  // the messages themselves, so the picture loses nothing but at full zoom-out.
  int64_t link_bins_budget = 16'777'216;
  // Finer link bins, all links together (Lane::fine): up to 65,536 bins a link, at least
  // counter_bins; 0 keeps none (then the view goes from the counter straight to the messages).
  int64_t fine_bins_budget = 8'000'000;
  bool collective_links = true;  // keep the links of each collective (from the analysis' own
                                 // pass over the transfers: AnalysisOptions::on_transfer) and the
                                 // links' messages (Lane::messages) ...
  // ... unless the trace has more transfer rows than this (48 bytes a row while loading; kept:
  // about 24 per instance and link, 24 per message).
  int64_t max_link_transfers = 20'000'000;
  std::function<void(double fraction)> progress;  // 0..1, from the loading thread
  // Called once, from the loading thread, as soon as the calls of every rank are read: a model
  // the timeline can draw already (see TimelineModel::analysed) while the analysis goes on.
  // loadTimeline() returns the full model later; the early one is the callee's to keep.
  std::function<void(TimelineModel&& timeline)> on_timeline;
  // Rank lanes built when first needed (TimelineModel::buildLane); false builds them all at load.
  bool lazy_lanes = true;
  const analyzer::Topology* topology = nullptr;   // optional (--topology): links, idle links
};

// Reads and analyzes the trace at `path`.
bool loadTimeline(const std::string& path, const LoadOptions& options, TimelineModel* out,
                  std::string* error);

// Greedy interval partitioning: splits `events` (any order) into rows without overlap, each
// event in the lowest row whose last event ended by its start (touching ends do not overlap).
// At most `max_rows` rows: past that, an event goes to the row that frees first, overlapping.
// Every row is finish()ed; there is always at least one row.
std::vector<EventRow> partitionRows(std::vector<TimelineEvent> events, const std::string& name,
                                    size_t max_rows = 16);
// How many rows partitionRows makes of events spanning `spans` ((start, end), any order).
size_t partitionRowCount(std::vector<std::pair<int64_t, int64_t>> spans, size_t max_rows = 16);

// Builds lanes from an analysis and per-rank collective rows (used by loadTimeline and by
// the tests, which make models without a trace file).
struct RankCall {
  int rank = -1;
  std::string comm;
  int64_t seq = 0;
  std::string op;
  int64_t start_ns = 0, end_ns = 0;
  bool failed = false;
};
// Every lane built, unless `lazy_lanes` (then as loadTimeline leaves them: built when needed).
void buildTimeline(analyzer::Analysis analysis, const std::vector<RankCall>& calls,
                   TimelineModel* out, bool lazy_lanes = false);

}  // namespace ringside::gui
