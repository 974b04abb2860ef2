// Colours and the ImGui theme of ringscope-view: one colour per event kind
// (grouped by family so a glance tells negotiation from copies from
// communication), the band and gutter shades, and the selection highlight.
#pragma once

#include <cstdint>

#include "imgui.h"

namespace ringscope::view {

namespace colors {
inline constexpr ImU32 kBackground = IM_COL32(24, 26, 31, 255);
inline constexpr ImU32 kBandEven = IM_COL32(30, 33, 39, 255);
inline constexpr ImU32 kBandOdd = IM_COL32(36, 39, 46, 255);
inline constexpr ImU32 kGutter = IM_COL32(20, 22, 26, 255);
inline constexpr ImU32 kBandHeader = IM_COL32(44, 48, 57, 255);
inline constexpr ImU32 kRowLine = IM_COL32(255, 255, 255, 14);
inline constexpr ImU32 kText = IM_COL32(222, 225, 230, 255);
inline constexpr ImU32 kTextDim = IM_COL32(140, 147, 158, 255);
inline constexpr ImU32 kGrid = IM_COL32(255, 255, 255, 22);
// The selected collective, on every rank. Used for nothing else (tests look for it).
inline constexpr ImU32 kHighlight = IM_COL32(255, 214, 10, 255);
inline constexpr ImU32 kHighlightFill = IM_COL32(255, 214, 10, 40);
// Readiness markers of the selected collective: each rank, and the last rank.
inline constexpr ImU32 kReady = IM_COL32(235, 235, 235, 255);
inline constexpr ImU32 kLate = IM_COL32(255, 64, 80, 255);
// The verdict's stuck collective: a rank waiting in it, a rank that never
// submitted it (blame.h).
inline constexpr ImU32 kStuckWait = IM_COL32(255, 40, 40, 255);
inline constexpr ImU32 kStuckMissing = IM_COL32(255, 0, 255, 255);
// Ring-step flow arrows of the selected collective. Used for nothing else.
inline constexpr ImU32 kFlow = IM_COL32(0, 240, 255, 255);
// Shift + drag range to zoom to.
inline constexpr ImU32 kRangeFill = IM_COL32(120, 170, 255, 50);
inline constexpr ImU32 kHover = IM_COL32(255, 255, 255, 200);
}  // namespace colors

ImU32 kind_color(uint16_t kind);
// A process set's colour: its tracks' labels and gutter marks (0, the
// world: the dim label colour).
ImU32 process_set_color(uint16_t id);
// Text colour readable on `fill`.
ImU32 text_color_on(ImU32 fill);
// Lowercase short label for boxes and the legend ("allreduce", "memcpy in").
const char* kind_label(uint16_t kind);
ImVec4 to_vec4(ImU32 color);

// Dark theme with ringscope's colours; rounding off for a dense tool look.
void apply_theme();

}  // namespace ringscope::view
