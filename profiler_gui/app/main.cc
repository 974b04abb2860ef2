// ringscope-view's entry point. Either a GLFW + OpenGL3 window, or with
// --screenshot a headless render (EGL surfaceless + FBO) written to a PNG.
// Both follow Dear ImGui's setup -> loop -> teardown.
#include <GLFW/glfw3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "app/gl_renderer.h"
#include "app/offscreen_gl.h"
#include "backends/imgui_impl_glfw.h"
#include "backends/imgui_impl_opengl3.h"
#include "imgui.h"
#include "input_script.h"
#include "view/palette.h"
#include "view/viewer.h"

namespace ringscope::view {
namespace {

static_assert(GLFW_KEY_F5 == 294, "viewer_files.cc's kKeyF5 is GLFW's F5");

constexpr const char* kFontPath = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

void setup_imgui() {
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;  // nothing worth persisting yet
  apply_theme();
  // DejaVu Sans when installed (fonts-dejavu-core), else ImGui's built-in font.
  // The second font labels boxes inside the timeline's rows. Glyphs are baked
  // at 1:1 and snapped to pixels (ImGui floors text positions), so the atlas
  // can be sampled without filtering (use_nearest_font_texture).
  ImFontConfig config;
  config.OversampleH = 1, config.OversampleV = 1, config.PixelSnapH = true;
  if (!std::filesystem::exists(kFontPath) ||
      !io.Fonts->AddFontFromFileTTF(kFontPath, 14.0f, &config) ||
      !io.Fonts->AddFontFromFileTTF(kFontPath, 12.0f, &config))
    io.Fonts->AddFontDefault();
  // Lines as geometry rather than from the (now unfiltered) font texture.
  ImGui::GetStyle().AntiAliasedLinesUseTex = false;
}

void write_layout(const std::string& path, const Viewer& viewer, int width, int height) {
  std::ofstream out(path);
  const FrameLayout& l = viewer.layout();
  const ImU32 bg = colors::kBackground;
  out << "image " << width << " " << height << "\n";
  out << "background " << ((bg >> IM_COL32_R_SHIFT) & 0xff) << " "
      << ((bg >> IM_COL32_G_SHIFT) & 0xff) << " " << ((bg >> IM_COL32_B_SHIFT) & 0xff) << "\n";
  out << "timeline " << l.timeline_rect.x << " " << l.timeline_rect.y << " " << l.timeline_rect.z
      << " " << l.timeline_rect.w << "\n";
  out << "panel " << (l.panel.empty() ? "none" : l.panel) << " " << l.panel_rect.x << " "
      << l.panel_rect.y << " " << l.panel_rect.z << " " << l.panel_rect.w << "\n";
  out << "flows " << l.flow_arrows << "\n";
  out << "search " << l.search_rows << "\n";
  out << "compare " << l.compare_rows << "\n";
  out << "verdict " << l.verdict_rows << " " << l.verdict_waiting << " " << l.verdict_missing
      << "\n";
  // The Tune panel (when drawn): trials, plot axes, points, heat map.
  const TuneLayout& t = l.tune;
  auto rect = [&](const ImVec4& r) { out << r.x << " " << r.y << " " << r.z << " " << r.w; };
  out << "tune_trials " << t.trials << " " << (t.fitted ? 1 : 0) << "\n";
  out << "tune_threshold_plot ";
  rect(t.threshold_plot);
  out << " " << t.score_lo << " " << t.score_hi << "\n";
  out << "tune_cycle_plot ";
  rect(t.cycle_plot);
  out << " " << t.score_lo << " " << t.score_hi << "\n";
  for (const ImVec2& p : t.threshold_points)
    out << "tune_point threshold " << p.x << " " << p.y << "\n";
  for (const ImVec2& p : t.cycle_points) out << "tune_point cycle " << p.x << " " << p.y << "\n";
  out << "tune_heatmap ";
  rect(t.heat_map);
  out << "\ntune_legend ";
  rect(t.heat_legend);
  out << "\ntune_suggestion " << t.suggestion.x << " " << t.suggestion.y << "\n";
  out << "tune_write_button ";
  rect(t.write_button);
  out << "\ntune_run_button ";
  rect(t.run_button);
  out << "\n";
  // The Open dialog (when drawn), the bookmarks panel and the visible range.
  out << "open_dialog " << l.open_dialog_entries << " " << l.open_dialog_recent << " "
      << l.open_dialog_recent_missing << " " << l.open_dialog_rect.x << " " << l.open_dialog_rect.y
      << " " << l.open_dialog_rect.z << " " << l.open_dialog_rect.w << "\n";
  for (const FrameLayout::DialogRow& row : l.open_dialog_rows)
    out << "open_dialog_row " << row.rect.x << " " << row.rect.y << " " << row.rect.z << " "
        << row.rect.w << " " << row.name << "\n";
  out << "bookmarks " << l.bookmark_rows << "\n";
  if (viewer.load_state() == LoadState::kReady) {
    const ViewState& v = viewer.state();
    out << "view " << v.view_begin_ns << " " << v.view_end_ns << "\n";
    out << "time_x " << l.time_x0 << " " << l.time_x1 << "\n";
    if (v.selected_collective)
      out << "selected " << v.selected_collective->cycle << " " << v.selected_collective->seq_index
          << "\n";
    out << "ranks " << viewer.model().ranks().size() << "\n";
  }
  for (const FrameLayout::Band& b : l.bands)
    out << "band " << b.rank << " " << b.y0 << " " << b.y1 << " " << b.header_y0 << " "
        << b.header_y1 << " " << b.label_x0 << " " << b.label_x1 << "\n";
}

// The first frame of a freshly loaded trace does one-time work: every track
// folds for the first time, and llvmpipe compiles the shader variants the
// timeline's fills use (they alone took ~6 ms). That frame is
// drawn once unseen, while the loading screen is still showing, so that no
// frame the user sees (or a benchmark counts) carries the cost: measured,
// the first visible frame went from 20-26 ms to a normal one.
class FirstFramePrimer {
 public:
  // True once per load, on the first frame that shows the loaded trace.
  bool due(const Viewer& viewer) {
    const bool ready = viewer.trace_shown();
    const bool prime = ready && !primed_;
    primed_ = ready;
    return prime;
  }

