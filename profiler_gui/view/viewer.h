// Viewer: ties the model, the view state and the panels into one window's
// UI. main() owns one and calls draw_frame() between ImGui::NewFrame() and
// ImGui::Render(), in a window or headless alike.
#pragma once

#include <memory>
#include <string>

#include "panels.h"
#include "timeline_model.h"
#include "view_state.h"
#include "viewer_options.h"

namespace ringscope::view {

class Viewer {
 public:
  // Starts loading options.traces on a worker thread.
  explicit Viewer(ViewerOptions options);

  void draw_frame();
  // Pans by `fraction` of the visible span (headless benchmarks); no-op until loaded.
  void pan_fraction(double fraction);
  // The main trace's state; kLoading while a --compare trace still loads.
  LoadState load_state() const;
  // Why the trace could not be shown (load error or a bad --select); "" if fine.
  std::string problem() const;
  const FrameLayout& layout() const { return layout_; }
  const ViewState& state() const { return state_; }

 private:
  void apply_command_line();  // --range, --select, --panel once loaded
  void handle_keys();
  void draw_toolbar();
  void draw_loading();
  void draw_error();
  void draw_bottom_panel(float height);

  ViewerOptions options_;
  TimelineModel model_;
  ViewState state_;
  StragglersTableCache stragglers_cache_;
  RingFlowCache flow_cache_;
  SearchCache search_cache_;
  BreakdownCache breakdown_cache_;
  SettingsCache settings_cache_;
  CompareCache compare_cache_;
  std::unique_ptr<TimelineModel> compare_model_;  // --compare B
  FrameLayout layout_;
  bool command_line_applied_ = false;
  std::string select_error_;
};

}  // namespace ringscope::view
