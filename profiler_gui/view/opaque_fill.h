// Opaque rectangles that the renderer may fill directly (a scissored clear)
// instead of as blended, textured triangles: the timeline's band backgrounds
// cover most of the screen, and with a software rasteriser every blended
// pixel counts. Without a filler installed they are plain AddRectFilled.
#pragma once

#include "imgui.h"

namespace ringscope::view {

// What a filler callback finds in ImDrawCmd::UserCallbackData.
struct OpaqueRect {
  ImVec2 min, max;  // display coordinates, before the command's clip rect
  ImU32 color;      // alpha 255
};

// main() installs the OpenGL filler once; nullptr: AddRectFilled.
void set_opaque_filler(ImDrawCallback filler);

// Opaque, untextured geometry (the timeline's boxes, alpha 255) between
// begin_ and end_opaque_geometry may be drawn by the renderer with a flat
// shader and no blending, a software rasteriser's cheapest fill. main()
// installs the hook that switches to it; end_ then asks the backend to
// restore its own state (ImDrawCallback_ResetRenderState). Without a hook
// both do nothing and the geometry is drawn like any other.
void set_opaque_geometry_hook(ImDrawCallback begin);
void begin_opaque_geometry(ImDrawList* draw);
void end_opaque_geometry(ImDrawList* draw);
// An opaque rectangle (alpha forced to 255), drawn in order with the rest of
// `draw`. The OpaqueRect lives until the next frame's first call.
void add_opaque_rect(ImDrawList* draw, const ImVec2& min, const ImVec2& max, ImU32 color);

}  // namespace ringscope::view
