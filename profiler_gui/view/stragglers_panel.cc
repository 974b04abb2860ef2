// Stragglers panel: on the left every collective with its last-ready rank and
// lateness (latest first, filtered by the search text; a click selects it and
// brings it into view); on the right, across several hosts, per-host totals,
// and per-rank totals: how often each rank was last, the waiting it caused,
// and how long it waited for the others.
#include <algorithm>
#include <cstring>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

std::string tensor_label(const TimelineModel& model, const CollectiveReadiness& c) {
  if (c.member_names.empty()) return "-";
  std::string label(model.text(c.member_names.front()));
  if (c.member_names.size() > 1) label += "  +" + std::to_string(c.member_names.size() - 1);
  return label;
}

bool matches(const TimelineModel& model, const CollectiveReadiness& c, const char* filter) {
  if (!*filter) return true;
  for (int32_t id : c.member_names)
    if (model.text(id).find(filter) != std::string_view::npos) return true;
  return false;
}

void refresh(const TimelineModel& model, const ViewState& state, StragglersTableCache* cache) {
  if (cache->valid && cache->filter == state.search_text) return;
  const StragglerReport& report = model.trace().stragglers;
  cache->rows.clear();
  for (uint32_t i : report.by_lateness)
    if (matches(model, report.collectives[i], state.search_text)) cache->rows.push_back(i);
  cache->filter = state.search_text;
  cache->valid = true;
}

void collectives_table(const TimelineModel& model, ViewState& state,
                       const StragglersTableCache& cache) {
  const StragglerReport& report = model.trace().stragglers;
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("collectives", 6, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("collective", ImGuiTableColumnFlags_WidthFixed, 90);
  ImGui::TableSetupColumn("tensors", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("bytes", ImGuiTableColumnFlags_WidthFixed, 75);
  ImGui::TableSetupColumn("last rank", ImGuiTableColumnFlags_WidthFixed, 70);
  ImGui::TableSetupColumn("lateness", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(cache.rows.size()));
  while (clipper.Step())
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const CollectiveReadiness& c = report.collectives[cache.rows[static_cast<size_t>(row)]];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string id = std::to_string(c.key.cycle) + ":" + std::to_string(c.key.seq_index);
      const bool is_selected = state.selected_collective && *state.selected_collective == c.key;
      ImGui::PushID(row);
      if (ImGui::Selectable(id.c_str(), is_selected, ImGuiSelectableFlags_SpanAllColumns)) {
        state.selected_event.reset();
        focus_collective(model, state, c.key);
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(tensor_label(model, c).c_str());
      ImGui::TableNextColumn();
      ImGui::TextColored(to_vec4(kind_color(c.kind)), "%s", kind_label(c.kind));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_bytes(c.bytes).c_str());
      ImGui::TableNextColumn();
      if (c.last_rank_index >= 0 && c.lateness_ns > 0)
        ImGui::Text("%d", model.ranks()[c.last_rank_index].info.rank);
      else
        ImGui::TextDisabled("-");
      ImGui::TableNextColumn();
      if (c.last_rank_index >= 0)
        ImGui::TextUnformatted(format_duration(c.lateness_ns).c_str());
      else
        ImGui::TextDisabled("unknown");
    }
  ImGui::EndTable();
}

// A bar as long as `part`'s share of `whole`, in the lateness colour.
void share_bar(int64_t part, int64_t whole) {
  ImGui::PushStyleColor(ImGuiCol_PlotHistogram, to_vec4(colors::kLate));
  ImGui::ProgressBar(static_cast<float>(part) / static_cast<float>(whole),
                     ImVec2(-1, ImGui::GetTextLineHeight()), "");
  ImGui::PopStyleColor();
}

void rank_totals_table(const TimelineModel& model) {
  const StragglerReport& report = model.trace().stragglers;
  int64_t worst = 1;
  for (const RankStragglerTotals& t : report.per_rank)
    worst = std::max(worst, t.lateness_caused_ns);
  const ImGuiTableFlags flags =
      ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
  if (!ImGui::BeginTable("rank_totals", 5, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, 40);
  ImGui::TableSetupColumn("last ready", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("caused", ImGuiTableColumnFlags_WidthFixed, 75);
  ImGui::TableSetupColumn("share of waiting", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("waited for others", ImGuiTableColumnFlags_WidthFixed, 120);
  ImGui::TableHeadersRow();
  for (const RankStragglerTotals& t : report.per_rank) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::Text("%d", t.rank);
    ImGui::TableNextColumn();
    ImGui::Text("%s / %s", format_count(t.times_last).c_str(), format_count(t.collectives).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(t.lateness_caused_ns).c_str());
    ImGui::TableNextColumn();
    share_bar(t.lateness_caused_ns, worst);
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(t.waited_ns).c_str());
  }
  ImGui::EndTable();
}

// Across several hosts: the per-rank totals summed per host, so a slow or
// busy machine stands out whichever of its ranks was last each time.
void host_totals_table(const TimelineModel& model) {
  const StragglerReport& report = model.trace().stragglers;
  int64_t worst = 1;
  for (const HostStragglerTotals& h : report.per_host)
    worst = std::max(worst, h.lateness_caused_ns);
  const ImGuiTableFlags flags = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
  if (!ImGui::BeginTable("host_totals", 4, flags)) return;
  ImGui::TableSetupColumn("host", ImGuiTableColumnFlags_WidthFixed, 120);
  ImGui::TableSetupColumn("ranks", ImGuiTableColumnFlags_WidthFixed, 70);
  ImGui::TableSetupColumn("last ready, caused", ImGuiTableColumnFlags_WidthFixed, 140);
  ImGui::TableSetupColumn("share of waiting", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  for (const HostStragglerTotals& h : report.per_host) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(h.host.empty() ? "(unknown)" : h.host.c_str());
    ImGui::TableNextColumn();
    std::string list;
    for (int r : h.ranks) list += (list.empty() ? "" : ",") + std::to_string(r);
    ImGui::TextUnformatted(list.c_str());
    ImGui::TableNextColumn();
    ImGui::Text("%s, %s", format_count(h.times_last).c_str(),
                format_duration(h.lateness_caused_ns).c_str());
    ImGui::TableNextColumn();
    share_bar(h.lateness_caused_ns, worst);
  }
  ImGui::EndTable();
}

}  // namespace

void draw_stragglers_panel(const TimelineModel& model, ViewState& state,
                           StragglersTableCache* cache) {
  refresh(model, state, cache);
  const StragglerReport& report = model.trace().stragglers;
  if (report.collectives.empty()) {
    ImGui::TextDisabled("No collectives in this trace: nothing to rank.");
    return;
  }
  ImGui::TextDisabled(
      "readiness = a rank's latest enqueue of the collective's tensors; lateness = last - first");
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("stragglers_left", ImVec2(width * 0.6f, 0));
  ImGui::Text("%s collectives%s", format_count(static_cast<int64_t>(cache->rows.size())).c_str(),
              *state.search_text ? " matching the search" : ", latest first");
  collectives_table(model, state, *cache);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("stragglers_right", ImVec2(0, 0));
  if (!report.per_host.empty()) {
    ImGui::TextUnformatted("per host");
    host_totals_table(model);
    ImGui::Spacing();
  }
  ImGui::TextUnformatted("per rank: who kept the others waiting");
  rank_totals_table(model);
  ImGui::EndChild();
}

}  // namespace ringscope::view
