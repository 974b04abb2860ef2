// Opaque, untextured geometry that the renderer may draw with a flat shader
// and no blending: the timeline's band fills and boxes cover most of the
// screen, and with a software rasteriser every blended, textured pixel and
// every extra draw command counts.
#pragma once

#include "imgui.h"

namespace ringscope::view {

// Opaque, untextured geometry (alpha 255) between begin_ and
// end_opaque_geometry may be drawn by the renderer with a flat shader and no
// blending, a software rasteriser's cheapest fill. main() installs the hook
// that switches to it; end_ then asks the backend to restore its own state
// (ImDrawCallback_ResetRenderState). Without a hook both do nothing and the
// geometry is drawn like any other.
void set_opaque_geometry_hook(ImDrawCallback begin);
void begin_opaque_geometry(ImDrawList* draw);
void end_opaque_geometry(ImDrawList* draw);
// A rectangle with its alpha forced to 255, for use between begin_ and
// end_opaque_geometry.
void add_opaque_rect(ImDrawList* draw, const ImVec2& min, const ImVec2& max, ImU32 color);

}  // namespace ringscope::view
