// Viewer: the window's layout (toolbar, legend, timeline, splitter, bottom
// panel tabs), loading and error screens, keyboard controls, and applying
// the command line's --range / --select / --panel once the trace is loaded.
#include "viewer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "collective_search.h"
#include "palette.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr float kSplitterHeight = 6;

BottomPanel panel_from_name(const std::string& name) {
  if (name == "verdict") return BottomPanel::kVerdict;
  if (name == "statistics") return BottomPanel::kStatistics;
  if (name == "run-info") return BottomPanel::kRunInfo;
  if (name == "search") return BottomPanel::kSearch;
  if (name == "breakdown") return BottomPanel::kBreakdown;
  if (name == "settings") return BottomPanel::kSettings;
  if (name == "compare") return BottomPanel::kCompare;
  if (name == "tune") return BottomPanel::kTune;
  if (name == "bookmarks") return BottomPanel::kBookmarks;
  return BottomPanel::kStragglers;
}

}  // namespace

Viewer::Viewer(ViewerOptions options) : options_(std::move(options)) {
  state_.panel = panel_from_name(options_.panel);
  state_.hidden_process_sets = options_.hide_process_sets;
  std::snprintf(state_.tensor_search, sizeof(state_.tensor_search), "%s", options_.search.c_str());
  if (!options_.traces.empty()) model_.start_loading(options_.traces);  // none: the Open dialog
  init_files();
  // {bin} in the Tune panel's command: the directory holding ringscope-view.
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) tune_session_.set_bin_directory(self.parent_path().string());
  if (!options_.tune_trials.empty() && std::filesystem::is_directory(options_.tune_trials.front()))
    std::snprintf(tune_state_.trial_dir, sizeof(tune_state_.trial_dir), "%s",
                  options_.tune_trials.front().c_str());
  if (state_.panel == BottomPanel::kTune)  // its plots need room
    state_.bottom_panel_height = static_cast<float>(options_.height) * 0.62f;
  if (!options_.compare.empty()) {
    compare_model_ = std::make_unique<TimelineModel>();
    compare_model_->start_loading({options_.compare});
  }
}

LoadState Viewer::load_state() const {
  const LoadState main = model_.state();
  if (main == LoadState::kReady && compare_model_ && compare_model_->state() == LoadState::kLoading)
    return LoadState::kLoading;
  // The Tune panel still scoring its traces or running a trial (headless
  // waits for it, and --input scripts for the trial they started).
  const TrialRunState trial = tune_session_.trial_run().state;
  if (main == LoadState::kReady && (tune_session_.busy() || trial == TrialRunState::kRunning ||
                                    trial == TrialRunState::kScoring))
    return LoadState::kLoading;
  // The Breakdown panel's worker (headless shows its bars, not "computing").
  if (main == LoadState::kReady && breakdown_cache_.computing.valid()) return LoadState::kLoading;
  return main;
}

bool Viewer::busy() const {
  return load_state() == LoadState::kLoading || model_.refresh_state() != RefreshState::kNone ||
         breakdown_cache_.computing.valid() || tune_session_.busy() ||
         tune_session_.process().running();
}

double Viewer::idle_wait_seconds() const {
  constexpr double kProgress = 0.1, kHeartbeat = 1.0;
  if (busy()) return kProgress;
  // Live refresh polls only a loaded trace (poll_refresh moves next_poll_s_).
  if (auto_refresh_ && model_.state() == LoadState::kReady)
    return std::clamp(next_poll_s_ - ImGui::GetTime(), 0.0, kHeartbeat);
  return kHeartbeat;
}

std::string Viewer::problem() const {
  if (model_.state() == LoadState::kFailed) return model_.error().to_string();
  if (compare_model_ && compare_model_->state() == LoadState::kFailed)
    return "--compare " + options_.compare + ": " + compare_model_->error().to_string();
  return select_error_;
}

