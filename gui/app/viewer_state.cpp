#include "viewer_state.h"

#include "ringside/gui/hang_focus.h"
#include "ringside/gui/lod.h"
#include "ringside/gui/stats_table.h"

#include <iostream>

#include "ringside/storage/privacy.h"
#include "ringside/fileio/output_file.h"
#include "ringside/format/json.h"
#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

// Every figure in the state is a count, an index or nanoseconds: integers, written as such.
template <typename Int>
std::string num(Int v) {
  return std::to_string(v);
}

const char* boolean(bool b) { return b ? "true" : "false"; }

void appendSelection(const TimelineModel& m, const TimelineView& tv, std::string* out) {
  *out += ",\n  \"selected\": " + num(tv.selected());
  if (tv.selected() >= 0) {
    const auto& c = m.analysis.collectives[static_cast<size_t>(tv.selected())];
    *out += ",\n  \"selected_op\": ";
    format::appendJsonString(c.op, out);
    *out += ", \"selected_ranks\": " + num(collectiveDetails(m, tv.selected()).ranks.size());
  }
  const HangFocus focus = findHangFocus(m);
  if (focus.any()) {
    *out += ",\n  \"hang_focus\": {\"collective\": " + num(focus.collective) + ", \"rule\": ";
    format::appendJsonString(focus.rule, out);
    *out += ", \"culprits\": [";
    for (size_t i = 0; i < focus.culprits.size(); ++i) *out += (i ? ", " : "") + num(focus.culprits[i]);
    *out += "]}";
  }
  if (tv.rangeSelection()) {
    const TimeRange& r = *tv.rangeSelection();
    const RangeStats st = rangeStats(m, r.t0, r.t1);
    *out += ",\n  \"range_selection_ns\": [" + num(r.t0 - m.start_ns) + ", " +
            num(r.t1 - m.start_ns) + "], \"range_stats\": {\"count\": " + num(st.all.count) +
            ", \"sum_ns\": " + num(st.all.sum_ns) + ", \"p50_ns\": " + num(st.all.p50_ns) +
            ", \"p99_ns\": " + num(st.all.p99_ns) + ", \"max_ns\": " + num(st.all.max_ns) + "}";
  }
}

void appendHoverAndSearch(const TimelineView& tv, const char* query, bool active,
                          const SearchCursor& search, std::string* out) {
  *out += ",\n  \"hovered\": {\"lane\": ";
  format::appendJsonString(tv.hover().lane, out);
  *out += ", \"collective\": " + num(tv.hover().collective) + "}";
  *out += ",\n  \"search\": {\"query\": ";
  format::appendJsonString(query, out);
  *out += std::string(", \"active\": ") + boolean(active) + ", \"matches\": " + num(search.matches().size()) +
          ", \"position\": " + num(search.position()) + "}";
}

void appendLanesAndTargets(const TimelineModel& m, const TimelineView& tv, std::string* out) {
  // Rank lanes whose rows are not built yet (folded, never shown: docs/viewer.md, "Memory at
  // scale"); their rows are not listed (the state is written on every change: it builds nothing).
  *out += ",\n  \"lanes_unbuilt\": " + num(m.unbuiltLanes());
  *out += ",\n  \"lanes\": [";
  for (size_t i = 0; i < m.lanes.size(); ++i) {
    const LaneFlags f = i < tv.laneFlags().size() ? tv.laneFlags()[i] : LaneFlags{};
    *out += i ? ", {\"name\": " : "{\"name\": ";
    format::appendJsonString(m.lanes[i].name, out);
    *out += std::string(", \"hidden\": ") + boolean(f.hidden) +
            ", \"pinned\": " + boolean(f.pinned) + ", \"folded\": " + boolean(f.collapsed);
    if (m.lanes[i].kind == LaneKind::kRank && !m.lanes[i].built) *out += ", \"built\": false";
    if (m.lanes[i].kind == LaneKind::kRank && m.lanes[i].built) {  // its rows: overlapping calls get sub-rows
      *out += ", \"call_rows\": " + num(m.lanes[i].call_rows) + ", \"rows\": [";
      for (size_t r = 0; r < m.lanes[i].rows.size(); ++r) {
        if (r) *out += ", ";
        format::appendJsonString(m.lanes[i].rows[r].name, out);
      }
      *out += "]";
    }
    *out += "}";
  }
  *out += "]";
  *out += ",\n  \"targets\": [";
  for (size_t i = 0; i < tv.targets().size() && i < 16; ++i) {
    const TimelineTarget& t = tv.targets()[i];
    *out += std::string(i ? ", " : "") + "{\"collective\": " + num(t.collective) +
            ", \"rank\": " + num(t.rank) + ", \"x\": " + num(static_cast<int>((t.x0 + t.x1) / 2)) +
            ", \"y\": " + num(static_cast<int>((t.y0 + t.y1) / 2)) + "}";
  }
  *out += "]";
}

