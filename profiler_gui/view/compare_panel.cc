// Compare panel (`--compare B`): the second trace's load progress or error,
// then phase totals per kind and per-tensor mean collective time, before (A,
// the main trace) and after (B) side by side with the ratio, largest change first.
#include <cmath>
#include <cstdio>
#include <string>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

void draw_rows(const char* id, const std::vector<CompareRow>& rows, bool phases, float width) {
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable(id, 4, flags, ImVec2(width, 0))) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn(phases ? "kind (total, all ranks)"
                                 : "tensor (mean time of its collective, shared when fused)",
                          ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("A", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("B", ImGuiTableColumnFlags_WidthFixed, 80);
  ImGui::TableSetupColumn("B / A", ImGuiTableColumnFlags_WidthFixed, 60);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(rows.size()));
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const CompareRow& r = rows[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      if (phases)
        ImGui::TextColored(to_vec4(kind_color(r.kind)), "%s", r.name.c_str());
      else if (r.a_group > 0 && r.b_group > 0 && std::abs(r.a_group - r.b_group) >= 0.5)
        // Fused differently: the times are of groups of different sizes.
        ImGui::Text("%s  (groups of %.0f -> %.0f tensors)", r.name.c_str(), r.a_group, r.b_group);
      else
        ImGui::TextUnformatted(r.name.c_str());
      for (int64_t v : {r.a_ns, r.b_ns}) {
        ImGui::TableNextColumn();
        if (v < 0)
          ImGui::TextDisabled("-");
        else
          ImGui::TextUnformatted(format_duration(v).c_str());
      }
      ImGui::TableNextColumn();
      const double ratio = r.ratio();
      if (ratio <= 0) {
        ImGui::TextDisabled("-");
      } else {
        // Slower after: red; faster: green.
        const ImVec4 c = ratio > 1.05   ? to_vec4(colors::kLate)
                         : ratio < 0.95 ? ImVec4(0.45f, 0.85f, 0.45f, 1)
                                        : to_vec4(colors::kText);
        ImGui::TextColored(c, "%.2fx", ratio);
      }
    }
  ImGui::EndTable();
}

}  // namespace

void draw_compare_panel(const TimelineModel& model, TimelineModel* other,
                        const std::string& other_path, CompareCache* cache, FrameLayout* layout) {
  if (!other) {
    ImGui::TextDisabled("start with `ringscope-view A --compare B` to compare two traces");
    return;
  }
  const LoadProgress p = other->progress();
  if (p.state == LoadState::kLoading || p.state == LoadState::kIdle) {
    ImGui::Text("Loading %s", other_path.c_str());
    ImGui::ProgressBar(static_cast<float>(p.fraction), ImVec2(300, 0));
    return;
  }
  if (p.state == LoadState::kFailed) {
    ImGui::TextColored(to_vec4(colors::kLate), "Could not open %s: %s", other_path.c_str(),
                       other->error().to_string().c_str());
    return;
  }
  if (!cache->valid) {
    cache->result = compare_traces(model.trace(), other->trace());
    cache->valid = true;
  }
  ImGui::TextDisabled("A = %s   B = %s   (B / A < 1: B is faster)", model.inputs().front().c_str(),
                      other_path.c_str());
  const float w = ImGui::GetContentRegionAvail().x;
  draw_rows("compare_phases", cache->result.phases, true, w * 0.42f);
  ImGui::SameLine();
  draw_rows("compare_tensors", cache->result.tensors, false, 0);
  layout->compare_rows =
      static_cast<int>(cache->result.phases.size() + cache->result.tensors.size());
}

}  // namespace ringscope::view
