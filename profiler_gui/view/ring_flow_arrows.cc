// Ring-step flow arrows of the selected collective: from the middle of each
// send step on rank r to the middle of the matching step on its peer, drawn
// over the bands after they are painted (see panels.h).
#include <cmath>

#include "palette.h"
#include "panels.h"

namespace ringscope::view {

int draw_ring_flow_arrows(ImDrawList* draw, const TimeToScreen& map,
                          const std::vector<RingFlow>& flows, const std::vector<float>& ring_y) {
  int drawn = 0;
  const float left = map.x0, right = map.x0 + map.width;
  for (const RingFlow& f : flows) {
    if (f.from_rank_index >= ring_y.size() || f.to_rank_index >= ring_y.size()) continue;
    const float y0 = ring_y[f.from_rank_index], y1 = ring_y[f.to_rank_index];
    if (std::isnan(y0) || std::isnan(y1)) continue;
    const float x0 = map.x(f.from_start_ns + (f.from_end_ns - f.from_start_ns) / 2);
    const float x1 = map.x(f.to_start_ns + (f.to_end_ns - f.to_start_ns) / 2);
    if ((x0 < left && x1 < left) || (x0 > right && x1 > right)) continue;
    const ImVec2 a(x0, y0), b(x1, y1);
    draw->AddLine(a, b, colors::kFlow, 2.0f);
    // Arrow head at the receiving end.
    const float dx = b.x - a.x, dy = b.y - a.y;
    const float len = std::sqrt(dx * dx + dy * dy);
    if (len > 1) {
      const float ux = dx / len, uy = dy / len;
      const ImVec2 base(b.x - ux * 9, b.y - uy * 9);
      draw->AddTriangleFilled(b, ImVec2(base.x - uy * 4.5f, base.y + ux * 4.5f),
                              ImVec2(base.x + uy * 4.5f, base.y - ux * 4.5f), colors::kFlow);
    }
    draw->AddCircleFilled(a, 3, colors::kFlow);
    ++drawn;
  }
  return drawn;
}

}  // namespace ringscope::view
