// The colour legend: one swatch per event kind present in the trace, in
// family order, wrapping across the window width; then, where the trace has
// process sets, a check box per set in its colour that shows or hides its
// tracks. Toggled from the toolbar.
#include <algorithm>
#include <string>
#include <vector>

#include "palette.h"
#include "panels.h"

namespace ringscope::view {

void draw_legend(const TimelineModel& model, ViewState& state) {
  if (!state.show_legend) return;
  // Kinds present (all-ranks rows of the statistics), ordered by lane then kind.
  std::vector<uint16_t> kinds;
  for (const KindStatistics& s : model.trace().statistics)
    if (s.rank == -1) kinds.push_back(s.kind);
  std::sort(kinds.begin(), kinds.end(), [](uint16_t a, uint16_t b) {
    const int la = static_cast<int>(track_family_of_lane(lane_of_kind(a)));
    const int lb = static_cast<int>(track_family_of_lane(lane_of_kind(b)));
    return la != lb ? la < lb : a < b;
  });
  ImDrawList* draw = ImGui::GetWindowDrawList();
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float swatch = ImGui::GetTextLineHeight() - 4;
  for (size_t i = 0; i < kinds.size(); ++i) {
    const char* label = kind_label(kinds[i]);
    const float w = swatch + 6 + ImGui::CalcTextSize(label).x + 14;
    if (i > 0) {
      ImGui::SameLine();
      if (ImGui::GetCursorScreenPos().x + w > right) ImGui::NewLine();
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    draw->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + swatch, p.y + 2 + swatch),
                        kind_color(kinds[i]), 2);
    ImGui::Dummy(ImVec2(swatch + 2, swatch));
    ImGui::SameLine(0, 4);
    ImGui::TextUnformatted(label);
  }
  draw_process_set_filter(model, state);
}

void draw_process_set_filter(const TimelineModel& model, ViewState& state) {
  std::vector<uint16_t> sets;
  for (const RankTimeline& rank : model.trace().ranks)
    for (const Track& t : rank.tracks)
      if (t.process_set != 0) sets.push_back(t.process_set);
  std::sort(sets.begin(), sets.end());
  sets.erase(std::unique(sets.begin(), sets.end()), sets.end());
  if (sets.empty()) return;
  ImGui::TextUnformatted("process sets:");
  for (uint16_t id : sets) {
    ImGui::SameLine();
    auto hidden = std::find(state.hidden_process_sets.begin(), state.hidden_process_sets.end(), id);
    bool shown = hidden == state.hidden_process_sets.end();
    const std::string label = "set " + std::to_string(id);
    ImGui::PushStyleColor(ImGuiCol_Text, process_set_color(id));
    if (ImGui::Checkbox(label.c_str(), &shown)) {
      if (shown)
        state.hidden_process_sets.erase(hidden);
      else
        state.hidden_process_sets.push_back(id);
    }
    ImGui::PopStyleColor();
  }
}

}  // namespace ringscope::view
