// The OpenGL side of ringscope-view's drawing, shared by the window and the
// headless renderer: what makes ImGui's frames cheap for a software
// rasteriser (llvmpipe) - the font atlas sampled without filtering, the
// timeline's fills and boxes with a flat shader and no blending (the hook of
// view/opaque_fill.h) - and the frame's clear.
#define GL_GLEXT_PROTOTYPES  // shader objects, for the opaque-geometry hook
#include <GL/gl.h>
#include <GL/glext.h>

#include "app/gl_renderer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "backends/imgui_impl_opengl3.h"
#include "imgui.h"
#include "view/opaque_fill.h"
#include "view/palette.h"

namespace ringscope::view {
namespace {

// After ImGui_ImplOpenGL3_Init: the font atlas sampled GL_NEAREST. Every pixel
// ImGui draws samples it (boxes use its white texel); bilinear filtering is
// the most expensive part of that in a software rasteriser (llvmpipe).
void use_nearest_font_texture() {
  ImGui_ImplOpenGL3_CreateDeviceObjects();
  glBindTexture(GL_TEXTURE_2D,
                static_cast<GLuint>(reinterpret_cast<intptr_t>(ImGui::GetIO().Fonts->TexID)));
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
  glTexParameteri(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
}

// The opaque-geometry hook (opaque_fill.h): a flat shader, no texture, no
// blending, for the timeline's boxes, which are opaque and untextured. It
// runs inside ImGui's OpenGL3 renderer, whose program is current: ours binds
// the same attribute locations (the vertex array is ImGui's) and copies its
// projection; ImDrawCallback_ResetRenderState switches back. If the program
// cannot be built, ImGui's stays (same pixels, dearer to fill).
class FlatGeometryProgram {
 public:
  void use() {
    GLint imgui = 0;
    glGetIntegerv(GL_CURRENT_PROGRAM, &imgui);
    if (imgui == 0) return;
    if (!tried_) build(static_cast<GLuint>(imgui)), tried_ = true;
    if (!program_) return;
    GLfloat projection[16];
    glGetUniformfv(static_cast<GLuint>(imgui),
                   glGetUniformLocation(static_cast<GLuint>(imgui), "ProjMtx"), projection);
    glUseProgram(program_);
    glUniformMatrix4fv(projection_, 1, GL_FALSE, projection);
    glDisable(GL_BLEND);
  }

 private:
  void build(GLuint imgui) {
    const GLint position = glGetAttribLocation(imgui, "Position");
    const GLint color = glGetAttribLocation(imgui, "Color");
    if (position < 0 || color < 0) return;
    const char* vertex =
        "#version 330 core\n"
        "uniform mat4 ProjMtx;\n"
        "in vec2 Position;\n"
        "in vec4 Color;\n"
        "out vec4 Frag_Color;\n"
        "void main() { Frag_Color = Color; gl_Position = ProjMtx * vec4(Position, 0, 1); }\n";
    const char* fragment =
        "#version 330 core\n"
        "in vec4 Frag_Color;\n"
        "out vec4 Out_Color;\n"
        "void main() { Out_Color = Frag_Color; }\n";
    const GLuint vs = compile(GL_VERTEX_SHADER, vertex), fs = compile(GL_FRAGMENT_SHADER, fragment);
    GLuint program = 0;
    GLint linked = 0;
    if (vs && fs) {
      program = glCreateProgram();
      glAttachShader(program, vs);
      glAttachShader(program, fs);
      glBindAttribLocation(program, static_cast<GLuint>(position), "Position");
      glBindAttribLocation(program, static_cast<GLuint>(color), "Color");
      glLinkProgram(program);
      glGetProgramiv(program, GL_LINK_STATUS, &linked);
    }
    if (vs) glDeleteShader(vs);
    if (fs) glDeleteShader(fs);
    if (!linked) {
      char log[512] = "";
      if (program) glGetProgramInfoLog(program, sizeof log, nullptr, log);
      std::fprintf(stderr, "ringscope-view: flat shader unavailable (%s); boxes use ImGui's\n",
                   vs && fs ? log : "compile failed");
      if (program) glDeleteProgram(program);
      return;
    }
    program_ = program;
    projection_ = glGetUniformLocation(program, "ProjMtx");
  }
  // The shader, or 0 (deleted) if it did not compile.
  static GLuint compile(GLenum type, const char* source) {
    const GLuint shader = glCreateShader(type);
    glShaderSource(shader, 1, &source, nullptr);
    glCompileShader(shader);
    GLint ok = 0;
    glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    if (ok) return shader;
    glDeleteShader(shader);
    return 0;
  }

  bool tried_ = false;
  GLuint program_ = 0;
  GLint projection_ = -1;
};

FlatGeometryProgram& flat_geometry_program() {
  static FlatGeometryProgram program;  // one GL context per process
  return program;
}

void gl_begin_opaque_geometry(const ImDrawList*, const ImDrawCmd*) {
  flat_geometry_program().use();
}

}  // namespace

void setup_renderer() {
  use_nearest_font_texture();
  set_opaque_geometry_hook(gl_begin_opaque_geometry);
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