std::vector<std::vector<std::string>> Viewer::tune_inputs() const {
  // The loaded trace is a trial; so is every --tune-trials input.
  std::vector<std::vector<std::string>> inputs{options_.traces};
  for (const std::string& t : options_.tune_trials) inputs.push_back({t});
  return inputs;
}

void Viewer::apply_command_line() {
  if (command_line_applied_) return;
  command_line_applied_ = true;
  fit_all(model_, state_);
  // A job that hung, failed, was killed or slowed opens on its verdict.
  const auto& verdict = model_.trace().verdict;
  if (options_.panel.empty() && verdict && verdict->problem()) {
    state_.panel = BottomPanel::kVerdict;
    state_.panel_needs_focus = true;
  }
  if (options_.range) {
    state_.view_begin_ns = model_.trace().begin_ns + options_.range->first;
    state_.view_end_ns = model_.trace().begin_ns + options_.range->second;
  }
  if (!options_.select.empty()) {
    const auto key = find_collective(model_, options_.select, state_.view_begin_ns);
    if (key && options_.range)
      state_.selected_collective = key;
    else if (key)
      focus_collective(model_, state_, *key);  // no range given: bring it into view
    else
      select_error_ = "--select: no collective with tensor or id '" + options_.select + "'";
  }
}

void Viewer::pan_fraction(double fraction) {
  if (model_.state() != LoadState::kReady || !command_line_applied_) return;
  const double span = static_cast<double>(state_.view_end_ns - state_.view_begin_ns);
  pan_by(model_, state_, static_cast<int64_t>(span * fraction));
}

void Viewer::handle_keys() {
  ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) return;
  const int64_t span = state_.view_end_ns - state_.view_begin_ns;
  const int64_t center = state_.view_begin_ns + span / 2;
  // At most a 30 fps step: the first frame after the window slept (it draws
  // on demand) has a DeltaTime of up to a second.
  const double dt = std::min(io.DeltaTime, 1.0f / 30.0f);
  if (ImGui::IsKeyDown('W')) zoom_at(model_, state_, center, std::exp(-3.0 * dt));
  if (ImGui::IsKeyDown('S')) zoom_at(model_, state_, center, std::exp(3.0 * dt));
  if (ImGui::IsKeyDown('A')) pan_by(model_, state_, -static_cast<int64_t>(span * 1.2 * dt));
  if (ImGui::IsKeyDown('D')) pan_by(model_, state_, static_cast<int64_t>(span * 1.2 * dt));
  if (ImGui::IsKeyPressed('F', false)) fit_all(model_, state_);
  if (ImGui::IsKeyPressed('Z', false)) fit_selection(model_, state_);
  if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false)) {
    state_.selected_event.reset();
    state_.selected_collective.reset();
  }
}

void Viewer::draw_loading() {
  const LoadProgress p = model_.progress();
  const ImVec2 size = ImGui::GetContentRegionAvail();
  ImGui::SetCursorPos(ImVec2(size.x * 0.25f, size.y * 0.4f));
  ImGui::BeginGroup();
  ImGui::Text("Loading %s", options_.traces.front().c_str());
  ImGui::ProgressBar(static_cast<float>(p.fraction), ImVec2(size.x * 0.5f, 0));
  ImGui::TextDisabled("%s, %s events", p.phase.c_str(), format_count(p.events_loaded).c_str());
  ImGui::EndGroup();
}

void Viewer::draw_error() {
  const ImVec2 size = ImGui::GetContentRegionAvail();
  ImGui::SetCursorPos(ImVec2(40, size.y * 0.3f));
  const ImVec2 top = ImGui::GetCursorScreenPos();
  ImGui::BeginGroup();
  ImGui::Indent(16);
  ImGui::TextColored(to_vec4(colors::kLate), "Could not open the trace");
  ImGui::Spacing();
  ImGui::PushTextWrapPos(size.x - 40);
  ImGui::TextUnformatted(model_.error().to_string().c_str());
  ImGui::PopTextWrapPos();
  ImGui::Spacing();
  for (const std::string& f : options_.traces) ImGui::TextDisabled("input: %s", f.c_str());
  ImGui::Unindent(16);
  ImGui::EndGroup();
  // A red accent bar beside the message.
  ImGui::GetWindowDrawList()->AddRectFilled(top, ImVec2(top.x + 4, ImGui::GetItemRectMax().y),
                                            colors::kLate);
}

