// PixelLayer: the CPU-drawn image under the timeline's text. Coverage must
// be the rasteriser's (pixel centres, left/top edges in, right/bottom out),
// blends must match a blended fill, clipping must hold, and the rows must
// be stored bottom first for the OpenGL blit.
#include <catch2/catch.hpp>
#include <cmath>

#include "pixel_layer.h"

using ringscope::view::PixelLayer;

namespace {

constexpr ImU32 kClear = IM_COL32(10, 20, 30, 255);
constexpr ImU32 kRed = IM_COL32(255, 0, 0, 255);

int count(const PixelLayer& layer, ImU32 color) {
  int n = 0;
  for (int y = layer.pixel_y(); y < layer.pixel_y() + layer.height(); ++y)
    for (int x = layer.pixel_x(); x < layer.pixel_x() + layer.width(); ++x)
      n += layer.at(x, y) == color;
  return n;
}

}  // namespace

TEST_CASE("a layer covers its display rectangle, cleared, bottom row first", "[pixel_layer]") {
  PixelLayer layer;
  layer.reset(ImVec2(100, 50), ImVec2(140, 80), ImVec2(1, 1), kClear & 0x00ffffff);
  REQUIRE(layer.width() == 40);
  REQUIRE(layer.height() == 30);
  CHECK(layer.pixel_x() == 100);
  CHECK(layer.pixel_y() == 50);
  CHECK(count(layer, kClear) == 40 * 30);                   // alpha forced to 255
  layer.fill_rect(ImVec2(100, 50), ImVec2(101, 51), kRed);  // the top-left pixel
  CHECK(layer.at(100, 50) == kRed);
  CHECK(layer.data()[static_cast<size_t>(29) * 40] == kRed);  // stored last: bottom row first
  CHECK(layer.at(99, 50) == 0);                               // outside
}

TEST_CASE("rectangles cover the pixels whose centres they contain", "[pixel_layer]") {
  PixelLayer layer;
  layer.reset(ImVec2(0, 0), ImVec2(20, 10), ImVec2(1, 1), kClear);
  SECTION("fractional edges") {
    // Centres 2.5..5.5 lie in [2.4, 6.2); rows 1.5 and 2.5 in [1.0, 3.0).
    layer.fill_rect(ImVec2(2.4f, 1.0f), ImVec2(6.2f, 3.0f), kRed);
    CHECK(count(layer, kRed) == 4 * 2);
    CHECK(layer.at(2, 1) == kRed);
    CHECK(layer.at(5, 2) == kRed);
    CHECK(layer.at(6, 2) == kClear);
    CHECK(layer.at(1, 1) == kClear);
  }
  SECTION("a centre on the left edge is in, on the right edge out") {
    layer.fill_rect(ImVec2(3.5f, 0), ImVec2(5.5f, 1), kRed);
    CHECK(layer.at(3, 0) == kRed);
    CHECK(layer.at(4, 0) == kRed);
    CHECK(layer.at(5, 0) == kClear);
  }
  SECTION("narrower than a pixel between centres: nothing") {
    layer.fill_rect(ImVec2(3.6f, 0), ImVec2(4.4f, 5), kRed);
    CHECK(count(layer, kRed) == 0);
  }
  SECTION("clipped to the layer") {
    layer.fill_rect(ImVec2(-50, -50), ImVec2(50, 50), kRed);
    CHECK(count(layer, kRed) == 20 * 10);
  }
}

TEST_CASE("blends mix the colour over what is there at its alpha", "[pixel_layer]") {
  PixelLayer layer;
  layer.reset(ImVec2(0, 0), ImVec2(4, 4), ImVec2(1, 1), IM_COL32(0, 100, 200, 255));
  layer.blend_rect(ImVec2(0, 0), ImVec2(2, 4), IM_COL32(255, 0, 0, 51));  // 20 %
  // 255 * 0.2 = 51, 100 * 0.8 = 80, 200 * 0.8 = 160.
  CHECK(layer.at(0, 0) == IM_COL32(51, 80, 160, 255));
  CHECK(layer.at(2, 0) == IM_COL32(0, 100, 200, 255));
  layer.blend_column(3.7f, 0, 4, IM_COL32(255, 255, 255, 255));  // column floor(3.7) = 3
  CHECK(layer.at(3, 2) == IM_COL32(255, 255, 255, 255));
  CHECK(layer.at(2, 2) == IM_COL32(0, 100, 200, 255));
  layer.blend_row(1.2f, 0, 4, IM_COL32(0, 0, 0, 255));  // row 1, over everything
  CHECK(layer.at(0, 1) == IM_COL32(0, 0, 0, 255));
  CHECK(layer.at(3, 1) == IM_COL32(0, 0, 0, 255));
  CHECK(layer.at(0, 2) == IM_COL32(51, 80, 160, 255));
}