void appendCompare(const CompareView& compare, const TimelineModel& a, const TimelineModel& b,
                   std::string* out) {
  const CompareModel& cm = compare.model();
  int colored = 0, unjudged = 0;
  for (const auto& row : cm.diff.rows) {
    unjudged += row.note.empty() ? 0 : 1;
    RgbF rgb;
    colored += diffRowColor(row, &rgb) ? 1 : 0;
  }
  *out += ",\n  \"compare\": {\"pairs\": " + num(cm.pairs.size()) +
          ", \"diff_rows\": " + num(cm.diff.rows.size()) + ", \"colored_rows\": " + num(colored) +
          ", \"unjudged_rows\": " + num(unjudged) +
          ", \"selected_b\": " + num(compare.timelineB().selected()) +
          ", \"offset_ns\": " + num(compare.offsetNs()) +
          ", \"findings_a\": " + num(a.analysis.findings.size()) +
          ", \"findings_b\": " + num(b.analysis.findings.size()) + "}";
}

// The figures the viewer shows that `record`'s summary and `report` show too, under the same
// names and definitions (docs/metrics.md), so a test can check that they agree.
void appendFigures(const TimelineModel& m, std::string* out) {
  const analyzer::Analysis& a = m.analysis;
  *out += ",\n  \"figures\": {\"ops\": [";
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const analyzer::OpStats& o = a.ops[i];
    *out += i ? ", {\"op\": " : "{\"op\": ";
    format::appendJsonString(o.op, out);
    *out += ", \"library\": ";
    format::appendJsonString(o.library, out);
    *out += ", \"count\": " + num(o.count) + ", \"bytes\": " + num(o.bytes) +
            ", \"wall_ns\": " + num(o.wall_ns) + ", \"total_ns\": " + num(o.total_ns) + "}";
  }
  *out += "], \"ranks\": [";
  for (size_t i = 0; i < a.ranks.size(); ++i) {
    const analyzer::RankStats& r = a.ranks[i];
    *out += std::string(i ? ", " : "") + "{\"rank\": " + num(r.rank) + ", \"span_ns\": " +
            num(r.span_ns) + ", \"comm_ns\": " + num(r.comm_ns) + ", \"wait_ns\": " +
            num(r.wait_ns) + ", \"caused_wait_ns\": " + num(r.caused_wait_ns) + "}";
  }
  *out += "], \"links\": [";
  for (size_t i = 0; i < a.links.size(); ++i) {
    const analyzer::LinkStats& l = a.links[i];
    *out += std::string(i ? ", " : "") + "{\"src\": " + num(l.src) + ", \"dst\": " +
            num(l.dst) + ", \"bytes\": " + num(l.bytes) + ", \"messages\": " +
            num(l.messages) + ", \"busy_ns\": " + num(l.busy_ns) + ", \"peak_gbps\": " +
            format::printf("%.9g", l.peak_gbps) + "}";
  }
  // The sizes the stats table shows (sizeLabel: analyzer::sizeText, as report and diff print them).
  *out += "], \"sizes\": [";
  const std::vector<StatsRow> rows = statsRows(a);
  for (size_t i = 0; i < rows.size(); ++i) {
    *out += i ? ", {\"op\": " : "{\"op\": ";
    format::appendJsonString(rows[i].op, out);
    *out += ", \"size_lo\": " + num(rows[i].size_lo) + ", \"shown\": ";
    format::appendJsonString(sizeLabel(rows[i]), out);
    *out += "}";
  }
  *out += "]}";
}

}  // namespace