void Viewer::draw_toolbar() {
  const LoadedTrace& trace = model_.trace();
  ImGui::TextUnformatted("ringscope-view");
  ImGui::SameLine();
  ImGui::TextDisabled("%s  |  %zu ranks  |  %s events  |  %s", options_.traces.front().c_str(),
                      trace.ranks.size(), format_count(trace.event_count).c_str(),
                      format_duration(trace.end_ns - trace.begin_ns).c_str());
  // A trace that ends before the run did says so where the eye starts.
  if (const std::string stop = trace.reader.meta_value("stopped_by"); !stop.empty()) {
    ImGui::SameLine();
    ImGui::TextColored(to_vec4(colors::kLate), "|  tracing stopped early");
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", stop.c_str());
  }
  const float right = ImGui::GetWindowContentRegionMax().x;
  ImGui::SameLine(right - 420);
  ImGui::SetNextItemWidth(240);
  ImGui::InputTextWithHint("##search", "filter tensors / kinds", state_.search_text,
                           sizeof(state_.search_text));
  ImGui::SameLine();
  if (ImGui::Button("Fit (F)")) fit_all(model_, state_);
  ImGui::SameLine();
  ImGui::Checkbox("legend", &state_.show_legend);
  ImGui::SameLine();
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered())
    ImGui::SetTooltip(
        "wheel or W/S: zoom at the cursor / centre\n"
        "drag (left or right button) or A/D: pan\n"
        "shift+drag: zoom to a range   Z: fit the selection\n"
        "shift+wheel: scroll ranks   F: fit all   Esc: clear selection\n"
        "click an event: select it and highlight its collective on every rank\n"
        "click a rank's name: collapse or expand it");
}

void Viewer::draw_bottom_panel(float height) {
  const ImVec2 p0 = ImGui::GetCursorScreenPos();
  layout_.panel_rect = ImVec4(p0.x, p0.y, p0.x + ImGui::GetContentRegionAvail().x, p0.y + height);
  ImGui::BeginChild("bottom", ImVec2(0, height));
  if (ImGui::BeginTabBar("panels")) {
    struct Tab {
      BottomPanel panel;
      const char* title;
      const char* name;
    };
    for (const Tab& tab : {Tab{BottomPanel::kVerdict, "Verdict", "verdict"},
                           Tab{BottomPanel::kStragglers, "Stragglers", "stragglers"},
                           Tab{BottomPanel::kStatistics, "Statistics", "statistics"},
                           Tab{BottomPanel::kSearch, "Search", "search"},
                           Tab{BottomPanel::kBreakdown, "Breakdown", "breakdown"},
                           Tab{BottomPanel::kSettings, "Settings", "settings"},
                           Tab{BottomPanel::kCompare, "Compare", "compare"},
                           Tab{BottomPanel::kRunInfo, "Run info", "run-info"},
                           Tab{BottomPanel::kTune, "Tune", "tune"},
                           Tab{BottomPanel::kBookmarks, "Bookmarks", "bookmarks"}}) {
      const ImGuiTabItemFlags flags =
          state_.panel_needs_focus && state_.panel == tab.panel ? ImGuiTabItemFlags_SetSelected : 0;
      if (!ImGui::BeginTabItem(tab.title, nullptr, flags)) continue;
      if (!state_.panel_needs_focus) state_.panel = tab.panel;
      layout_.panel = tab.name;
      if (tab.panel == BottomPanel::kVerdict)
        draw_verdict_panel(model_, &layout_);
      else if (tab.panel == BottomPanel::kStragglers)
        draw_stragglers_panel(model_, state_, &stragglers_cache_);
      else if (tab.panel == BottomPanel::kStatistics)
        draw_statistics_panel(model_, state_);
      else if (tab.panel == BottomPanel::kSearch)
        draw_search_panel(model_, state_, &search_cache_, &layout_);
      else if (tab.panel == BottomPanel::kBreakdown)
        draw_breakdown_panel(model_, &breakdown_cache_);
      else if (tab.panel == BottomPanel::kCompare)
        draw_compare_panel(model_, compare_model_.get(), options_.compare, &compare_cache_,
                           &layout_);
      else if (tab.panel == BottomPanel::kSettings)
        draw_settings_panel(model_, &settings_cache_);
      else if (tab.panel == BottomPanel::kTune)
        draw_tune_panel(tune_session_, tune_inputs(), tune_state_, &layout_.tune);
      else if (tab.panel == BottomPanel::kBookmarks)
        draw_bookmarks_panel(model_, state_, bookmarks_, &layout_);
      else
        draw_run_info_panel(model_);
      ImGui::EndTabItem();
    }
    state_.panel_needs_focus = false;
    ImGui::EndTabBar();
  }
  ImGui::EndChild();
}

