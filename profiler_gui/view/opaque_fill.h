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
// An opaque rectangle (alpha forced to 255), drawn in order with the rest of
// `draw`. The OpaqueRect lives until the next frame's first call.
void add_opaque_rect(ImDrawList* draw, const ImVec2& min, const ImVec2& max, ImU32 color);

}  // namespace ringscope::view
