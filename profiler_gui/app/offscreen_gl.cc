// Headless OpenGL for --screenshot (see offscreen_gl.h): EGL surfaceless
// first, a hidden GLFW window as the fallback, then an FBO to draw into.
#include "app/offscreen_gl.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#define GL_GLEXT_PROTOTYPES
#include <GL/gl.h>
#include <GL/glext.h>
#include <GLFW/glfw3.h>

#include <cstring>

#include <stb_image_write.h>

namespace ringscope::view {

OffscreenGl::~OffscreenGl() {
  if (framebuffer_) glDeleteFramebuffers(1, &framebuffer_);
  if (color_buffer_) glDeleteRenderbuffers(1, &color_buffer_);
  if (egl_display_) {
    auto display = static_cast<EGLDisplay>(egl_display_);
    eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
    if (egl_context_) eglDestroyContext(display, static_cast<EGLContext>(egl_context_));
    eglTerminate(display);
  }
  if (window_) {
    glfwDestroyWindow(window_);
    glfwTerminate();
  }
}

bool OffscreenGl::create(int width, int height, std::string* error) {
  width_ = width, height_ = height;
  std::string egl_error;
  if (create_egl(&egl_error)) {
    backend_ = "EGL surfaceless";
  } else if (std::string glfw_error; create_hidden_glfw(&glfw_error)) {
    backend_ = "hidden GLFW window";
  } else {
    *error = "no OpenGL context: EGL: " + egl_error + "; GLFW: " + glfw_error;
    return false;
  }
  return create_framebuffer(error);
}

bool OffscreenGl::create_egl(std::string* error) {
  auto get_platform_display = reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(
      eglGetProcAddress("eglGetPlatformDisplayEXT"));
  if (!get_platform_display) return *error = "no eglGetPlatformDisplayEXT", false;
  EGLDisplay display =
      get_platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
  if (display == EGL_NO_DISPLAY || !eglInitialize(display, nullptr, nullptr))
    return *error = "surfaceless display unavailable", false;
  egl_display_ = display;
  const EGLint config_attribs[] = {EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
  EGLConfig config = nullptr;
  EGLint configs = 0;
  eglChooseConfig(display, config_attribs, &config, 1, &configs);
  if (!eglBindAPI(EGL_OPENGL_API)) return *error = "eglBindAPI(OpenGL) failed", false;
  const EGLint context_attribs[] = {EGL_CONTEXT_MAJOR_VERSION,
                                    3,
                                    EGL_CONTEXT_MINOR_VERSION,
                                    3,
                                    EGL_CONTEXT_OPENGL_PROFILE_MASK,
                                    EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
                                    EGL_NONE};
  EGLContext context = eglCreateContext(display, configs > 0 ? config : EGL_NO_CONFIG_KHR,
                                        EGL_NO_CONTEXT, context_attribs);
  if (context == EGL_NO_CONTEXT) return *error = "no OpenGL 3.3 core context", false;
  egl_context_ = context;
  if (!eglMakeCurrent(display, EGL_NO_SURFACE, EGL_NO_SURFACE, context))
    return *error = "eglMakeCurrent without a surface failed", false;
  return true;
}

bool OffscreenGl::create_hidden_glfw(std::string* error) {
  if (!glfwInit()) return *error = "glfwInit failed (no display?)", false;
  glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  window_ = glfwCreateWindow(width_, height_, "ringscope-view", nullptr, nullptr);
  if (!window_) return *error = "glfwCreateWindow failed", false;
  glfwMakeContextCurrent(window_);
  return true;
}

bool OffscreenGl::create_framebuffer(std::string* error) {
  glGenRenderbuffers(1, &color_buffer_);
  glBindRenderbuffer(GL_RENDERBUFFER, color_buffer_);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width_, height_);
  glGenFramebuffers(1, &framebuffer_);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color_buffer_);
  if (glCheckFramebufferStatus(GL_FRAMEBUFFER) != GL_FRAMEBUFFER_COMPLETE)
    return *error = "framebuffer incomplete", false;
  glViewport(0, 0, width_, height_);
  return true;
}

std::vector<uint8_t> OffscreenGl::read_rgba() const {
  const size_t row = static_cast<size_t>(width_) * 4;
  std::vector<uint8_t> bottom_up(row * static_cast<size_t>(height_));
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
  std::vector<uint8_t> top_down(bottom_up.size());
  for (int y = 0; y < height_; ++y)
    std::memcpy(&top_down[static_cast<size_t>(y) * row],
                &bottom_up[static_cast<size_t>(height_ - 1 - y) * row], row);
  return top_down;
}

bool write_png(const std::string& path, int width, int height, const std::vector<uint8_t>& rgba) {
  return stbi_write_png(path.c_str(), width, height, 4, rgba.data(), width * 4) != 0;
}

}  // namespace ringscope::view