TEST_CASE("triangles fill the pixel centres inside them", "[pixel_layer]") {
  PixelLayer layer;
  layer.reset(ImVec2(0, 0), ImVec2(16, 8), ImVec2(1, 1), kClear);
  // The instant-event mark: 7 px wide at the top, a point 6 px down.
  layer.fill_triangle(ImVec2(4.5f - 3.5f, 0), ImVec2(4.5f + 3.5f, 0), ImVec2(4.5f, 6), kRed);
  int previous = 8;
  for (int y = 0; y < 6; ++y) {  // rows narrow towards the tip, centred on x = 4
    int row = 0;
    for (int x = 0; x < 16; ++x) row += layer.at(x, y) == kRed;
    INFO("row " << y);
    CHECK(row <= previous);
    CHECK(row >= 1);
    CHECK(layer.at(4, y) == kRed);
    previous = row;
  }
  CHECK(layer.at(4, 6) == kClear);  // below the tip
  CHECK(layer.at(0, 0) == kClear);  // outside the top edge's ends
  CHECK(layer.at(8, 0) == kClear);
}

TEST_CASE("framebuffer scale: display units become scale pixels", "[pixel_layer]") {
  PixelLayer layer;
  layer.reset(ImVec2(10, 10), ImVec2(20, 15), ImVec2(2, 2), kClear);
  CHECK(layer.width() == 20);
  CHECK(layer.height() == 10);
  CHECK(layer.pixel_x() == 20);
  layer.fill_rect(ImVec2(10, 10), ImVec2(11, 11), kRed);  // one display unit: 2 x 2 pixels
  CHECK(count(layer, kRed) == 4);
  layer.blend_column(15.2f, 10, 15, IM_COL32(0, 255, 0, 255));  // two pixels wide
  CHECK(count(layer, IM_COL32(0, 255, 0, 255)) == 2 * 10);
}

TEST_CASE("a clip rectangle bounds every shape, NaN draws nothing", "[pixel_layer]") {
  PixelLayer layer;
  layer.reset(ImVec2(0, 0), ImVec2(20, 10), ImVec2(1, 1), kClear);
  layer.set_clip(ImVec2(5, 2), ImVec2(15, 8));
  layer.fill_rect(ImVec2(-100, -100), ImVec2(100, 100), kRed);
  CHECK(count(layer, kRed) == 10 * 6);
  CHECK(layer.at(4, 5) == kClear);
  CHECK(layer.at(5, 2) == kRed);
  CHECK(layer.at(15, 5) == kClear);
  layer.blend_column(1.0f, 0, 10, IM_COL32(0, 255, 0, 255));  // left of the clip
  layer.blend_row(9.0f, 0, 20, IM_COL32(0, 255, 0, 255));     // below it
  layer.fill_triangle(ImVec2(0, 0), ImVec2(8, 0), ImVec2(0, 9), IM_COL32(0, 0, 255, 255));
  CHECK(count(layer, IM_COL32(0, 255, 0, 255)) == 0);
  CHECK(layer.at(2, 3) == kClear);  // the triangle's part outside the clip
  CHECK(layer.at(5, 2) == IM_COL32(0, 0, 255, 255));
  layer.clear_clip();
  layer.fill_rect(ImVec2(NAN, 0), ImVec2(5, 5), kRed);
  layer.fill_rect(ImVec2(0, 0), ImVec2(1e30f, 1), kRed);  // huge: clipped, no overflow
  CHECK(layer.at(0, 4) == kClear);
  CHECK(layer.at(19, 0) == kRed);
}
