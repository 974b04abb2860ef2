// Viewer: ties the model, the view state and the panels into one window's
// UI. main() owns one and calls draw_frame() between ImGui::NewFrame() and
// ImGui::Render(), in a window or headless alike.
#pragma once

#include <memory>
#include <string>

#include "file_ui.h"
#include "panels.h"
#include "timeline_model.h"
#include "trace_watch.h"
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
  // The main trace is loaded and drawn (whatever --compare or Tune are doing).
  bool trace_shown() const { return model_.state() == LoadState::kReady; }
  // Why the trace could not be shown (load error or a bad --select); "" if fine.
  std::string problem() const;
  const FrameLayout& layout() const { return layout_; }
  // "ringscope-view - <first input>" of the trace shown (changes with open()).
  std::string window_title() const {
    return "ringscope-view" +
           (options_.traces.empty() ? std::string() : " - " + options_.traces.front());
  }
  const ViewState& state() const { return state_; }
  const TimelineModel& model() const { return model_; }
  // Something changes without input: loading, a refresh, a Tune trial or fit.
  bool busy() const;
  // How long a window may sleep waiting for input before it draws the next
  // frame: short while something changes on its own (loading, a refresh, a
  // Tune trial or fit), until the next live-refresh poll, else a heartbeat.
  double idle_wait_seconds() const;

  // File handling (viewer_files.cc). open() replaces the trace and loads
  // `inputs` on the worker thread (Open dialog, recent files, drag and drop).
  void open(std::vector<std::string> inputs);
  // Reloads the trace in the background (F5), keeping the view and selection.
  void refresh();

 private:
  void apply_command_line();  // --range, --select, --panel once loaded
  void handle_keys();
  void draw_toolbar();
  void draw_loading();
  void draw_error();
  void draw_bottom_panel(float height);
  std::vector<std::vector<std::string>> tune_inputs() const;
  // viewer_files.cc: menu bar, welcome screen, recent files, bookmarks, refresh.
  void init_files();  // constructor: recent list, --open-dialog, --auto-refresh
  void draw_menu_bar();
  void draw_welcome();
  void draw_file_popups();
  void handle_file_keys();
  void on_loaded();  // once per load: recent list, bookmarks, file watch
  void poll_refresh();
  void reset_caches();
  void open_recent(const RecentEntry& entry);

  ViewerOptions options_;
  TimelineModel model_;
  ViewState state_;
  StragglersTableCache stragglers_cache_;
  RingFlowCache flow_cache_;
  PixelLayer timeline_pixels_;  // drawn each frame, read when the frame renders
  SearchCache search_cache_;
  BreakdownCache breakdown_cache_;
  SettingsCache settings_cache_;
  CompareCache compare_cache_;
  std::unique_ptr<TimelineModel> compare_model_;  // --compare B
  TuneSession tune_session_;                      // the Tune panel's trials and model
  TunePanelState tune_state_;
  FrameLayout layout_;
  bool command_line_applied_ = false;
  std::string select_error_;
  // Files: the recent list, the Open dialog, this trace's bookmarks, the
  // live refresh's watch (see viewer_files.cc).
  RecentFiles recent_;
  RecentExistenceCache recent_exists_;  // which recent entries are missing (greyed)
  bool recent_menu_open_ = false;       // File > Open recent was open last frame
  bool write_recent_ = true;            // headless runs only with RINGSCOPE_VIEW_CONFIG_DIR
  OpenDialogState open_dialog_;
  BookmarksUi bookmarks_;
  TraceWatch watch_;
  bool auto_refresh_ = false;
  double next_poll_s_ = 0;
  std::optional<Bookmark> refresh_anchor_;  // view and selection kept across a refresh
  bool loaded_handled_ = false;
  std::string notice_;  // shown in the menu bar: a missing recent file, a failed refresh
};

}  // namespace ringscope::view
