// PixelLayer (see pixel_layer.h): rectangles, triangles and grid columns
// written into an RGBA image with the rasteriser's pixel-centre rule.
#include "pixel_layer.h"

#include <algorithm>
#include <cmath>

namespace ringscope::view {
namespace {

ImDrawCallback g_renderer = nullptr;  // set once by main(), before any frame

// `color` at `alpha` over `under`, per 8-bit channel, rounded: the pixel a
// blended fill (src_alpha, one_minus_src_alpha) produces.
uint32_t mix(uint32_t color, uint32_t under, unsigned alpha) {
  uint32_t out = IM_COL32_A_MASK;
  for (unsigned shift : {IM_COL32_R_SHIFT, IM_COL32_G_SHIFT, IM_COL32_B_SHIFT}) {
    const unsigned top = (color >> shift) & 0xff, below = (under >> shift) & 0xff;
    out |= ((top * alpha + below * (255 - alpha) + 127) / 255) << shift;
  }
  return out;
}

}  // namespace

void PixelLayer::reset(ImVec2 min, ImVec2 max, ImVec2 scale, ImU32 clear) {
  x_.scale = scale.x, y_.scale = scale.y;
  x_.origin = static_cast<int>(std::lround(min.x * scale.x));
  y_.origin = static_cast<int>(std::lround(min.y * scale.y));
  width_ = std::max(0, static_cast<int>(std::lround(max.x * scale.x)) - x_.origin);
  height_ = std::max(0, static_cast<int>(std::lround(max.y * scale.y)) - y_.origin);
  pixels_.assign(static_cast<size_t>(width_) * static_cast<size_t>(height_),
                 clear | IM_COL32_A_MASK);
  clear_clip();
}

void PixelLayer::clear_clip() {
  x_.clip_lo = y_.clip_lo = 0;
  x_.clip_hi = width_, y_.clip_hi = height_;
}

void PixelLayer::set_clip(ImVec2 min, ImVec2 max) {
  clear_clip();
  int x0, x1, y0, y1;
  span(min.x, max.x, x_, &x0, &x1);
  span(min.y, max.y, y_, &y0, &y1);
  x_.clip_lo = x0, x_.clip_hi = x1, y_.clip_lo = y0, y_.clip_hi = y1;
}

void PixelLayer::span(float lo, float hi, const Axis& axis, int* first, int* end) {
  // Centre i + 0.5 in [lo, hi)  <=>  ceil(lo - 0.5) <= i < ceil(hi - 0.5),
  // with v first snapped to 1/256 pixel as a GL rasteriser's fixed-point
  // vertex positions are (llvmpipe: 8 sub-pixel bits). Clamped as floats,
  // so that huge values convert safely.
  if (std::isnan(lo) || std::isnan(hi)) {
    *first = *end = axis.clip_lo;
    return;
  }
  const auto bound = [&](float v) {
    const float snapped = std::round(v * axis.scale * 256.0f) / 256.0f;
    const float p = std::ceil(snapped - 0.5f) - static_cast<float>(axis.origin);
    return static_cast<int>(
        std::clamp(p, static_cast<float>(axis.clip_lo), static_cast<float>(axis.clip_hi)));
  };
  *first = bound(lo);
  *end = std::max(*first, bound(hi));
}

void PixelLayer::line(float v, const Axis& axis, int* first, int* end) {
  if (std::isnan(v)) {
    *first = *end = axis.clip_lo;
    return;
  }
  const float lo = std::floor(v * axis.scale) - static_cast<float>(axis.origin);
  const float width = std::max(1.0f, std::round(axis.scale));
  const auto clamp = [&](float p) {
    return static_cast<int>(
        std::clamp(p, static_cast<float>(axis.clip_lo), static_cast<float>(axis.clip_hi)));
  };
  *first = clamp(lo);
  *end = std::max(*first, clamp(lo + width));
}

void PixelLayer::fill_rect(ImVec2 min, ImVec2 max, ImU32 color) {
  int x0, x1, y0, y1;
  span(min.x, max.x, x_, &x0, &x1);
  span(min.y, max.y, y_, &y0, &y1);
  if (x0 == x1) return;
  color |= IM_COL32_A_MASK;
  for (int y = y0; y < y1; ++y) std::fill(row(y) + x0, row(y) + x1, color);
}

void PixelLayer::blend_rect(ImVec2 min, ImVec2 max, ImU32 color) {
  if (((color >> IM_COL32_A_SHIFT) & 0xff) == 255) return fill_rect(min, max, color);
  int x0, x1, y0, y1;
  span(min.x, max.x, x_, &x0, &x1);
  span(min.y, max.y, y_, &y0, &y1);
  blend_pixels(x0, x1, y0, y1, color);
}

void PixelLayer::fill_triangle(ImVec2 a, ImVec2 b, ImVec2 c, ImU32 color) {
  const ImVec2 v[3] = {a, b, c};
  int y0, y1;
  span(std::min({a.y, b.y, c.y}), std::max({a.y, b.y, c.y}), y_, &y0, &y1);
  color |= IM_COL32_A_MASK;
  for (int y = y0; y < y1; ++y) {
    // The triangle's extent along this row of pixel centres (display units).
    const float yc = (static_cast<float>(y_.origin + y) + 0.5f) / y_.scale;
    float left = INFINITY, right = -INFINITY;
    for (int e = 0; e < 3; ++e) {
      const ImVec2 p = v[e], q = v[(e + 1) % 3];
      if (p.y == q.y || yc < std::min(p.y, q.y) || yc > std::max(p.y, q.y)) continue;
      const float x = p.x + (yc - p.y) * (q.x - p.x) / (q.y - p.y);
      left = std::min(left, x), right = std::max(right, x);
    }
    if (!(left < right)) continue;
    int x0, x1;
    span(left, right, x_, &x0, &x1);
    std::fill(row(y) + x0, row(y) + x1, color);
  }
}

void PixelLayer::blend_column(float x, float y0, float y1, ImU32 color) {
  int c0, c1, r0, r1;
  line(x, x_, &c0, &c1);
  span(y0, y1, y_, &r0, &r1);
  blend_pixels(c0, c1, r0, r1, color);
}

void PixelLayer::blend_row(float y, float x0, float x1, ImU32 color) {
  int c0, c1, r0, r1;
  span(x0, x1, x_, &c0, &c1);
  line(y, y_, &r0, &r1);
  blend_pixels(c0, c1, r0, r1, color);
}

void PixelLayer::blend_pixels(int x0, int x1, int y0, int y1, ImU32 color) {
  const unsigned alpha = (color >> IM_COL32_A_SHIFT) & 0xff;
  if (alpha == 0) return;
  for (int y = y0; y < y1; ++y)
    for (uint32_t *p = row(y) + x0, *e = row(y) + x1; p != e; ++p) *p = mix(color, *p, alpha);
}

void PixelLayer::set_renderer(ImDrawCallback blit) { g_renderer = blit; }

void PixelLayer::draw(ImDrawList* draw) const {
  if (g_renderer && !empty()) draw->AddCallback(g_renderer, const_cast<PixelLayer*>(this));
}

uint32_t PixelLayer::at(int x, int y) const {
  x -= x_.origin, y -= y_.origin;
  if (x < 0 || y < 0 || x >= width_ || y >= height_) return 0;
  return pixels_[static_cast<size_t>(height_ - 1 - y) * static_cast<size_t>(width_) + x];
}

}  // namespace ringscope::view
