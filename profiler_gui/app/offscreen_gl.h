// An OpenGL 3.3 core context without a window, rendering into a framebuffer
// object that can be read back: EGL surfaceless (Mesa; no X needed), or, if
// EGL fails, a hidden GLFW window (needs a display, e.g. Xvfb).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

struct GLFWwindow;

namespace ringscope::view {

class OffscreenGl {
 public:
  OffscreenGl() = default;
  ~OffscreenGl();
  OffscreenGl(const OffscreenGl&) = delete;
  OffscreenGl& operator=(const OffscreenGl&) = delete;

  // Makes a context current and binds a width x height RGBA framebuffer.
  bool create(int width, int height, std::string* error);
  // Pixels of the framebuffer, RGBA, top row first.
  std::vector<uint8_t> read_rgba() const;
  const char* backend() const { return backend_; }

 private:
  bool create_egl(std::string* error);
  bool create_hidden_glfw(std::string* error);
  bool create_framebuffer(std::string* error);

  int width_ = 0, height_ = 0;
  void* egl_display_ = nullptr;
  void* egl_context_ = nullptr;
  GLFWwindow* window_ = nullptr;
  unsigned framebuffer_ = 0, color_buffer_ = 0;
  const char* backend_ = "none";
};

// Writes RGBA pixels (top row first) as a PNG; false on failure.
bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba);

}  // namespace ringscope::view
