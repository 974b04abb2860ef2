// Opaque rectangles through the installed filler, and the opaque-geometry
// hook (see opaque_fill.h); the rectangles of one frame are kept until the
// next frame starts adding.
#include "view/opaque_fill.h"

#include <deque>

namespace ringscope::view {
namespace {

ImDrawCallback g_filler = nullptr;
ImDrawCallback g_geometry_hook = nullptr;
std::deque<OpaqueRect> g_rects;  // stable addresses while the frame renders
int g_rects_frame = -1;

}  // namespace

void set_opaque_filler(ImDrawCallback filler) { g_filler = filler; }

void set_opaque_geometry_hook(ImDrawCallback begin) { g_geometry_hook = begin; }

void begin_opaque_geometry(ImDrawList* draw) {
  if (g_geometry_hook) draw->AddCallback(g_geometry_hook, nullptr);
}

void end_opaque_geometry(ImDrawList* draw) {
  if (g_geometry_hook) draw->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void add_opaque_rect(ImDrawList* draw, const ImVec2& min, const ImVec2& max, ImU32 color) {
  color |= IM_COL32_A_MASK;
  if (!g_filler) {
    draw->AddRectFilled(min, max, color);
    return;
  }
  if (max.x <= min.x || max.y <= min.y) return;
  // The previous frame has been rendered once the frame counter moves on.
  if (g_rects_frame != ImGui::GetFrameCount())
    g_rects.clear(), g_rects_frame = ImGui::GetFrameCount();
  g_rects.push_back(OpaqueRect{min, max, color});
  draw->AddCallback(g_filler, &g_rects.back());
}

}  // namespace ringscope::view