 private:
  bool primed_ = false;
};

// Sets the input of the frame about to be built from one frame of --input,
// as ImGui's GLFW backend would from the window's events.
void apply_input(const InputFrame& f, Viewer* viewer) {
  ImGuiIO& io = ImGui::GetIO();
  if (f.has_mouse) io.MousePos = ImVec2(f.mouse_x, f.mouse_y);
  if (f.button >= 0) io.MouseDown[f.button] = f.button_down;
  io.MouseWheel = f.wheel;
  if (f.key >= 0) io.KeysDown[f.key] = f.key_down;
  if (f.shift >= 0) io.KeyShift = f.shift == 1;
  if (f.ctrl >= 0) io.KeyCtrl = f.ctrl == 1;
  if (!f.dropped.empty()) viewer->open(f.dropped);  // as the window's drop callback
}

int run_headless(const ViewerOptions& options) {
  // Setup.
  std::string error;
  std::vector<InputFrame> script;
  if (!options.input_script.empty() && !load_input_script(options.input_script, &script, &error)) {
    std::fprintf(stderr, "ringscope-view: %s\n", error.c_str());
    return 2;
  }
  OffscreenGl gl;
  if (!gl.create(options.width, options.height, &error)) {
    std::fprintf(stderr, "ringscope-view: %s\n", error.c_str());
    return 3;
  }
  setup_imgui();
  ImGui_ImplOpenGL3_Init("#version 330");
  setup_renderer();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(static_cast<float>(options.width), static_cast<float>(options.height));
  io.DeltaTime = 1.0f / 60;
  io.KeyMap[ImGuiKey_Escape] = kInputKeyEscape;  // as the GLFW backend maps it
  Viewer viewer(options);

  // Loop: frames while loading, then options.frames more once it is done
  // (and, with --input, until the script has played: one of its frames per
  // frame drawn while no trace is loading).
  FirstFramePrimer primer;
  std::vector<double> frame_ms, ui_ms;
  std::vector<std::string> then_open = options.then_open;
  size_t next_input = 0;
  // A script that ends by starting a load (a drop) still waits for it.
  while (static_cast<int>(frame_ms.size()) < options.frames || next_input < script.size() ||
         (!script.empty() && viewer.load_state() == LoadState::kLoading)) {
    LoadState load = viewer.load_state();
    if (!then_open.empty() && load != LoadState::kLoading && !frame_ms.empty()) {
      viewer.open(std::move(then_open));  // --then-open: replace the trace shown
      then_open.clear();
      frame_ms.clear(), ui_ms.clear();
      load = viewer.load_state();
    }
    const bool done =  // kIdle: no trace given, the Open dialog or the welcome screen
        load == LoadState::kReady || load == LoadState::kFailed || load == LoadState::kIdle;
    auto build_frame = [&] {  // the UI part
      ImGui_ImplOpenGL3_NewFrame();
      ImGui::NewFrame();
      viewer.draw_frame();
      ImGui::Render();
    };
    auto render_frame = [] {  // the GL part, finished
      clear_to_background();
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
      glFinish();
    };
    if (primer.due(viewer)) build_frame(), render_frame();  // unseen (FirstFramePrimer)
    const auto start = std::chrono::steady_clock::now();
    if (done && options.pan != 0) viewer.pan_fraction(options.pan);
    if (done && next_input < script.size()) apply_input(script[next_input++], &viewer);
    build_frame();
    const auto ui_end = std::chrono::steady_clock::now();
    render_frame();
    const auto end = std::chrono::steady_clock::now();
    if (done) {
      frame_ms.push_back(std::chrono::duration<double, std::milli>(end - start).count());
      ui_ms.push_back(std::chrono::duration<double, std::milli>(ui_end - start).count());
    } else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::vector<uint8_t> pixels = gl.read_rgba();
  const bool written = write_png(options.screenshot_path, options.width, options.height, pixels);
  if (!options.layout_path.empty())
    write_layout(options.layout_path, viewer, options.width, options.height);
  auto quantile = [](std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
  };
  std::printf(
      "ringscope-view: %s (%s), %d frames after loading: median %.2f ms (UI %.2f ms), p99 %.2f "
      "ms (UI %.2f ms), max %.2f ms\n",
      options.screenshot_path.c_str(), gl.backend(), static_cast<int>(frame_ms.size()),
      quantile(frame_ms, 0.5), quantile(ui_ms, 0.5), quantile(frame_ms, 0.99),
      quantile(ui_ms, 0.99), *std::max_element(frame_ms.begin(), frame_ms.end()));
  const std::string problem = viewer.problem();

  // Teardown.
  ImGui_ImplOpenGL3_Shutdown();
  ImGui::DestroyContext();
  if (!written) {
    std::fprintf(stderr, "ringscope-view: could not write %s\n", options.screenshot_path.c_str());
    return 1;
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "ringscope-view: %s\n", problem.c_str());
    return 1;
  }
  return 0;
}

// What the window's GLFW callbacks reach through the user pointer: the
// viewer (dropped files) and a count of input events since the last frame.
struct WindowContext {
  Viewer* viewer = nullptr;
  int input_events = 0;
};

void note_input(GLFWwindow* window) {
  ++static_cast<WindowContext*>(glfwGetWindowUserPointer(window))->input_events;
}

// Counts every input and window event; installed before ImGui's GLFW
// callbacks, which call the ones set before them. Files dropped on the
// window replace the trace (several: per-rank files).
void watch_input(GLFWwindow* window) {
  glfwSetCursorPosCallback(window, [](GLFWwindow* w, double, double) { note_input(w); });
  glfwSetMouseButtonCallback(window, [](GLFWwindow* w, int, int, int) { note_input(w); });
  glfwSetScrollCallback(window, [](GLFWwindow* w, double, double) { note_input(w); });
  glfwSetKeyCallback(window, [](GLFWwindow* w, int, int, int, int) { note_input(w); });
  glfwSetCharCallback(window, [](GLFWwindow* w, unsigned int) { note_input(w); });
  glfwSetWindowFocusCallback(window, [](GLFWwindow* w, int) { note_input(w); });
  glfwSetCursorEnterCallback(window, [](GLFWwindow* w, int) { note_input(w); });
  glfwSetFramebufferSizeCallback(window, [](GLFWwindow* w, int, int) { note_input(w); });
  glfwSetWindowRefreshCallback(window, [](GLFWwindow* w) { note_input(w); });
  glfwSetDropCallback(window, [](GLFWwindow* w, int count, const char** paths) {
    note_input(w);
    auto* context = static_cast<WindowContext*>(glfwGetWindowUserPointer(w));
    if (context->viewer) context->viewer->open(std::vector<std::string>(paths, paths + count));
  });
}

// A mouse button or key held down (dragging, W/A/S/D panning): keep drawing.
// Not a modifier alone (io.KeysDown is indexed by GLFW key code in ImGui 1.86).
bool input_held() {
  const ImGuiIO& io = ImGui::GetIO();
  for (bool down : io.MouseDown)
    if (down) return true;
  for (int key = 0; key < IM_ARRAYSIZE(io.KeysDown); ++key)
    if (io.KeysDown[key] && (key < GLFW_KEY_LEFT_SHIFT || key > GLFW_KEY_RIGHT_SUPER)) return true;
  return false;
}

int run_window(const ViewerOptions& options) {
  // Setup.
  if (!glfwInit()) {
    std::fprintf(stderr,
                 "ringscope-view: cannot open a window (no display?); "
                 "use --screenshot for headless rendering\n");
    return 3;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  GLFWwindow* window =
      glfwCreateWindow(options.width, options.height, "ringscope-view", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "ringscope-view: no OpenGL 3.3 window\n");
    glfwTerminate();
    return 3;
  }
  glfwMakeContextCurrent(window);
  glfwSwapInterval(1);
  setup_imgui();
  WindowContext context;
  glfwSetWindowUserPointer(window, &context);
  watch_input(window);  // before ImGui's callbacks, which chain to these
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");
  setup_renderer();
  Viewer viewer(options);
  context.viewer = &viewer;

  // Loop. Frames are drawn on demand: after input, kSettleFrames of them
  // (ImGui settles hover and popups within a couple) and as long as a key or
  // button is held; otherwise the loop sleeps until input arrives or the
  // viewer has something new to show (idle_wait_seconds: loading progress, a
  // live refresh, a Tune trial). An idle window then costs about one frame a
  // second instead of a core's worth of software rendering next to the
  // training run it watches. The title follows the trace shown.
  constexpr int kSettleFrames = 3;  // ImGui tables fit their columns over three frames
  int settle = kSettleFrames;
  FirstFramePrimer primer;
  bool was_busy = false;
  long frames = 0;
  std::string title;
  while (!glfwWindowShouldClose(window)) {
    if (options.exit_after > 0 && glfwGetTime() >= options.exit_after) break;
    if (std::string now = viewer.window_title(); now != title) {
      title = std::move(now);
      glfwSetWindowTitle(window, title.c_str());
    }
    if (settle > 0) {
      glfwPollEvents();
      --settle;
    } else {
      double wait = viewer.idle_wait_seconds();
      if (options.exit_after > 0) wait = std::min(wait, options.exit_after - glfwGetTime());
      glfwWaitEventsTimeout(std::max(wait, 0.0));
    }
    // Input, a held key or button, or the end (or start) of loading, a
    // refresh or a Tune job: draw a few frames so the new state settles.
    const bool busy = viewer.busy();
    if (context.input_events > 0 || input_held() || busy != was_busy) settle = kSettleFrames;
    context.input_events = 0;
    was_busy = busy;
    ++frames;
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    for (int pass = primer.due(viewer) ? 2 : 1; pass > 0; --pass) {  // 2: one unseen first
      ImGui_ImplOpenGL3_NewFrame();
      ImGui_ImplGlfw_NewFrame();
      ImGui::NewFrame();
      viewer.draw_frame();
      ImGui::Render();
      clear_to_background();
      ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    }
    glfwSwapBuffers(window);
  }

  if (options.exit_after > 0) {
    std::printf("ringscope-view: %ld frames in %.1f s (window)\n", frames, glfwGetTime());
    std::fflush(stdout);
  }

  // Teardown.
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}

}  // namespace
}  // namespace ringscope::view

int main(int argc, char** argv) {
  using namespace ringscope::view;
  ViewerOptions options;
  std::string error;
  if (!parse_viewer_options(argc, argv, &options, &error)) {
    std::fprintf(stderr, "ringscope-view: %s\n%s", error.c_str(), viewer_usage());
    return 2;
  }
  if (options.help) {
    std::fputs(viewer_usage(), stdout);
    return 0;
  }
  return options.screenshot_path.empty() ? run_window(options) : run_headless(options);
}
