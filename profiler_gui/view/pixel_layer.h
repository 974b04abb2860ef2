// A CPU-drawn layer of pixels under the timeline's text: band fills, grid,
// selection tint and every box, written straight into an RGBA image that the
// renderer hands to the GPU as one image (a blit). With a software
// rasteriser (llvmpipe on this project's 2-core machines) every triangle
// costs setup and binning: at mid zoom the ~6,000 small boxes were ~3 ms of
// a 7 ms frame as ImGui triangles; written here they are a few hundred
// thousand 32-bit stores.
//
// Coverage follows the rasteriser's rule, so the image is the one the
// triangles would have drawn: a pixel belongs to a shape when its centre
// (x + 0.5, y + 0.5) lies inside, left and top edges included.
#pragma once

#include <cstdint>
#include <vector>

#include "imgui.h"

namespace ringscope::view {

class PixelLayer {
 public:
  // Starts a frame: the layer covers the display rectangle [min, max)
  // (display coordinates, as ImGui's), `scale` framebuffer pixels per
  // display unit, every pixel `clear` (its alpha is ignored).
  void reset(ImVec2 min, ImVec2 max, ImVec2 scale, ImU32 clear);

  // Shapes drawn from now on are clipped to the display rectangle [min, max)
  // as well as to the layer (pixel centres inside); clear_clip: the layer.
  void set_clip(ImVec2 min, ImVec2 max);
  void clear_clip();

  // Shapes in display coordinates, clipped. fill_ writes the colour opaque;
  // blend_ mixes it over what is there at the colour's alpha.
  void fill_rect(ImVec2 min, ImVec2 max, ImU32 color);
  void blend_rect(ImVec2 min, ImVec2 max, ImU32 color);
  void fill_triangle(ImVec2 a, ImVec2 b, ImVec2 c, ImU32 color);
  // A one-pixel column through display x (a grid line), or a one-pixel row
  // through display y, blended.
  void blend_column(float x, float y0, float y1, ImU32 color);
  void blend_row(float y, float x0, float x1, ImU32 color);

  // The image: width() x height() pixels in ImGui's ImU32 layout (R, G, B, A
  // bytes, the GL_RGBA / GL_UNSIGNED_BYTE order), bottom row first (OpenGL's
  // order). pixel_x/y: its top-left pixel in the framebuffer, y down.
  int width() const { return width_; }
  int height() const { return height_; }
  int pixel_x() const { return x_.origin; }
  int pixel_y() const { return y_.origin; }
  const uint32_t* data() const { return pixels_.data(); }
  bool empty() const { return width_ <= 0 || height_ <= 0; }
  // The pixel at framebuffer (x, y), y down; for tests.
  uint32_t at(int x, int y) const;

  // Puts the image on the framebuffer where `draw` is rendered: a callback
  // (see set_renderer) that reads this layer then, so it must not change
  // until the frame has been rendered. Without a renderer installed the
  // layer is not shown.
  void draw(ImDrawList* draw) const;
  // main() installs the OpenGL blit once (app/gl_renderer.cc); the callback
  // finds the PixelLayer in ImDrawCmd::UserCallbackData.
  static void set_renderer(ImDrawCallback blit);

 private:
  // One axis of the layer: its first framebuffer pixel, the scale from
  // display units, and the clip as layer pixels [clip_lo, clip_hi).
  struct Axis {
    int origin = 0, clip_lo = 0, clip_hi = 0;
    float scale = 1;
  };
  // Pixels whose centres lie in display [lo, hi) along an axis, as
  // [first, end) layer pixels within its clip (empty for NaN).
  static void span(float lo, float hi, const Axis& axis, int* first, int* end);
  // The pixels of a line one display unit thick through display coordinate
  // v (its pixel, or `scale` of them), within the clip.
  static void line(float v, const Axis& axis, int* first, int* end);
  // Blends `color` at its alpha over layer pixels [x0, x1) x [y0, y1).
  void blend_pixels(int x0, int x1, int y0, int y1, ImU32 color);
  uint32_t* row(int y) { return pixels_.data() + static_cast<size_t>(height_ - 1 - y) * width_; }

  std::vector<uint32_t> pixels_;
  int width_ = 0, height_ = 0;
  Axis x_, y_;
};

}  // namespace ringscope::view
