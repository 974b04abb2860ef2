// The timeline's time axis: 1-2-5 ticks at least ~110 px apart, labels in the
// unit that suits the zoom (ns, µs, ms, s) relative to the trace's first
// event, minor ticks in between, and matching grid lines.
#include <cmath>

#include "palette.h"
#include "panels.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr float kMinLabelSpacingPx = 110;

// First multiple of step at or after t (handles negative t).
int64_t first_tick(int64_t t, int64_t step) {
  int64_t q = t / step;
  if (q * step < t) ++q;
  return q * step;
}

}  // namespace

void draw_time_axis(ImDrawList* draw, const TimeToScreen& map, float y, float h,
                    int64_t origin_ns) {
  draw->AddRectFilled(ImVec2(map.x0, y), ImVec2(map.x0 + map.width, y + h), colors::kGutter);
  const TickStep tick = choose_tick_step(1.0 / map.px_per_ns(), kMinLabelSpacingPx);
  const int64_t minor = tick.step_ns % 5 == 0 ? tick.step_ns / 5 : tick.step_ns / 2;
  const int64_t rel_begin = map.begin_ns - origin_ns, rel_end = map.end_ns - origin_ns;
  if (minor > 0 && map.px_per_ns() * static_cast<double>(minor) >= 8)
    for (int64_t t = first_tick(rel_begin, minor); t <= rel_end; t += minor) {
      const float x = std::floor(map.x(t + origin_ns)) + 0.5f;
      draw->AddLine(ImVec2(x, y + h - 4), ImVec2(x, y + h), colors::kTextDim);
    }
  for (int64_t t = first_tick(rel_begin, tick.step_ns); t <= rel_end; t += tick.step_ns) {
    const float x = std::floor(map.x(t + origin_ns)) + 0.5f;
    draw->AddLine(ImVec2(x, y + h - 9), ImVec2(x, y + h), colors::kText);
    const std::string label = format_tick(t, tick);
    draw->AddText(ImVec2(x + 4, y + 2), colors::kText, label.c_str());
  }
  draw->AddLine(ImVec2(map.x0, y + h - 0.5f), ImVec2(map.x0 + map.width, y + h - 0.5f),
                colors::kTextDim);
}

void draw_time_grid(PixelLayer* pixels, const TimeToScreen& map, float y0, float y1,
                    int64_t origin_ns) {
  const TickStep tick = choose_tick_step(1.0 / map.px_per_ns(), kMinLabelSpacingPx);
  const int64_t rel_begin = map.begin_ns - origin_ns, rel_end = map.end_ns - origin_ns;
  for (int64_t t = first_tick(rel_begin, tick.step_ns); t <= rel_end; t += tick.step_ns) {
    pixels->blend_column(map.x(t + origin_ns), y0, y1, colors::kGrid);
  }
}

}  // namespace ringscope::view
