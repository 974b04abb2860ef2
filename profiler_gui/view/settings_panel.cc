// Settings panel: the settings in force over time (TraceReader::settings()):
// a table of every change, and per setting a small step plot of its value
// across the trace's time span.
#include <algorithm>
#include <map>
#include <string>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr float kPlotHeight = 34, kPlotLabelWidth = 190;

std::string format_setting(int32_t key, int64_t value) {
  if (key == static_cast<int32_t>(SettingKey::kFusionThresholdBytes)) return format_bytes(value);
  if (key == static_cast<int32_t>(SettingKey::kCycleTimeNs)) return format_duration(value);
  if (key == static_cast<int32_t>(SettingKey::kCacheEnabled)) return value ? "on" : "off";
  if (key == static_cast<int32_t>(SettingKey::kCpuAllreduceAlgorithm))
    return value == 1 ? "MPI_Allreduce" : value == 2 ? "ring only" : "ringscope's choice";
  return std::to_string(value);
}

// Step line of one setting's values (rank 0's changes, else all) over the trace.
void draw_step_plot(const TimelineModel& model, const std::vector<const SettingChange*>& changes,
                    float width) {
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  draw->AddRectFilled(p, ImVec2(p.x + width, p.y + kPlotHeight), colors::kBandEven);
  int64_t lo = changes.front()->value, hi = lo;
  for (const SettingChange* c : changes) lo = std::min(lo, c->value), hi = std::max(hi, c->value);
  const TimeToScreen map{model.trace().begin_ns, model.trace().end_ns, p.x, width};
  auto y_of = [&](int64_t v) {
    const float f = hi == lo ? 0.5f : static_cast<float>(v - lo) / static_cast<float>(hi - lo);
    return p.y + kPlotHeight - 4 - f * (kPlotHeight - 8);
  };
  for (size_t i = 0; i < changes.size(); ++i) {
    const float x0 = std::max(p.x, map.x(changes[i]->time_ns));
    const float x1 = i + 1 < changes.size() ? map.x(changes[i + 1]->time_ns) : p.x + width;
    const float y = y_of(changes[i]->value);
    draw->AddLine(ImVec2(x0, y), ImVec2(x1, y),
                  kind_color(static_cast<uint16_t>(EventKind::kSettings)), 2.0f);
    if (i + 1 < changes.size())
      draw->AddLine(ImVec2(x1, y), ImVec2(x1, y_of(changes[i + 1]->value)), colors::kText, 1.0f);
  }
  ImGui::Dummy(ImVec2(width, kPlotHeight));
}

}  // namespace

void draw_settings_panel(const TimelineModel& model, SettingsCache* cache) {
  if (!cache->valid) {
    model.trace().reader.settings(&cache->changes);
    cache->valid = true;
  }
  if (cache->changes.empty()) {
    ImGui::TextDisabled("no SETTINGS events in this trace");
    return;
  }
  // Plots: one per key, rank 0's changes (the settings are the same on all ranks).
  std::map<int32_t, std::vector<const SettingChange*>> by_key;
  const int first_rank = model.ranks().empty() ? 0 : model.ranks().front().info.rank;
  for (const SettingChange& c : cache->changes)
    if (c.rank == first_rank) by_key[c.key].push_back(&c);
  const float width = ImGui::GetContentRegionAvail().x * 0.55f;
  ImGui::BeginGroup();
  for (const auto& [key, changes] : by_key) {
    ImGui::TextUnformatted(setting_key_name(key).c_str());
    ImGui::SameLine(kPlotLabelWidth);
    ImGui::TextDisabled("now %s, %zu changes", format_setting(key, changes.back()->value).c_str(),
                        changes.size());
    draw_step_plot(model, changes, width - 10);
  }
  ImGui::EndGroup();
  ImGui::SameLine();
  const ImGuiTableFlags flags =
      ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
  if (!ImGui::BeginTable("settings", 4, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("time", ImGuiTableColumnFlags_WidthFixed, 90);
  ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, 40);
  ImGui::TableSetupColumn("setting", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthFixed, 110);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(cache->changes.size()));
  while (clipper.Step())
    for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
      const SettingChange& c = cache->changes[i];
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_duration(c.time_ns - model.trace().begin_ns).c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%d", c.rank);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(setting_key_name(c.key).c_str());
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_setting(c.key, c.value).c_str());
    }
  ImGui::EndTable();
}

}  // namespace ringscope::view
