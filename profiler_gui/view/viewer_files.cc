// Viewer's file handling: opening a trace in place of the current one (Open
// dialog, recent files, drag and drop), the File and Bookmarks menus, the
// welcome screen when nothing is open, bookmarks per trace, and the live
// refresh (F5, auto-refresh every 2 s while the files change).
#include <cstdio>

#include "config_dir.h"
#include "palette.h"
#include "time_format.h"
#include "viewer.h"

namespace ringscope::view {
namespace {

constexpr double kAutoRefreshSeconds = 2.0;
// Dear ImGui 1.86 indexes keys by the platform's codes: GLFW's here
// (app/main.cc checks GLFW_KEY_F5 == kKeyF5).
constexpr int kKeyF5 = 294;

void warn(const std::string& message) {
  std::fprintf(stderr, "ringscope-view: warning: %s\n", message.c_str());
}

// One recent entry as a row of the File menu or the welcome screen: its
// label, greyed and marked "missing" when its files are gone. True if clicked.
bool recent_row(const RecentEntry& entry, size_t index, bool exists) {
  if (!exists)
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::PushID(static_cast<int>(index));
  const bool clicked = ImGui::MenuItem(entry.label().c_str(), exists ? nullptr : "missing");
  ImGui::PopID();
  if (!exists) ImGui::PopStyleColor();
  return clicked;
}

}  // namespace

void Viewer::init_files() {
  // Headless runs (tests, benchmarks) keep out of the user's own recent list.
  write_recent_ = options_.screenshot_path.empty() || viewer_config_dir_overridden();
  recent_ = RecentFiles(default_recent_files_path());
  if (Status s = recent_.load(); !s.ok()) {
    warn(s.message());
    notice_ = s.message();
  }
  // The Tune panel's trial commands: not even read by headless runs, whose
  // screenshots must not depend on the user's history.
  if (Status s = tune_state_.use_history(
          TrialCommandHistory(write_recent_ ? default_trial_commands_path() : ""));
      !s.ok()) {
    warn(s.message());
    notice_ = s.message();
  }
  auto_refresh_ = options_.auto_refresh;
  if (!options_.open_dialog_dir.empty() || options_.traces.empty()) {
    open_dialog_.start_dir = options_.open_dialog_dir;
    open_dialog_.open_requested = true;
  }
}

void Viewer::reset_caches() {
  stragglers_cache_ = StragglersTableCache();
  flow_cache_ = RingFlowCache();
  search_cache_ = SearchCache();
  breakdown_cache_.reset();
  settings_cache_ = SettingsCache();
  compare_cache_ = CompareCache();
}

void Viewer::open(std::vector<std::string> inputs) {
  if (inputs.empty()) return;
  options_.traces = std::move(inputs);
  // The command line's places belong to the first trace.
  options_.range.reset();
  options_.select.clear();
  options_.bookmark.clear();
  command_line_applied_ = false;
  select_error_.clear();
  ViewState fresh;
  fresh.panel = state_.panel;
  fresh.bottom_panel_height = state_.bottom_panel_height;
  fresh.show_legend = state_.show_legend;
  std::snprintf(fresh.search_text, sizeof(fresh.search_text), "%s", state_.search_text);
  std::snprintf(fresh.tensor_search, sizeof(fresh.tensor_search), "%s", state_.tensor_search);
  state_ = fresh;
  reset_caches();
  bookmarks_ = BookmarksUi();
  watch_.disarm();
  loaded_handled_ = false;
  notice_.clear();
  model_.start_loading(options_.traces);
}

void Viewer::open_recent(const RecentEntry& entry) {
  if (!trace_inputs_exist(entry.inputs)) {
    notice_ = entry.label() + ": no longer exists";
    return;
  }
  open(entry.inputs);
}

void Viewer::on_loaded() {
  if (loaded_handled_) return;
  loaded_handled_ = true;
  if (write_recent_ && !recent_.path().empty()) {
    // Rewritten when it was read or is corrupt; a list that could not be
    // read (I/O error) is left as it is on disk.
    const Status loaded = recent_.load();
    if (!loaded.ok()) warn(loaded.message());
    if (loaded.ok() || loaded.code() == StatusCode::kCorrupt) {
      recent_.add(options_.traces);
      if (Status s = recent_.save(); !s.ok()) warn("recent files not saved: " + s.to_string());
    }
  }
  const std::string key =
      bookmark_trace_key(model_.trace().reader.meta_value("run_id"), options_.traces);
  const std::string dir = viewer_config_dir();
  bookmarks_.store = BookmarkStore(dir.empty() ? "" : bookmarks_path(dir, key), key);
  if (Status s = bookmarks_.store.load(); !s.ok()) {
    warn(s.message());
    bookmarks_.warning = s.message();
  }
  watch_.arm(model_.inputs());
  next_poll_s_ = ImGui::GetTime() + kAutoRefreshSeconds;
  if (!options_.bookmark.empty()) {
    if (const Bookmark* b = bookmarks_.store.find(options_.bookmark))
      go_to_bookmark(model_, state_, *b);
    else
      select_error_ = "--bookmark: no bookmark '" + options_.bookmark + "' for run " + key;
  }
}

void Viewer::refresh() {
  if (model_.state() != LoadState::kReady || model_.refresh_state() != RefreshState::kNone) return;
  watch_.arm(model_.inputs());  // writes from now on trigger the next auto-refresh
  model_.start_refresh();
}

void Viewer::poll_refresh() {
  const RefreshState rs = model_.refresh_state();
  if (rs == RefreshState::kDone || rs == RefreshState::kFailed) {
    // The view and selection as they are now, named so the new trace finds them.
    const Bookmark here = bookmark_view(model_, state_, "");
    // Before the old trace goes: a cache's worker may still read it.
    reset_caches();
    const Status s = model_.finish_refresh();
    if (s.ok()) {
      state_.hovered.reset();
      go_to_bookmark(model_, state_, here);
      notice_.clear();
    } else {
      notice_ = "refresh failed (showing the previous load): " + s.to_string();
    }
  }
  if (auto_refresh_ && model_.refresh_state() == RefreshState::kNone &&
      ImGui::GetTime() >= next_poll_s_) {
    next_poll_s_ = ImGui::GetTime() + kAutoRefreshSeconds;
    if (watch_.changed()) refresh();
  }
}

void Viewer::handle_file_keys() {
  const ImGuiIO& io = ImGui::GetIO();
  if (io.WantTextInput || ImGui::IsPopupOpen("", ImGuiPopupFlags_AnyPopupId)) return;
  const bool ready = model_.state() == LoadState::kReady;
  if (io.KeyCtrl && ImGui::IsKeyPressed('O', false)) open_dialog_.open_requested = true;
  if (ready && ImGui::IsKeyPressed(kKeyF5, false)) refresh();
  if (ready && !io.KeyCtrl && ImGui::IsKeyPressed('B', false))
    request_add_bookmark(model_, state_, bookmarks_);
}

void Viewer::draw_file_popups() {
  std::vector<std::string> chosen =
      draw_open_dialog(open_dialog_, recent_, recent_exists_, &layout_);
  if (model_.state() == LoadState::kReady) draw_add_bookmark_popup(model_, state_, bookmarks_);
  if (!chosen.empty()) open(std::move(chosen));
}

void Viewer::draw_menu_bar() {
  if (!ImGui::BeginMenuBar()) return;
  const bool ready = model_.state() == LoadState::kReady;
  bool recent_open = false;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) open_dialog_.open_requested = true;
    recent_open = ImGui::BeginMenu("Open recent", !recent_.entries().empty());
    if (recent_open) {
      // Looked up when the menu opens, then at most every few seconds.
      recent_exists_.update(recent_, ImGui::GetTime(), /*force=*/!recent_menu_open_);
      std::optional<RecentEntry> chosen;
      for (size_t i = 0; i < recent_.entries().size(); ++i)
        if (recent_row(recent_.entries()[i], i, recent_exists_.exists(i)))
          chosen = recent_.entries()[i];
      ImGui::Separator();
      if (ImGui::MenuItem("Clear list")) {
        recent_ = RecentFiles(recent_.path());
        if (Status s = recent_.save(); !s.ok()) notice_ = s.to_string();
      }
      ImGui::EndMenu();
      if (chosen) open_recent(*chosen);
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Refresh", "F5", false, ready)) refresh();
    ImGui::MenuItem("Auto-refresh while the files change", nullptr, &auto_refresh_);
    ImGui::EndMenu();
  }
  recent_menu_open_ = recent_open;
  if (ImGui::BeginMenu("Bookmarks", ready)) {
    if (ImGui::MenuItem("Add bookmark...", "B")) request_add_bookmark(model_, state_, bookmarks_);
    if (ImGui::MenuItem("Show the Bookmarks panel")) {
      state_.panel = BottomPanel::kBookmarks;
      state_.panel_needs_focus = true;
    }
    if (!bookmarks_.store.entries().empty()) ImGui::Separator();
    std::optional<Bookmark> chosen;
    for (size_t i = 0; i < bookmarks_.store.entries().size(); ++i) {
      ImGui::PushID(static_cast<int>(i));
      if (ImGui::MenuItem(bookmarks_.store.entries()[i].name.c_str()))
        chosen = bookmarks_.store.entries()[i];
      ImGui::PopID();
    }
    ImGui::EndMenu();
    if (chosen) go_to_bookmark(model_, state_, *chosen);
  }
  if (ready && model_.refresh_state() == RefreshState::kRunning)
    ImGui::TextDisabled("refreshing... %s events",
                        format_count(model_.progress().events_loaded).c_str());
  else if (ready && auto_refresh_)
    ImGui::TextDisabled("auto-refresh on");
  if (!notice_.empty()) {
    ImGui::TextColored(to_vec4(colors::kLate), "%s", notice_.c_str());
    if (ImGui::SmallButton("x")) notice_.clear();
  }
  ImGui::EndMenuBar();
}

void Viewer::draw_welcome() {
  const ImVec2 size = ImGui::GetContentRegionAvail();
  ImGui::SetCursorPos(ImVec2(size.x * 0.3f, size.y * 0.3f));
  ImGui::BeginGroup();
  ImGui::TextUnformatted("No trace open");
  ImGui::TextDisabled("File > Open... (Ctrl+O), or drop trace files or a directory on the window");
  if (ImGui::Button("Open...")) open_dialog_.open_requested = true;
  if (!recent_.entries().empty()) {
    ImGui::Spacing();
    ImGui::TextDisabled("Recent");
  }
  recent_exists_.update(recent_, ImGui::GetTime());  // at most every few seconds
  for (size_t i = 0; i < recent_.entries().size(); ++i)
    if (recent_row(recent_.entries()[i], i, recent_exists_.exists(i))) {
      open_recent(recent_.entries()[i]);
      break;  // open() may have changed the list
    }
  ImGui::EndGroup();
}

}  // namespace ringscope::view
