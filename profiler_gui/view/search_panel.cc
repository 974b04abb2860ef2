// Search panel: a tensor-name query and the list of collectives holding a
// matching tensor (cycle:seq, tensor, last-ready rank, start, duration).
// Clicking a row zooms the timeline to that collective and selects it.
#include <string>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr size_t kMaxRows = 5000;

}  // namespace

void draw_search_panel(const TimelineModel& model, ViewState& state, SearchCache* cache,
                       FrameLayout* layout) {
  ImGui::SetNextItemWidth(320);
  ImGui::InputTextWithHint("##tensor_search", "tensor name contains ...", state.tensor_search,
                           sizeof(state.tensor_search));
  if (!cache->valid || cache->query != state.tensor_search) {
    cache->query = state.tensor_search;
    cache->matches = search_tensors(model, cache->query, kMaxRows, &cache->total);
    cache->valid = true;
  }
  ImGui::SameLine();
  if (cache->query.empty())
    ImGui::TextDisabled("type part of a tensor name; click a match to jump to it");
  else if (cache->total > cache->matches.size())
    ImGui::TextDisabled("%zu collectives match (first %zu shown)", cache->total,
                        cache->matches.size());
  else
    ImGui::TextDisabled("%zu collectives match", cache->total);

  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("search", 6, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("id", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("tensor", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 100);
  ImGui::TableSetupColumn("last rank", ImGuiTableColumnFlags_WidthFixed, 70);
  ImGui::TableSetupColumn("start", ImGuiTableColumnFlags_WidthFixed, 100);
  ImGui::TableSetupColumn("duration", ImGuiTableColumnFlags_WidthFixed, 90);
  ImGui::TableHeadersRow();
  const auto& collectives = model.trace().stragglers.collectives;
  layout->search_rows = static_cast<int>(cache->matches.size());
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(cache->matches.size()));
  while (clipper.Step())
    for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
      const TensorMatch& m = cache->matches[row];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      const std::string id = std::to_string(m.key.cycle) + ":" + std::to_string(m.key.seq_index);
      const bool selected = state.selected_collective && *state.selected_collective == m.key;
      ImGui::PushID(row);
      if (ImGui::Selectable(id.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns))
        jump_to_collective(model, state, m.key);
      ImGui::PopID();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(std::string(model.text(m.name_id)).c_str());
      ImGui::TableNextColumn();
      const uint16_t kind = collectives[m.collective].kind;
      ImGui::TextColored(to_vec4(kind_color(kind)), "%s", kind_label(kind));
      ImGui::TableNextColumn();
      if (m.last_rank >= 0)
        ImGui::Text("%d", m.last_rank);
      else
        ImGui::TextDisabled("-");
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(m.start_ns - model.trace().begin_ns).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(m.duration_ns).c_str());
    }
  ImGui::EndTable();
}

}  // namespace ringscope::view
