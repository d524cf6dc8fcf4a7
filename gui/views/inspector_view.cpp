#include "inspector_view.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "ringside/analyzer/findings.h"
#include "ringside/format/units.h"

namespace ringside::gui {
namespace {

std::string dur(int64_t ns) { return format::durationSignificant(static_cast<double>(ns)); }

ImVec4 severityColor(const std::string& severity) {
  if (severity == "problem") return ImVec4(0.95f, 0.35f, 0.30f, 1);
  if (severity == "warning") return ImVec4(0.95f, 0.75f, 0.20f, 1);
  return ImGui::GetStyleColorVec4(ImGuiCol_Text);
}

void durationRow(const char* name, const DurationStats& s, int first, int last) {
  ImGui::TableNextRow();
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(name);
  const int64_t values[] = {s.sum_ns, s.min_ns, static_cast<int64_t>(s.mean_ns), s.p50_ns, s.p99_ns, s.max_ns};
  for (int col = first; col < last; ++col) {
    ImGui::TableNextColumn();
    if (col == 0) {
      ImGui::Text("%lld", static_cast<long long>(s.count));
    } else {
      ImGui::TextUnformatted(s.count > 0 ? dur(values[col - 1]).c_str() : "-");
    }
  }
}

}  // namespace

void textDisabledWrapped(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::TextWrapped("%s", text);
  ImGui::PopStyleColor();
}

InspectAction actionFor(const TimelineModel& model, const FindingTarget& target) {
  InspectAction act;
  act.rank = target.rank;
  act.src = target.src;
  act.dst = target.dst;
  if (target.collective >= 0) {
    act.select = target.collective;
    act.zoom = rangeAround(model.analysis.collectives[static_cast<size_t>(target.collective)], 2.0);
  }
  return act;
}

namespace {

// The selected collective's summary lines: op, size, group, duration, skew, straggler, busbw.
void drawCollectiveSummary(int collective, const CollectiveDetails& d) {
  const auto& c = *d.instance;
  ImGui::Text("#%d  %s  %s", collective, c.op.c_str(), format::bytesSignificant(static_cast<double>(c.bytes)).c_str());
  ImGui::TextWrapped("%s seq %lld, %s%s%s, %d ranks%s", c.comm.c_str(), static_cast<long long>(c.seq), c.library.c_str(),
              c.algorithm.empty() ? "" : " / ", c.algorithm.c_str(), c.ranks, c.failed ? ", FAILED" : "");
  if (!c.dtype.empty()) ImGui::Text("%s %s", c.dtype.c_str(), c.reduce_op.c_str());
  ImGui::TextWrapped("duration %s (after the last arrival), skew %s", dur(c.duration_ns).c_str(),
              dur(c.arrival_skew_ns).c_str());
  ImGui::Text("straggler: rank %d", c.straggler_rank);
  if (d.expected_busbw_gbps > 0) {
    ImGui::TextWrapped("busbw %.3g GB/s, expected %.3g GB/s (%.0f%%)", c.busbw_gbps, d.expected_busbw_gbps,
                100 * c.busbw_gbps / d.expected_busbw_gbps);
  } else {
    ImGui::TextWrapped("busbw %.3g GB/s (no alpha-beta model)", c.busbw_gbps);
  }
}

// Each rank's arrival and end, from the first arrival.
void drawRankTimings(const CollectiveDetails& d) {
  const auto& c = *d.instance;
  if (!ImGui::BeginTable(
          "ranks", 4,
          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit)) {
    return;
  }
  ImGui::TableSetupColumn("rank");
  ImGui::TableSetupColumn("arrival");
  ImGui::TableSetupColumn("end");
  ImGui::TableSetupColumn("");
  ImGui::TableHeadersRow();
  for (const RankTiming& r : d.ranks) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%d", r.rank);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(("+" + dur(r.start_ns - c.first_start_ns)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(("+" + dur(r.end_ns - c.first_start_ns)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(r.rank == c.straggler_rank ? "last in" : (r.failed ? "failed" : ""));
  }
  ImGui::EndTable();
}

// Its phases, a table in a tree node. A table, not a line per phase: a wrapped line would break
// inside a number ("7." / "13 us"). The rank in the phase's cell: narrow panels keep the times
// visible.
void drawPhases(const CollectiveDetails& d) {
  const auto& c = *d.instance;
  if (d.phases.empty() || !ImGui::TreeNodeEx("phases", ImGuiTreeNodeFlags_DefaultOpen,
                                             "phases (%zu)", d.phases.size())) {
    return;
  }
  if (ImGui::BeginTable("phases", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
    for (const char* h : {"rank: phase", "start", "took"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (const auto& p : d.phases) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted((std::to_string(p.rank) + ": " + p.phase +
                              (p.steps > 1 ? " x" + std::to_string(p.steps) : "") +
                              (p.inferred ? " (inferred)" : ""))
                                 .c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(("+" + dur(p.start_ns - c.first_start_ns)).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(dur(p.end_ns - p.start_ns).c_str());
    }
    ImGui::EndTable();
  }
  ImGui::TreePop();
}

// The links it used and their bytes, in a tree node.
void drawLinksUsed(const TimelineModel& model, const CollectiveDetails& d) {
  if (!ImGui::TreeNodeEx("links", ImGuiTreeNodeFlags_DefaultOpen, "links used (%zu)",
                         d.links.size()))
    return;
  if (model.links_begin.empty()) {
    textDisabledWrapped("not loaded (a trace with over 20 M transfer rows)");
  } else if (d.links.empty()) {
    textDisabledWrapped("no transfers recorded for it");
  }
  for (const CollectiveLink& l : d.links) {
    ImGui::TextWrapped("%d -> %d  %s in %lld messages", l.src, l.dst,
                       format::bytesSignificant(static_cast<double>(l.bytes)).c_str(),
                       static_cast<long long>(l.messages));
  }
  ImGui::TreePop();
}

}  // namespace

// Lines wrap at the panel's edge (TextWrapped) rather than run past it, clipped.
void drawCollectiveDetails(const TimelineModel& model, int collective, InspectAction* action) {
  CollectiveDetails d = collectiveDetails(model, collective);
  if (d.instance == nullptr) {
    textDisabledWrapped("Click a collective to see it on every rank.");
    return;
  }
  drawCollectiveSummary(collective, d);
  if (ImGui::SmallButton("zoom to it")) {
    action->zoom = rangeAround(*d.instance, 0.5);
    action->select = collective;
  }
  drawRankTimings(d);
  drawPhases(d);
  drawLinksUsed(model, d);
}

void drawRangeStats(const TimelineModel& model, const RangeStats& s) {
  ImGui::Text("%s .. %s (%s)", dur(s.t0 - model.start_ns).c_str(), dur(s.t1 - model.start_ns).c_str(),
              dur(s.t1 - s.t0).c_str());
  ImGui::TextWrapped("%lld collectives start in it; links moved %s", static_cast<long long>(s.all.count),
              format::bytesSignificant(s.link_bytes).c_str());
  // All eight columns where the panel has room for them, else as many tables as it takes (each
  // with the op column): a cell cut at the panel's edge hides the very figures one looks for.
  const char* headers[] = {"count", "sum", "min", "mean", "p50", "p99", "max"};
  const ImGuiStyle& style = ImGui::GetStyle();
  const float cell = ImGui::CalcTextSize("999.9 ms").x + 2 * style.CellPadding.x;
  const float op_w = ImGui::CalcTextSize("allreduce").x + 2 * style.CellPadding.x;
  const int per_table =
      std::clamp(static_cast<int>((ImGui::GetContentRegionAvail().x - op_w) / cell), 1, 7);
  for (int first = 0; first < 7; first += per_table) {
    const int last = std::min(7, first + per_table);
    ImGui::PushID(first);
    if (ImGui::BeginTable("range", 1 + last - first,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingFixedFit)) {
      ImGui::TableSetupColumn("op");
      for (int col = first; col < last; ++col) ImGui::TableSetupColumn(headers[col]);
      ImGui::TableHeadersRow();
      durationRow("all", s.all, first, last);
      for (const RangeOpRow& op : s.ops) durationRow(op.op.c_str(), op.duration, first, last);
      ImGui::EndTable();
    }
    ImGui::PopID();
  }
  for (const RangeRankRow& r : s.ranks) {
    ImGui::TextWrapped("rank %d: %lld calls, %s inside collectives (%.0f%%)", r.rank, static_cast<long long>(r.calls),
                dur(r.busy_ns).c_str(), 100.0 * static_cast<double>(r.busy_ns) / static_cast<double>(std::max<int64_t>(1, s.t1 - s.t0)));
  }
}

void drawFindings(const TimelineModel& model, const char* id, InspectAction* action) {
  const auto& a = model.analysis;
  ImGui::PushID(id);
  if (a.findings.empty()) textDisabledWrapped("no findings");
  for (size_t i = 0; i < a.findings.size(); ++i) {
    const auto& f = a.findings[i];
    ImGui::PushID(static_cast<int>(i));
    // Wrapped at the panel's edge: a selectable the height of the wrapped text, the text drawn
    // over it (ImGui's Selectable draws one line only).
    const std::string text = f.severity + ": " + f.message;
    const float wrap = std::max(40.0f, ImGui::GetContentRegionAvail().x);
    const ImVec2 size = ImGui::CalcTextSize(text.c_str(), nullptr, false, wrap);
    const ImVec2 at = ImGui::GetCursorScreenPos();
    bool clicked = ImGui::Selectable("##finding", false, 0, ImVec2(0, size.y));
    ImGui::GetWindowDrawList()->AddText(ImGui::GetFont(), ImGui::GetFontSize(), at,
                                        ImGui::GetColorU32(severityColor(f.severity)), text.c_str(),
                                        nullptr, wrap);
    if (ImGui::IsItemHovered()) {
      // The rule's own line from the analyzer's table says when it fires.
      const analyzer::FindingRule* rule = analyzer::findingRule(f.rule);
      std::string what = rule != nullptr ? ": " + std::string(rule->description) : "";
      std::string try_line = f.action.empty() ? "" : "\ntry: " + f.action;
      ImGui::SetTooltip("%s%s\n%s%s\n(click: select and zoom to it)", f.rule.c_str(), what.c_str(),
                        f.evidence.c_str(), try_line.c_str());
    }
    if (clicked) *action = actionFor(model, findingTarget(a, f));
    ImGui::PopID();
  }
  for (const std::string& w : a.warnings) textDisabledWrapped(("note: " + w).c_str());
  ImGui::PopID();
}

}  // namespace ringside::gui
