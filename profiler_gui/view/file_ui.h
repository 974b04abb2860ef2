// The viewer's file handling on screen: the Open dialog (a file browser
// drawn with ImGui), the add-bookmark popup and the Bookmarks panel. Their
// data sides are model/file_browser.h, model/recent_files.h and
// model/bookmarks.h; these functions only draw them and report what the user
// chose. Viewer (viewer_files.cc) wires them to loading and refreshing.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bookmarks.h"
#include "file_browser.h"
#include "panels.h"
#include "recent_files.h"
#include "timeline_model.h"
#include "view_state.h"

namespace ringscope::view {

struct OpenDialogState {
  bool open_requested = false;  // open the popup on the next frame
  std::string start_dir;        // first directory listed ("" = working directory)
  std::unique_ptr<FileBrowser> browser;
  char path[1024] = "";  // typed path; wins over the selection
  std::string message;   // why the last Open did nothing
};

// A chosen trace (non-empty inputs) from the Open dialog, or nothing.
// Missing recent entries (per `exists`, updated here: when the dialog opens,
// then every few seconds) are drawn greyed; choosing one sets dialog.message.
std::vector<std::string> draw_open_dialog(OpenDialogState& dialog, const RecentFiles& recent,
                                          RecentExistenceCache& exists, FrameLayout* layout);

struct BookmarksUi {
  BookmarkStore store;
  std::string warning;         // a load / save problem, shown in the panel
  bool add_requested = false;  // open the name popup on the next frame
  char name[128] = "";
};

// Opens the add-bookmark popup with a suggested name (kReady only).
void request_add_bookmark(const TimelineModel& model, const ViewState& state, BookmarksUi& ui);
// The popup itself; adds and saves the bookmark on OK.
void draw_add_bookmark_popup(const TimelineModel& model, const ViewState& state, BookmarksUi& ui);
// Adds (or replaces) and saves; problems go to ui.warning.
void add_bookmark(const TimelineModel& model, const ViewState& state, BookmarksUi& ui,
                  const std::string& name);
void delete_bookmark(BookmarksUi& ui, size_t index);
// The Bookmarks tab: every bookmark with its range and selection; click a
// row to go there, x to delete it.
void draw_bookmarks_panel(const TimelineModel& model, ViewState& state, BookmarksUi& ui,
                          FrameLayout* layout);

}  // namespace ringscope::view
