// Shared by the headless render tests (test_render*.cc): running
// ringscope-view, a screenshot loaded as RGBA pixels (stb_image) and the
// pixel queries the tests make on it.
// RINGSCOPE_VIEWER_TEST_SHOTS=DIR keeps a copy of every screenshot loaded.
#pragma once

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "autotune_test_util.h"
#include "stb_image.h"

namespace ringscope::test {

// One run of ringscope-view (RINGSCOPE_VIEW_BIN): exit code (-1: killed by a
// signal) and its output, stderr included.
struct ViewerRun {
  int exit_code = -1;
  std::string output;
};
// `env` ("VAR=value ..." or "-u VAR ...") goes to env(1) before the viewer.
inline ViewerRun run_viewer(const std::string& args, const std::string& env = "") {
  ViewerRun run;
  run.exit_code = autotune::test::run_command(
      (env.empty() ? std::string() : "env " + env + " ") + RINGSCOPE_VIEW_BIN + " " + args,
      &run.output);
  return run;
}

// Calls fn(key, rest) for every line of a --layout-out file: `key` is the
// line's first word, `rest` the stream positioned after it.
template <typename Fn>
void for_each_layout_line(const std::string& path, Fn&& fn) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream rest(line);
    std::string key;
    rest >> key;
    fn(key, rest);
  }
}

struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> rgba;

  const uint8_t* at(int x, int y) const { return &rgba[(static_cast<size_t>(y) * w + x) * 4]; }
  std::array<int, 3> rgb(int x, int y) const {
    const uint8_t* p = at(x, y);
    return {p[0], p[1], p[2]};
  }
  // The pixel at (x, y) is colour c, each channel within `tolerance`.
  bool is(int x, int y, std::array<int, 3> c, int tolerance = 3) const {
    const uint8_t* p = at(x, y);
    return std::abs(p[0] - c[0]) <= tolerance && std::abs(p[1] - c[1]) <= tolerance &&
           std::abs(p[2] - c[2]) <= tolerance;
  }
  bool near(float x, float y, std::array<int, 3> c) const {
    return is(static_cast<int>(x), static_cast<int>(y), c, 6);
  }
  // Pixels in rows [y0, y1) and columns [x0, x1) for which pred holds.
  template <typename Pred>
  int count_if(float x0, float y0, float x1, float y1, Pred pred) const {
    int n = 0;
    for (int y = std::max(0, int(y0)); y < std::min(h, int(y1)); ++y)
      for (int x = std::max(0, int(x0)); x < std::min(w, int(x1)); ++x) n += pred(at(x, y));
    return n;
  }
  // Pixels of colour c (each channel within `tolerance`) in the rectangle.
  int count(std::array<int, 3> c, float x0, float y0, float x1, float y1, int tolerance = 3) const {
    int n = 0;
    for (int y = std::max(0, int(y0)); y < std::min(h, int(y1)); ++y)
      for (int x = std::max(0, int(x0)); x < std::min(w, int(x1)); ++x) n += is(x, y, c, tolerance);
    return n;
  }
  // Bright pixels (text) in the rectangle.
  int bright(float x0, float y0, float x1, float y1) const {
    return count_if(x0, y0, x1, y1, [](const uint8_t* p) { return p[0] + p[1] + p[2] > 3 * 150; });
  }
  // Distinct colours strictly inside a rectangle {x0, y0, x1, y1}.
  template <typename Rect>
  int distinct_colours(const Rect& r) const {
    std::set<int> colours;
    for (int y = static_cast<int>(r.y0) + 1; y < static_cast<int>(r.y1) - 1; ++y)
      for (int x = static_cast<int>(r.x0) + 1; x < static_cast<int>(r.x1) - 1; ++x) {
        const std::array<int, 3> p = rgb(x, y);
        colours.insert(p[0] << 16 | p[1] << 8 | p[2]);
      }
    return static_cast<int>(colours.size());
  }
};

inline Image load_png(const std::string& path) {
  if (const char* keep = std::getenv("RINGSCOPE_VIEWER_TEST_SHOTS"))
    std::filesystem::copy_file(
        path, std::string(keep) + "/" + std::filesystem::path(path).filename().string(),
        std::filesystem::copy_options::overwrite_existing);
  Image img;
  int channels = 0;
  uint8_t* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 4);
  REQUIRE(data != nullptr);
  img.rgba.assign(data, data + static_cast<size_t>(img.w) * img.h * 4);
  stbi_image_free(data);
  return img;
}

}  // namespace ringscope::test
