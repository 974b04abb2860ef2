// The OpenGL side of ringscope-view's drawing, shared by the window and the
// headless renderer: what makes ImGui's frames cheap for a software
// rasteriser (llvmpipe) - the font atlas sampled without filtering, the
// timeline's fills and boxes as one CPU-drawn image (view/pixel_layer.h)
// blitted into place - and the frame's clear.
#define GL_GLEXT_PROTOTYPES  // framebuffer objects, for the pixel-layer blit
#include <GL/gl.h>
#include <GL/glext.h>

#include "app/gl_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "backends/imgui_impl_opengl3.h"
#include "imgui.h"
#include "view/palette.h"
#include "view/pixel_layer.h"

namespace ringscope::view {
namespace {

// After ImGui_ImplOpenGL3_Init: the font atlas sampled GL_NEAREST. Every pixel
// ImGui draws samples it (solid shapes use its white texel); bilinear filtering is
// the most expensive part of that in a software rasteriser (llvmpipe).
void use_nearest_font_texture() {
  ImGui_ImplOpenGL3_CreateDeviceObjects();
  glBindTexture(GL_TEXTURE_2D,
                static_cast<GLuint>(reinterpret_cast<intptr_t>(ImGui::GetIO().Fonts->TexID)));
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
}

// Puts a PixelLayer (view/pixel_layer.h) on the framebuffer being drawn:
// the image goes into a texture attached to a read framebuffer, then one
// unscaled glBlitFramebuffer copies it into place (llvmpipe does that as a
// plain copy), clipped to the draw command's clip rectangle. Runs as an
// ImDrawList callback inside ImGui's renderer, so it leaves the scissor test
// on and the bindings as it found them.
class PixelLayerBlitter {
 public:
  // `clip`: the draw command's clip rectangle (display coordinates).
  void blit(const PixelLayer& layer, const ImVec4& clip) {
    if (layer.empty() || !allocate(layer.width(), layer.height())) return;
    // Framebuffer rows count from the bottom; the layer's are bottom first.
    // The height and the scissor as ImGui's OpenGL3 backend computes them.
    const ImDrawData* data = ImGui::GetDrawData();
    const ImVec2 scale = data->FramebufferScale, origin = data->DisplayPos;
    const int fb_height = static_cast<int>(data->DisplaySize.y * scale.y);
    const int x0 = layer.pixel_x() - static_cast<int>(std::lround(origin.x * scale.x));
    const int top = layer.pixel_y() - static_cast<int>(std::lround(origin.y * scale.y));
    const int y0 = fb_height - (top + layer.height());
    const int clip_x0 = static_cast<int>((clip.x - origin.x) * scale.x);
    const int clip_y0 = static_cast<int>((clip.y - origin.y) * scale.y);
    const int clip_x1 = static_cast<int>((clip.z - origin.x) * scale.x);
    const int clip_y1 = static_cast<int>((clip.w - origin.y) * scale.y);
    if (clip_x1 <= clip_x0 || clip_y1 <= clip_y0) return;
    // Inside the clip (as drawn), the scissor is switched off: llvmpipe then
    // blits as a plain copy; else the scissor clips it.
    const bool inside = x0 >= clip_x0 && top >= clip_y0 && x0 + layer.width() <= clip_x1 &&
                        top + layer.height() <= clip_y1;

    GLint texture = 0, read_framebuffer = 0, unpack_row_length = 0, unpack_alignment = 4;
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &texture);
    glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &read_framebuffer);
    glGetIntegerv(GL_UNPACK_ROW_LENGTH, &unpack_row_length);
    glGetIntegerv(GL_UNPACK_ALIGNMENT, &unpack_alignment);
    glPixelStorei(GL_UNPACK_ROW_LENGTH, 0);
    glPixelStorei(GL_UNPACK_ALIGNMENT, 4);
    glBindTexture(GL_TEXTURE_2D, texture_);
    glTexSubImage2D(GL_TEXTURE_2D, 0, 0, 0, layer.width(), layer.height(), GL_RGBA,
                    GL_UNSIGNED_BYTE, layer.data());
    glBindFramebuffer(GL_READ_FRAMEBUFFER, framebuffer_);
    if (inside)
      glDisable(GL_SCISSOR_TEST);
    else
      glScissor(clip_x0, fb_height - clip_y1, clip_x1 - clip_x0, clip_y1 - clip_y0);
    glBlitFramebuffer(0, 0, layer.width(), layer.height(), x0, y0, x0 + layer.width(),
                      y0 + layer.height(), GL_COLOR_BUFFER_BIT, GL_NEAREST);
    glEnable(GL_SCISSOR_TEST);  // ImGui's renderer keeps it on; its next command sets the box
    glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(read_framebuffer));
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(texture));
    glPixelStorei(GL_UNPACK_ROW_LENGTH, unpack_row_length);
    glPixelStorei(GL_UNPACK_ALIGNMENT, unpack_alignment);
  }

 private:
  // A texture of exactly w x h behind the read framebuffer; false (said once)
  // if the framebuffer cannot be completed.
  bool allocate(int w, int h) {
    if (w == width_ && h == height_) return framebuffer_ != 0;
    width_ = w, height_ = h;
    GLint texture = 0, read_framebuffer = 0;
    glGetIntegerv(GL_TEXTURE_BINDING_2D, &texture);
    glGetIntegerv(GL_READ_FRAMEBUFFER_BINDING, &read_framebuffer);
    if (!texture_) glGenTextures(1, &texture_);
    glBindTexture(GL_TEXTURE_2D, texture_);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
    glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
    glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, w, h, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
    if (!framebuffer_) glGenFramebuffers(1, &framebuffer_);
    glBindFramebuffer(GL_READ_FRAMEBUFFER, framebuffer_);
    glFramebufferTexture2D(GL_READ_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, texture_, 0);
    const bool complete = glCheckFramebufferStatus(GL_READ_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
    glBindFramebuffer(GL_READ_FRAMEBUFFER, static_cast<GLuint>(read_framebuffer));
    glBindTexture(GL_TEXTURE_2D, static_cast<GLuint>(texture));
    if (!complete) {
      std::fprintf(stderr, "ringscope-view: cannot draw the timeline (framebuffer incomplete)\n");
      glDeleteFramebuffers(1, &framebuffer_);
      framebuffer_ = 0;
    }
    return complete;
  }

  GLuint texture_ = 0, framebuffer_ = 0;
  int width_ = -1, height_ = -1;
};

void gl_blit_pixel_layer(const ImDrawList*, const ImDrawCmd* cmd) {
  static PixelLayerBlitter blitter;  // one GL context per process
  blitter.blit(*static_cast<const PixelLayer*>(cmd->UserCallbackData), cmd->ClipRect);
}

}  // namespace

void setup_renderer() {
  use_nearest_font_texture();
  PixelLayer::set_renderer(gl_blit_pixel_layer);
}

// The frame starts as the window background (the main window draws none).
void clear_to_background() {
  const ImU32 bg = colors::kBackground;
  glClearColor(static_cast<float>((bg >> IM_COL32_R_SHIFT) & 0xff) / 255.0f,
               static_cast<float>((bg >> IM_COL32_G_SHIFT) & 0xff) / 255.0f,
               static_cast<float>((bg >> IM_COL32_B_SHIFT) & 0xff) / 255.0f, 1.0f);
  glClear(GL_COLOR_BUFFER_BIT);
}

}  // namespace ringscope::view
