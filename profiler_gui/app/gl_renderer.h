// The OpenGL side of ringscope-view's drawing (gl_renderer.cc): set up once
// after ImGui_ImplOpenGL3_Init, in the window and headless alike, and the
// clear each frame starts with.
#pragma once

namespace ringscope::view {

// The font atlas sampled GL_NEAREST and the pixel-layer blit of
// view/pixel_layer.h installed. Needs the GL context current.
void setup_renderer();
// The frame starts as the window background (the main window draws none).
void clear_to_background();

}  // namespace ringscope::view
