#include "compare_view.h"

#include <imgui.h>

#include <algorithm>
#include <string>

#include "ringside/analyzer/collective_math.h"
#include "ringside/format/units.h"
#include "ringside/gui/inspect.h"

namespace ringside::gui {
namespace {

std::string baseName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

void CompareView::reset(const TimelineModel& a, const TimelineModel& b) {
  a_ = &a;
  b_ = &b;
  buildCompare(a.analysis, b.analysis, baseName(a.path), baseName(b.path), &compare_);
  ta_.reset(a);
  tb_.reset(b);
  base_offset_ns_ = offset_ns_ = b.start_ns - a.start_ns;
}

void CompareView::selectA(int a) {
  ta_.select(a);
  int b = a >= 0 && static_cast<size_t>(a) < compare_.partner_of_a.size() ? compare_.partner_of_a[static_cast<size_t>(a)] : -1;
  tb_.select(b);
  offset_ns_ = base_offset_ns_;
  if (a >= 0 && b >= 0) {
    offset_ns_ = b_->analysis.collectives[static_cast<size_t>(b)].first_start_ns -
                 a_->analysis.collectives[static_cast<size_t>(a)].first_start_ns;
  }
}

void CompareView::selectB(int b) {
  int a = b >= 0 && static_cast<size_t>(b) < compare_.partner_of_b.size() ? compare_.partner_of_b[static_cast<size_t>(b)] : -1;
  if (a >= 0) {
    selectA(a);
  } else {
    ta_.select(-1);
    tb_.select(b);
  }
}

void CompareView::draw(const TimelineModel& a, const TimelineModel& b, ViewState* view, bool dark,
                       const std::vector<int>* marked_a) {
  drawTimelines(a, b, view, dark, marked_a);
  drawSummary(a, b);
  const float table_w = ImGui::GetContentRegionAvail().x * 0.58f;
  ImGui::BeginChild("diff", ImVec2(table_w, 0), true);
  InspectAction action = drawDiffTable(a);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("compare side", ImVec2(0, 0), true);
  drawSelectedPair(a, b);
  drawVerdicts();
  InspectAction fa, fb;
  ImGui::Text("findings in A (%s)", baseName(a.path).c_str());
  drawFindings(a, "findings A", &fa);
  ImGui::Text("findings in B (%s)", baseName(b.path).c_str());
  drawFindings(b, "findings B", &fb);
  ImGui::EndChild();
  if (fa.any()) action = fa;
  apply(a, b, view, action, fb);
}

// A's and B's timelines, stacked, on one zoom (B `offset_ns_` later on its own clock); a click
// in either selects the pair.
void CompareView::drawTimelines(const TimelineModel& a, const TimelineModel& b, ViewState* view,
                                bool dark, const std::vector<int>* marked_a) {
  const float avail_h = ImGui::GetContentRegionAvail().y;
  const float lanes_h = std::max(80.0f, avail_h * 0.30f - ImGui::GetTextLineHeight() - 10);
  const std::string title_a = "A: " + baseName(a.path), title_b = "B: " + baseName(b.path);
  TimelineDrawOptions oa;
  oa.id = "lanes A";
  oa.height = lanes_h;
  oa.title = title_a.c_str();
  oa.dark = dark;
  oa.marked = marked_a;
  ta_.draw(a, view, oa);
  TimelineDrawOptions ob;
  ob.id = "lanes B";
  ob.height = lanes_h;
  ob.offset_ns = offset_ns_;
  ob.title = title_b.c_str();
  ob.dark = dark;
  tb_.draw(b, view, ob);
  if (int c = ta_.takeClicked(); c >= 0) selectA(c);
  if (int c = tb_.takeClicked(); c >= 0) selectB(c);
}

// Both traces described, then how they line up.
void CompareView::drawSummary(const TimelineModel& a, const TimelineModel& b) const {
  const auto& d = compare_.diff;
  ImGui::TextUnformatted(("A  " + describeTrace(baseName(a.path), a.analysis)).c_str());
  ImGui::TextUnformatted(("B  " + describeTrace(baseName(b.path), b.analysis)).c_str());
  ImGui::Text("%lld collectives aligned by order, %lld only in A, %lld only in B; rows with fewer than "
              "%lld calls a side or inside the run-to-run noise are not judged (grey)",
              static_cast<long long>(d.aligned), static_cast<long long>(d.unmatched_a),
              static_cast<long long>(d.unmatched_b), static_cast<long long>(analyzer::kMinDiffSamples));
}

// The diff table, a row per op and size bucket, coloured where judged; clicking a row selects
// its first pair and zooms to it (the returned action).
InspectAction CompareView::drawDiffTable(const TimelineModel& a) const {
  InspectAction action;
  const auto& d = compare_.diff;
  if (!ImGui::BeginTable("diff table", 6,
                         ImGuiTableFlags_BordersInnerH | ImGuiTableFlags_SizingStretchProp |
                             ImGuiTableFlags_ScrollY)) {
    return action;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  for (const char* h : {"op", "size", "count A/B", "median A", "median B", "speed-up"})
    ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  for (size_t i = 0; i < d.rows.size(); ++i) {
    const analyzer::DiffRow& row = d.rows[i];
    ImGui::TableNextRow();
    RgbF rgb;
    if (diffRowColor(row, &rgb)) {  // judged rows only
      ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg0,
                             ImGui::GetColorU32(ImVec4(rgb.r, rgb.g, rgb.b, 1.0f)));
    }
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(row.op.c_str(), false, ImGuiSelectableFlags_SpanAllColumns) &&
        i < compare_.first_pair_of_row.size() && compare_.first_pair_of_row[i] >= 0) {
      const ComparePair& p = compare_.pairs[static_cast<size_t>(compare_.first_pair_of_row[i])];
      action.select = p.a;
      action.zoom = rangeAround(a.analysis.collectives[static_cast<size_t>(p.a)], 0.5);
    }
    if (ImGui::IsItemHovered() && (!row.verdict.empty() || !row.note.empty())) {
      ImGui::SetTooltip("%s",
                        (row.verdict.empty() ? "not judged: " + row.note : row.verdict).c_str());
    }
    ImGui::PopID();
    drawDiffCells(row);
  }
  ImGui::EndTable();
  return action;
}

// A diff row's figures after its op: sizes, counts, both medians and the speed-up.
void CompareView::drawDiffCells(const analyzer::DiffRow& row) {
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(analyzer::sizeText(row.min_bytes, row.max_bytes).c_str());
  ImGui::TableNextColumn();
  ImGui::Text("%lld / %lld", static_cast<long long>(row.count_a),
              static_cast<long long>(row.count_b));
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format::durationSignificant(static_cast<double>(row.median_a_ns)).c_str());
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(format::durationSignificant(static_cast<double>(row.median_b_ns)).c_str());
  ImGui::TableNextColumn();
  if (row.speedup > 0 && !row.note.empty()) {  // not judged: the figure, dimmed, and why
    ImGui::TextDisabled("%.2fx (%s)", row.speedup, diffRowTag(row).c_str());
  } else if (row.speedup > 0) {
    ImGui::Text("%.2fx %s", row.speedup,
                row.speedup >= 1.05       ? "B faster"
                : row.speedup <= 1 / 1.05 ? "B slower"
                                          : "");
  } else {
    ImGui::TextUnformatted("-");
  }
}

