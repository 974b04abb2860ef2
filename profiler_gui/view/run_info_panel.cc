// Run information panel: the trace's meta table (run id, hosts, command
// line, ...), the files it came from, and per rank its host, pid, event and
// dropped counts, clock offset to rank 0 and whether the file was closed.
#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {

void draw_run_info_panel(const TimelineModel& model) {
  const LoadedTrace& trace = model.trace();
  const float width = ImGui::GetContentRegionAvail().x;
  ImGui::BeginChild("run_meta", ImVec2(width * 0.45f, 0));
  ImGui::Text("%s events, %s span, loaded in %.2f s, %.1f bytes/event in memory",
              format_count(trace.event_count).c_str(),
              format_duration(trace.end_ns - trace.begin_ns).c_str(), trace.load_seconds,
              trace.event_count
                  ? static_cast<double>(trace.memory_bytes) / static_cast<double>(trace.event_count)
                  : 0.0);
  const ImGuiTableFlags flags =
      ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
  if (ImGui::BeginTable("meta", 2, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("key", ImGuiTableColumnFlags_WidthFixed, 130);
    ImGui::TableSetupColumn("value", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    for (const auto& [key, value] : trace.reader.meta()) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("%s", key.c_str());
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", value.c_str());
    }
    for (const std::string& file : trace.reader.files()) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("file");
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", file.c_str());
    }
    for (const std::string& input : model.inputs()) {
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("opened");
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%s", input.c_str());
    }
    if (trace.live_files > 0) {  // live_snapshot.h
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::TextDisabled("live");
      ImGui::TableNextColumn();
      ImGui::TextWrapped("%d file(s) still being written, read through the copies above",
                         trace.live_files);
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("run_ranks", ImVec2(0, 0));
  if (ImGui::BeginTable("ranks", 7, flags)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    for (const char* name : {"rank", "host", "pid", "events", "dropped", "clock offset", "closed"})
      ImGui::TableSetupColumn(name);
    ImGui::TableHeadersRow();
    for (const RankTimeline& r : model.ranks()) {
      const RankInfo& i = r.info;
      ImGui::TableNextRow();
      ImGui::TableNextColumn();
      ImGui::Text("%d", i.rank);
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(i.hostname.c_str());
      ImGui::TableNextColumn();
      ImGui::Text("%lld", static_cast<long long>(i.pid));
      ImGui::TableNextColumn();
      ImGui::TextUnformatted(format_count(r.event_count).c_str());
      ImGui::TableNextColumn();
      if (i.dropped_events > 0)
        ImGui::TextColored(to_vec4(colors::kLate), "%s", format_count(i.dropped_events).c_str());
      else
        ImGui::TextDisabled("0");
      ImGui::TableNextColumn();
      ImGui::Text("%s (rtt %s)", format_duration(i.clock_offset_ns).c_str(),
                  i.clock_rtt_ns >= 0 ? format_duration(i.clock_rtt_ns).c_str() : "-");
      ImGui::TableNextColumn();
      if (i.finalized)
        ImGui::TextUnformatted("yes");
      else
        ImGui::TextColored(to_vec4(colors::kLate), "no (killed?)");
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
}

}  // namespace ringscope::view
