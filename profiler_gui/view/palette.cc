// Colours per event kind and the ImGui theme (see palette.h).
#include "palette.h"

#include "ringscope/trace_event.h"

namespace ringscope::view {

ImU32 kind_color(uint16_t kind) {
  switch (static_cast<EventKind>(kind)) {
    case EventKind::kCycle:
      return IM_COL32(86, 101, 125, 255);
    case EventKind::kEnqueue:
      return IM_COL32(125, 220, 205, 255);
    case EventKind::kNegotiate:
      return IM_COL32(38, 154, 140, 255);
    case EventKind::kReady:
      return IM_COL32(160, 230, 220, 255);
    case EventKind::kFusion:
      return IM_COL32(224, 150, 52, 255);
    case EventKind::kFusionMember:
      return IM_COL32(250, 200, 140, 255);
    case EventKind::kMemcpyIn:
      return IM_COL32(176, 102, 44, 255);
    case EventKind::kMemcpyOut:
      return IM_COL32(196, 124, 70, 255);
    case EventKind::kAllreduce:
      return IM_COL32(58, 134, 255, 255);
    case EventKind::kMpiAllreduce:
      return IM_COL32(104, 106, 220, 255);
    case EventKind::kAllgather:
      return IM_COL32(78, 168, 222, 255);
    case EventKind::kBroadcast:
      return IM_COL32(72, 191, 227, 255);
    case EventKind::kReducescatter:
      return IM_COL32(96, 120, 240, 255);
    case EventKind::kAlltoall:
      return IM_COL32(140, 110, 230, 255);
    case EventKind::kNcclAllreduce:
    case EventKind::kNcclAllgather:
    case EventKind::kNcclBroadcast:
      return IM_COL32(118, 200, 147, 255);
    case EventKind::kRingReduceScatter:
      return IM_COL32(157, 78, 221, 255);
    case EventKind::kRingAllgather:
      return IM_COL32(199, 125, 255, 255);
    case EventKind::kAllgatherStep:
      return IM_COL32(177, 133, 219, 255);
    case EventKind::kBroadcastStep:
      return IM_COL32(140, 110, 200, 255);
    case EventKind::kAlltoallStep:
      return IM_COL32(186, 160, 250, 255);
    case EventKind::kRecursiveDoublingStep:
      return IM_COL32(123, 44, 191, 255);
    case EventKind::kNcclReduceScatter:
    case EventKind::kNcclNodeAllgather:
      return IM_COL32(64, 160, 110, 255);
    case EventKind::kHierarchicalCross:
      return IM_COL32(46, 120, 90, 255);
    case EventKind::kGpuCopyIn:  // in and out sit side by side in the fusion lane
      return IM_COL32(214, 150, 70, 255);
    case EventKind::kGpuCopyOut:
      return IM_COL32(240, 204, 140, 255);
    case EventKind::kCallback:
      return IM_COL32(138, 177, 125, 255);
    case EventKind::kSettings:
      return IM_COL32(200, 205, 215, 255);
    case EventKind::kStep:
      return IM_COL32(170, 225, 90, 255);
    case EventKind::kJoin:
      return IM_COL32(120, 170, 70, 255);
    case EventKind::kAutotuneTrial:
      return IM_COL32(244, 162, 97, 255);
    case EventKind::kError:
      return IM_COL32(230, 57, 70, 255);
    case EventKind::kStall:
      return IM_COL32(255, 123, 0, 255);
    case EventKind::kStraggler:
      return IM_COL32(255, 150, 190, 255);
    case EventKind::kDropped:
      return IM_COL32(255, 0, 110, 255);
    case EventKind::kProcessSet:
      return process_set_color(1);
  }
  return IM_COL32(128, 128, 128, 255);
}

ImU32 process_set_color(uint16_t id) {
  static constexpr ImU32 kSets[] = {IM_COL32(236, 72, 153, 255), IM_COL32(34, 197, 94, 255),
                                    IM_COL32(250, 204, 21, 255), IM_COL32(14, 165, 233, 255),
                                    IM_COL32(168, 85, 247, 255), IM_COL32(249, 115, 22, 255)};
  return id == 0 ? colors::kTextDim : kSets[(id - 1) % (sizeof(kSets) / sizeof(kSets[0]))];
}

ImU32 text_color_on(ImU32 fill) {
  const float r = static_cast<float>((fill >> IM_COL32_R_SHIFT) & 0xff);
  const float g = static_cast<float>((fill >> IM_COL32_G_SHIFT) & 0xff);
  const float b = static_cast<float>((fill >> IM_COL32_B_SHIFT) & 0xff);
  return 0.299f * r + 0.587f * g + 0.114f * b > 150 ? IM_COL32(16, 18, 22, 255)
                                                    : IM_COL32(245, 246, 248, 255);
}

const char* kind_label(uint16_t kind) {
  switch (static_cast<EventKind>(kind)) {
    case EventKind::kCycle:
      return "cycle";
    case EventKind::kEnqueue:
      return "enqueue";
    case EventKind::kNegotiate:
      return "negotiate";
    case EventKind::kReady:
      return "ready";
    case EventKind::kFusion:
      return "fusion";
    case EventKind::kFusionMember:
      return "member";
    case EventKind::kMemcpyIn:
      return "memcpy in";
    case EventKind::kMemcpyOut:
      return "memcpy out";
    case EventKind::kAllreduce:
      return "allreduce";
    case EventKind::kMpiAllreduce:
      return "MPI allreduce";
    case EventKind::kAllgather:
      return "allgather";
    case EventKind::kBroadcast:
      return "broadcast";
    case EventKind::kReducescatter:
      return "reducescatter";
    case EventKind::kAlltoall:
      return "alltoall";
    case EventKind::kAlltoallStep:
      return "alltoall step";
    case EventKind::kNcclAllreduce:
      return "NCCL allreduce";
    case EventKind::kNcclAllgather:
      return "NCCL allgather";
    case EventKind::kNcclBroadcast:
      return "NCCL broadcast";
    case EventKind::kRingReduceScatter:
      return "reduce-scatter";
    case EventKind::kRingAllgather:
      return "ring allgather";
    case EventKind::kAllgatherStep:
      return "allgather step";
    case EventKind::kBroadcastStep:
      return "broadcast step";
    case EventKind::kRecursiveDoublingStep:
      return "rec. doubling";
    case EventKind::kNcclReduceScatter:
      return "NCCL reduce-scatter (node)";
    case EventKind::kNcclNodeAllgather:
      return "NCCL allgather (node)";
    case EventKind::kHierarchicalCross:
      return "cross-node allreduce";
    case EventKind::kGpuCopyIn:
      return "GPU copy in";
    case EventKind::kGpuCopyOut:
      return "GPU copy out";
    case EventKind::kCallback:
      return "callback";
    case EventKind::kSettings:
      return "settings";
    case EventKind::kStep:
      return "step";
    case EventKind::kJoin:
      return "join";
    case EventKind::kAutotuneTrial:
      return "autotune";
    case EventKind::kError:
      return "error";
    case EventKind::kStall:
      return "stall";
    case EventKind::kStraggler:
      return "straggler";
    case EventKind::kDropped:
      return "dropped";
    case EventKind::kProcessSet:
      return "process set";
  }
  return "unknown";
}

ImVec4 to_vec4(ImU32 color) { return ImGui::ColorConvertU32ToFloat4(color); }

void apply_theme() {
  ImGui::StyleColorsDark();
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 0;
  style.FrameRounding = 3;
  style.TabRounding = 3;
  style.ScrollbarRounding = 3;
  style.WindowBorderSize = 0;
  style.FramePadding = ImVec2(6, 3);
  style.ItemSpacing = ImVec2(8, 4);
  style.CellPadding = ImVec2(6, 2);
  ImVec4* c = style.Colors;
  c[ImGuiCol_WindowBg] = to_vec4(colors::kBackground);
  c[ImGuiCol_ChildBg] = ImVec4(0, 0, 0, 0);  // the window already paints it: less overdraw
  c[ImGuiCol_PopupBg] = ImVec4(0.10f, 0.11f, 0.13f, 0.97f);
  c[ImGuiCol_Text] = to_vec4(colors::kText);
  c[ImGuiCol_TextDisabled] = to_vec4(colors::kTextDim);
  c[ImGuiCol_Header] = ImVec4(0.25f, 0.38f, 0.60f, 0.55f);
  c[ImGuiCol_HeaderHovered] = ImVec4(0.28f, 0.42f, 0.66f, 0.70f);
  c[ImGuiCol_HeaderActive] = ImVec4(0.30f, 0.46f, 0.72f, 0.85f);
  c[ImGuiCol_Tab] = ImVec4(0.16f, 0.18f, 0.22f, 1);
  c[ImGuiCol_TabActive] = ImVec4(0.23f, 0.33f, 0.50f, 1);
  c[ImGuiCol_TabHovered] = ImVec4(0.28f, 0.40f, 0.60f, 1);
  c[ImGuiCol_TableHeaderBg] = ImVec4(0.17f, 0.19f, 0.23f, 1);
  c[ImGuiCol_TableRowBgAlt] = ImVec4(1, 1, 1, 0.03f);
  c[ImGuiCol_FrameBg] = ImVec4(0.16f, 0.18f, 0.22f, 1);
  c[ImGuiCol_Button] = ImVec4(0.20f, 0.24f, 0.30f, 1);
  c[ImGuiCol_ButtonHovered] = ImVec4(0.27f, 0.36f, 0.50f, 1);
  c[ImGuiCol_PlotHistogram] = ImVec4(0.23f, 0.53f, 1.0f, 1);
}

}  // namespace ringscope::view