// The selected pair: each side's collective and the speed-up between them.
void CompareView::drawSelectedPair(const TimelineModel& a, const TimelineModel& b) const {
  const int sa = ta_.selected(), sb = tb_.selected();
  if (sa < 0 && sb < 0) return;
  ImGui::TextUnformatted("selected pair");
  auto line = [&](const char* side, const TimelineModel& m, int c) {
    if (c < 0) {
      ImGui::Text("%s: no partner", side);
      return;
    }
    const auto& ci = m.analysis.collectives[static_cast<size_t>(c)];
    ImGui::Text("%s: #%d %s %s %s, %s, busbw %.3g GB/s", side, c, ci.op.c_str(), ci.library.c_str(),
                format::bytesSignificant(static_cast<double>(ci.bytes)).c_str(),
                format::durationSignificant(static_cast<double>(ci.duration_ns)).c_str(),
                ci.busbw_gbps);
  };
  line("A", a, sa);
  line("B", b, sb);
  if (sa >= 0 && sb >= 0) {
    const double da =
        static_cast<double>(a.analysis.collectives[static_cast<size_t>(sa)].duration_ns);
    const double db =
        static_cast<double>(b.analysis.collectives[static_cast<size_t>(sb)].duration_ns);
    if (da > 0 && db > 0) ImGui::Text("speed-up %.2fx", da / db);
  }
  ImGui::Separator();
}

void CompareView::drawVerdicts() const {
  const auto& d = compare_.diff;
  ImGui::TextUnformatted("verdicts");
  for (const std::string& v : d.verdicts) {  // wrapped, not cut at the panel's edge
    ImGui::Bullet();
    ImGui::TextWrapped("%s", v.c_str());
  }
  if (d.verdicts.empty()) textDisabledWrapped(("none: " + d.no_verdict).c_str());
  ImGui::Separator();
}

// What the table and the findings asked for: select (A's side, or B's with its partner), zoom,
// scroll each timeline to a rank's or a link's lane.
void CompareView::apply(const TimelineModel& a, const TimelineModel& b, ViewState* view,
                        InspectAction action, const InspectAction& fb) {
  if (action.select >= 0) selectA(action.select);
  if (fb.select >= 0) {
    selectB(fb.select);
    if (ta_.selected() >= 0) {
      action.zoom = rangeAround(a.analysis.collectives[static_cast<size_t>(ta_.selected())], 2.0);
    } else if (fb.zoom) {
      action.zoom = TimeRange{fb.zoom->t0 - offset_ns_, fb.zoom->t1 - offset_ns_};
    }
  }
  if (action.rank >= 0) ta_.scrollToLane(ta_.laneOfRank(a, action.rank));
  if (action.src >= 0) ta_.scrollToLane(ta_.laneOfLink(a, action.src, action.dst));
  if (fb.rank >= 0) tb_.scrollToLane(tb_.laneOfRank(b, fb.rank));
  if (fb.src >= 0) tb_.scrollToLane(tb_.laneOfLink(b, fb.src, fb.dst));
  if (action.zoom) {
    view->setRange(*action.zoom);
    view->commit();
  }
}

}  // namespace ringside::gui
