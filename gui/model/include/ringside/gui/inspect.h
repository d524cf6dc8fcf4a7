// gui/inspect.h — what the viewer tells about a selection: one collective's details,
// the statistics of a time range, search over collectives, what a finding points at,
// and stable colours for ops and phases.
//
// Everything is read from the TimelineModel (the analyzer's Analysis plus the rank
// lanes); nothing is recomputed that analyze() already gives. No OpenGL, no ImGui:
// unit-tested in tests/unit/gui. Threads: UI thread; the model is read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringside/gui/timeline_model.h"
#include "ringside/gui/view_state.h"

namespace ringside::gui {

// ---- colours -------------------------------------------------------------------------------
struct RgbF {  // 0..1 per channel (palette.h's Rgb is 0..255)
  float r = 0, g = 0, b = 0;
  bool operator==(const RgbF&) const = default;
};
RgbF hsvToRgb(float h, float s, float v);
// The same name always gets the same colour, in every trace and every run (a fixed hue for
// the ops and phases ringside knows, a hash of the name otherwise).
RgbF nameColor(std::string_view name, bool dark_theme);
// Diff table rows: B faster (green, stronger from 1.5x), B slower (red), on par (no colour:
// returns false). The colours are exact so the screenshot test can find them.
bool speedupColor(double speedup, RgbF* out);
// A diff row's colour: the speed-up's, for judged rows only. A row the diff did not judge (too
// few calls on a side, or inside the run-to-run noise: DiffRow::note) is not coloured, so one
// instance a side never shows as a bright win or loss.
bool diffRowColor(const analyzer::DiffRow& row, RgbF* out);
// Why a row is not judged, in a few characters for the table ("n<5", "noise"); "" when judged.
std::string diffRowTag(const analyzer::DiffRow& row);

// ---- one collective --------------------------------------------------------------------------
struct RankTiming {
  int rank = -1;
  int64_t start_ns = 0, end_ns = 0;  // arrival and return on this rank
  bool failed = false;
};
struct CollectiveDetails {
  int index = -1;
  const analyzer::CollectiveInstance* instance = nullptr;
  std::vector<RankTiming> ranks;                      // by rank
  std::vector<analyzer::PhaseStats> phases;          // by rank, then start
  std::vector<CollectiveLink> links;                  // by src, dst
  double expected_busbw_gbps = -1;                    // from the alpha-beta time; -1 unknown
};
CollectiveDetails collectiveDetails(const TimelineModel& model, int collective);

// ---- a time range ----------------------------------------------------------------------------
struct DurationStats {
  int64_t count = 0;
  int64_t sum_ns = 0, min_ns = 0, max_ns = 0, p50_ns = 0, p99_ns = 0;
  double mean_ns = 0;
};
// Nearest-rank percentiles, as the analyzer's reports use.
DurationStats durationStats(std::vector<int64_t> durations);

struct RangeOpRow {
  std::string op;
  int64_t bytes = 0;  // summed per-rank payloads of the instances
  DurationStats duration;
};
struct RangeRankRow {
  int rank = -1;
  int64_t calls = 0;
  int64_t busy_ns = 0;  // time inside its calls (a union), clipped to the range
};
struct RangeStats {
  int64_t t0 = 0, t1 = 0;
  DurationStats all;              // collective instances that start in [t0, t1)
  std::vector<RangeOpRow> ops;    // by op name
  std::vector<RangeRankRow> ranks;
  double link_bytes = 0;          // all links' bytes moved in the range (from the counters)
};
RangeStats rangeStats(const TimelineModel& model, int64_t t0, int64_t t1);

// ---- search ----------------------------------------------------------------------------------
// Space-separated terms, all of which must match (case-insensitive):
//   op:NAME  lib:NAME  comm:NAME  rank:N (recorded on rank N)  straggler:N
//   size:1M (its power-of-two bucket)  size>4K  size<1M  size>=  size<=
//   failed   any other word: a substring of op, library, algorithm or comm.
// Matching collective indices, in order of first start. *error on a bad term.
std::vector<int> searchCollectives(const TimelineModel& model, const std::string& query,
                                   std::string* error);

// Steps through matches: next()/prev() wrap around; start() picks the first match at or after
// a time (the view's left edge), so Enter continues from where the user looks.
class SearchCursor {
 public:
  void set(std::vector<int> matches);
  const std::vector<int>& matches() const { return matches_; }
  int current() const;        // collective index, -1 when none
  int position() const { return pos_; }  // 0-based, -1 when none
  int startAt(const TimelineModel& model, int64_t t);
  int next();
  int prev();

 private:
  std::vector<int> matches_;
  int pos_ = -1;
};

// ---- findings --------------------------------------------------------------------------------
// What a finding names, so clicking it can select and zoom: a collective (the worst instance
// it speaks of), a rank lane or a link lane. Fields are -1 when not named.
struct FindingTarget {
  int collective = -1;
  int rank = -1;
  int src = -1, dst = -1;
};
FindingTarget findingTarget(const analyzer::Analysis& analysis, const analyzer::Finding& finding);

// A range around one collective (its span plus a margin on each side) to zoom to.
TimeRange rangeAround(const analyzer::CollectiveInstance& c, double margin = 0.5);

}  // namespace ringside::gui