std::string viewerStateJson(const ViewerStateInput& in) {
  std::string out = std::string("{\n  \"loaded\": ") + boolean(in.loaded) + ",\n  \"errors\": [";
  for (size_t i = 0; i < in.errors.size(); ++i) {
    if (i) out += ", ";
    format::appendJsonString(in.errors[i], &out);
  }
  out += "],\n  \"view\": ";
  format::appendJsonString(in.view, &out);
  if (in.loaded) {
    const TimelineModel& m = *in.model;
    const TimeRange range = in.view_state->range();
    out += ",\n  \"range_ns\": [" + num(range.t0 - m.start_ns) + ", " + num(range.t1 - m.start_ns) +
           "]";
    out += ",\n  \"trace_ns\": [0, " + num(m.end_ns - m.start_ns) + "]";
    // The one scale every link lane is drawn to (the busiest link's peak), bytes/s.
    out += ",\n  \"link_scale_bytes_per_s\": " + num(static_cast<int64_t>(m.link_scale));
    // The ranks x time overview: its rows, the latest-arriving rank, where it was drawn, and the
    // level of detail each link lane is drawn at in the current range (1,000 px wide).
    const Overview& o = m.overview;
    out += ",\n  \"overview\": {\"rows\": " + num(o.rows) + ", \"bins\": " + num(o.bins) +
           ", \"latest_rank\": " + num(o.latest_rank) + ", \"latest_count\": " + num(o.latest_count);
    if (in.overview != nullptr && in.overview->place().rows > 0) {
      const OverviewPlace& p = in.overview->place();
      out += ", \"rect_px\": [" + num(static_cast<int64_t>(p.x0)) + ", " + num(static_cast<int64_t>(p.y0)) + ", " +
             num(static_cast<int64_t>(p.x1)) + ", " + num(static_cast<int64_t>(p.y1)) + "]";
    }
    out += "}";
    const TimeAxis axis{range.t0, range.t1, 0, 1000};
    out += ",\n  \"link_levels\": {";
    bool first = true;
    for (const Lane& lane : m.lanes) {
      if (lane.kind != LaneKind::kLink) continue;
      out += std::string(first ? "" : ", ") + "\"" + lane.name + "\": {\"level\": \"" + linkLevelName(linkLevel(lane, axis)) +
             "\", \"messages\": " + num(static_cast<int64_t>(lane.messages.size())) + "}";
      first = false;
    }
    out += "}";
    appendSelection(m, *in.timeline, &out);
    appendHoverAndSearch(*in.timeline, in.search_query, in.search_active, *in.search, &out);
    appendLanesAndTargets(m, *in.timeline, &out);
    appendFigures(m, &out);
    if (in.compare != nullptr) appendCompare(*in.compare, m, *in.model_b, &out);
  }
  return out + "\n}\n";
}

std::string viewerStartFailedJson(const std::string& error) {
  return "{\"loaded\": false, \"errors\": [" + format::jsonString(error) + "]}\n";
}

bool writeFileAtomically(const std::string& path, const std::string& text) {
  std::string error;
  // Not fsynced: a live view for scripts, rewritten up to 10 times a second from the render loop.
  if (fileio::writeOutputFile(path, text, /*overwrite=*/true, &error, /*sync=*/false,
                              storage::outputFileMode())) return true;
  // Said once per viewer: the state is rewritten up to 10 times a second.
  static bool said = false;
  if (!said) std::cerr << "ringside view: --state-out: " << error << "\n";
  said = true;
  return false;
}

void StateWriter::update(std::string state) {
  pending_ = std::move(state);
  const auto now = std::chrono::steady_clock::now();
  if (pending_ != last_ && now - last_write_ > std::chrono::milliseconds(100)) {
    if (writeFileAtomically(path_, pending_)) {
      last_ = pending_;
      written_ = true;
    }
    last_write_ = now;
  }
}

bool StateWriter::flush() {
  if (!enabled()) return true;
  if (pending_ != last_ || !written_) {
    if (!writeFileAtomically(path_, pending_)) return false;
    last_ = pending_;
    written_ = true;
  }
  return true;
}

}  // namespace ringside::gui