void Viewer::draw_frame() {
  const ImGuiIO& io = ImGui::GetIO();
  layout_ = FrameLayout();
  // Every frame, whichever tab is open: a running trial's output keeps flowing.
  tune_session_.poll();
  breakdown_cache_.poll();
  ImGui::SetNextWindowPos(ImVec2(0, 0));
  ImGui::SetNextWindowSize(io.DisplaySize);
  // No background: main() clears to the window colour instead, one
  // full-screen layer less for a software rasteriser to blend.
  const ImGuiWindowFlags flags = ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                                 ImGuiWindowFlags_NoSavedSettings |
                                 ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_MenuBar |
                                 ImGuiWindowFlags_NoBackground;
  ImGui::Begin("ringscope-view", nullptr, flags);
  draw_menu_bar();  // viewer_files.cc: File and Bookmarks menus
  handle_file_keys();
  const LoadState load = model_.state();
  if (load == LoadState::kIdle) {
    draw_welcome();
  } else if (load == LoadState::kLoading) {
    draw_loading();
  } else if (load == LoadState::kFailed) {
    draw_error();
  } else {
    apply_command_line();
    on_loaded();
    poll_refresh();  // may swap in a reloaded trace: before anything draws it
    handle_keys();
    draw_toolbar();
    draw_legend(model_, state_);
    const float avail = ImGui::GetContentRegionAvail().y;
    // std::clamp needs lo <= hi: a short window (or a legend wrapped over
    // several lines) leaves less than 200 px.
    state_.bottom_panel_height =
        std::clamp(state_.bottom_panel_height, 80.0f, std::max(80.0f, avail - 120));
    const float timeline_h = avail - state_.bottom_panel_height - kSplitterHeight;
    ImGui::BeginChild("timeline", ImVec2(0, timeline_h), false,
                      ImGuiWindowFlags_NoScrollbar | ImGuiWindowFlags_NoScrollWithMouse);
    draw_timeline_panel(model_, state_, &flow_cache_, &timeline_pixels_, &layout_);
    ImGui::EndChild();
    ImGui::InvisibleButton("splitter", ImVec2(-1, kSplitterHeight));
    if (ImGui::IsItemActive()) state_.bottom_panel_height -= io.MouseDelta.y;
    if (ImGui::IsItemHovered() || ImGui::IsItemActive())
      ImGui::SetMouseCursor(ImGuiMouseCursor_ResizeNS);
    draw_bottom_panel(state_.bottom_panel_height);
  }
  draw_file_popups();  // the Open dialog and the add-bookmark popup, over the rest
  ImGui::End();
}

}  // namespace ringscope::view
