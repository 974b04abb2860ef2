// Statistics panel: per event kind (and per rank, or all ranks together):
// count, total, mean, p50, p99 and max duration, largest total first;
// filtered by the search text (kind name) and a rank selector.
#include <string>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {

void draw_statistics_panel(const TimelineModel& model, ViewState& state) {
  const auto& ranks = model.ranks();
  const std::string current =
      state.statistics_rank < 0 ? "all ranks" : "rank " + std::to_string(state.statistics_rank);
  ImGui::SetNextItemWidth(140);
  if (ImGui::BeginCombo("##rank", current.c_str())) {
    if (ImGui::Selectable("all ranks", state.statistics_rank < 0)) state.statistics_rank = -1;
    for (const RankTimeline& r : ranks) {
      const std::string label = "rank " + std::to_string(r.info.rank);
      if (ImGui::Selectable(label.c_str(), state.statistics_rank == r.info.rank))
        state.statistics_rank = r.info.rank;
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  ImGui::TextDisabled("durations per kind; instants have counts only");
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("statistics", 9, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, 45);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("lane", ImGuiTableColumnFlags_WidthFixed, 110);
  for (const char* name : {"count", "total", "mean", "p50", "p99", "max"})
    ImGui::TableSetupColumn(name, ImGuiTableColumnFlags_WidthFixed, 85);
  ImGui::TableHeadersRow();
  for (const KindStatistics& s : model.trace().statistics) {
    if (s.rank != state.statistics_rank) continue;
    const std::string kind = event_kind_name(s.kind);
    if (*state.search_text && kind.find(state.search_text) == std::string::npos &&
        std::string(kind_label(s.kind)).find(state.search_text) == std::string::npos)
      continue;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (s.rank < 0)
      ImGui::TextDisabled("all");
    else
      ImGui::Text("%d", s.rank);
    ImGui::TableNextColumn();
    ImGui::TextColored(to_vec4(kind_color(s.kind)), "%s", kind.c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", lane_name(lane_of_kind(s.kind)).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_count(s.count).c_str());
    for (int64_t v : {s.total_ns, s.mean_ns, s.p50_ns, s.p99_ns, s.max_ns}) {
      ImGui::TableNextColumn();
      if (s.is_span)
        ImGui::TextUnformatted(format_duration(v).c_str());
      else
        ImGui::TextDisabled("-");
    }
  }
  ImGui::EndTable();
}

}  // namespace ringscope::view
