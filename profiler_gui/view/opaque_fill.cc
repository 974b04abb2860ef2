// The opaque-geometry hook (see opaque_fill.h) and opaque rectangles.
#include "view/opaque_fill.h"

namespace ringscope::view {
namespace {

ImDrawCallback g_geometry_hook = nullptr;  // set once by main(), before any frame

}  // namespace

void set_opaque_geometry_hook(ImDrawCallback begin) { g_geometry_hook = begin; }

void begin_opaque_geometry(ImDrawList* draw) {
  if (g_geometry_hook) draw->AddCallback(g_geometry_hook, nullptr);
}

void end_opaque_geometry(ImDrawList* draw) {
  if (g_geometry_hook) draw->AddCallback(ImDrawCallback_ResetRenderState, nullptr);
}

void add_opaque_rect(ImDrawList* draw, const ImVec2& min, const ImVec2& max, ImU32 color) {
  draw->AddRectFilled(min, max, color | IM_COL32_A_MASK);
}

}  // namespace ringscope::view
