// The Open dialog: a modal file browser (recent traces on the left, the
// current directory's traces and per-rank sets on the right, a path field,
// Open / Cancel). Listing and the Open decision are FileBrowser's.
#include <algorithm>
#include <filesystem>
#include <optional>

#include "file_ui.h"
#include "palette.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr const char* kPopup = "Open trace";

const char* kind_tag(const BrowserEntry& e) {
  switch (e.kind) {
    case BrowserEntry::Kind::kParent:
      return "up";
    case BrowserEntry::Kind::kDirectory:
      return e.rank_files > 0 ? "trace dir" : "dir";
    case BrowserEntry::Kind::kRankSet:
      return "per-rank";
    case BrowserEntry::Kind::kTraceFile:
      return e.in_set ? "rank" : "trace";
    case BrowserEntry::Kind::kOtherFile:
      return "";
  }
  return "";
}

// Applies an OpenAction: navigation happens here, inputs are returned.
std::vector<std::string> apply(OpenDialogState& dialog, const OpenAction& action) {
  if (!action.error.empty()) {
    dialog.message = action.error;
  } else if (!action.navigate_to.empty()) {
    if (dialog.browser->navigate(action.navigate_to)) {
      dialog.path[0] = 0;
      dialog.message.clear();
    } else {
      dialog.message = dialog.browser->error();
    }
  } else if (!action.inputs.empty()) {
    dialog.message.clear();
    return action.inputs;
  }
  return {};
}

std::vector<std::string> draw_recent(OpenDialogState& dialog, const RecentFiles& recent,
                                     const RecentExistenceCache& existence, FrameLayout* layout) {
  std::vector<std::string> chosen;
  ImGui::TextDisabled("Recent");
  if (recent.entries().empty()) ImGui::TextDisabled("(none yet)");
  for (size_t i = 0; i < recent.entries().size(); ++i) {
    const RecentEntry& entry = recent.entries()[i];
    const bool exists = existence.exists(i);
    ++layout->open_dialog_recent;
    if (!exists) {
      ++layout->open_dialog_recent_missing;
      ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    }
    ImGui::PushID(static_cast<int>(i));
    const std::string name =
        std::filesystem::path(entry.inputs.front()).filename().string() +
        (entry.inputs.size() > 1 ? " +" + std::to_string(entry.inputs.size() - 1) : "");
    if (ImGui::Selectable(name.c_str())) {
      if (exists)
        chosen = entry.inputs;
      else
        dialog.message = entry.label() + ": no longer exists";
    }
    if (ImGui::IsItemHovered())
      ImGui::SetTooltip("%s%s", entry.label().c_str(), exists ? "" : "\n(missing)");
    ImGui::PopID();
    if (!exists) ImGui::PopStyleColor();
  }
  return chosen;
}

std::vector<std::string> draw_listing(OpenDialogState& dialog, FrameLayout* layout) {
  FileBrowser& browser = *dialog.browser;
  std::vector<std::string> chosen;
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
  if (!ImGui::BeginTable("listing", 3, flags, ImGui::GetContentRegionAvail())) return chosen;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch, 4);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthStretch, 1);
  ImGui::TableSetupColumn("size", ImGuiTableColumnFlags_WidthStretch, 1);
  ImGui::TableHeadersRow();
  std::optional<size_t> activated;
  for (size_t i = 0; i < browser.entries().size(); ++i) {
    const BrowserEntry& e = browser.entries()[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    std::string label = (e.in_set ? "    " : "") + e.name;
    if (e.kind == BrowserEntry::Kind::kRankSet)
      label += "  (" + std::to_string(e.rank_files) + " ranks)";
    else if (e.kind == BrowserEntry::Kind::kDirectory && e.rank_files > 0)
      label += "  (" + std::to_string(e.rank_files) + " rank files)";
    if (ImGui::Selectable(
            label.c_str(), browser.selected(i),
            ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
      if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left))
        activated = i;
      else
        browser.click(i, ImGui::GetIO().KeyCtrl);
    }
    layout->open_dialog_rows.push_back(
        {e.name, ImVec4(ImGui::GetItemRectMin().x, ImGui::GetItemRectMin().y,
                        ImGui::GetItemRectMax().x, ImGui::GetItemRectMax().y)});
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", kind_tag(e));
    ImGui::TableNextColumn();
    if (e.kind != BrowserEntry::Kind::kParent && e.kind != BrowserEntry::Kind::kDirectory)
      ImGui::TextDisabled("%s", format_bytes(e.size).c_str());
  }
  ImGui::EndTable();
  if (activated) chosen = apply(dialog, browser.activate(*activated));
  return chosen;
}

}  // namespace

std::vector<std::string> draw_open_dialog(OpenDialogState& dialog, const RecentFiles& recent,
                                          RecentExistenceCache& exists, FrameLayout* layout) {
  if (dialog.open_requested) {
    exists.update(recent, ImGui::GetTime(), /*force=*/true);
    dialog.open_requested = false;
    if (!dialog.browser)
      dialog.browser = std::make_unique<FileBrowser>(dialog.start_dir);
    else
      dialog.browser->refresh();  // the directory may have changed since
    dialog.message.clear();
    ImGui::OpenPopup(kPopup);
  }
  const ImVec2 display = ImGui::GetIO().DisplaySize;
  ImGui::SetNextWindowSize(ImVec2(std::min(900.0f, display.x * 0.9f), display.y * 0.7f),
                           ImGuiCond_Appearing);
  ImGui::SetNextWindowPos(ImVec2(display.x * 0.5f, display.y * 0.5f), ImGuiCond_Appearing,
                          ImVec2(0.5f, 0.5f));
  // Opaque: the screen behind must not show through the listing.
  ImVec4 background = ImGui::GetStyleColorVec4(ImGuiCol_PopupBg);
  background.w = 1;
  ImGui::PushStyleColor(ImGuiCol_PopupBg, background);
  const bool open = ImGui::BeginPopupModal(kPopup, nullptr, ImGuiWindowFlags_NoSavedSettings);
  ImGui::PopStyleColor();
  if (!open) return {};
  exists.update(recent, ImGui::GetTime());  // at most every few seconds
  FileBrowser& browser = *dialog.browser;
  const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  layout->open_dialog_rect = ImVec4(pos.x, pos.y, pos.x + size.x, pos.y + size.y);
  layout->open_dialog_entries = static_cast<int>(browser.entries().size());
  std::vector<std::string> chosen;

  // Where we are, and the filter.
  if (ImGui::Button("Up")) chosen = apply(dialog, {{}, browser.dir() + "/..", ""});
  ImGui::SameLine();
  ImGui::TextUnformatted(browser.dir().c_str());
  ImGui::SameLine(ImGui::GetWindowContentRegionMax().x - 230);
  bool all = browser.show_all_files();
  if (ImGui::Checkbox("all files", &all)) browser.set_show_all_files(all);
  ImGui::SameLine();
  ImGui::TextDisabled("*.sqlite *.db dirs");

  // Recent on the left, the listing on the right.
  const float footer =
      ImGui::GetFrameHeightWithSpacing() * 2 + ImGui::GetTextLineHeightWithSpacing();
  ImGui::BeginChild("recent", ImVec2(220, -footer), true);
  std::vector<std::string> recent_choice = draw_recent(dialog, recent, exists, layout);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("files", ImVec2(0, -footer), false);
  std::vector<std::string> listing_choice = draw_listing(dialog, layout);
  ImGui::EndChild();
  if (!recent_choice.empty()) chosen = recent_choice;
  if (!listing_choice.empty()) chosen = listing_choice;

  // The path field and the buttons.
  ImGui::SetNextItemWidth(-180);
  const bool enter =
      ImGui::InputTextWithHint("##path", "path (empty: open the selection)", dialog.path,
                               sizeof(dialog.path), ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("Open", ImVec2(80, 0)) || enter)
    chosen = apply(dialog, browser.open_action(dialog.path));
  ImGui::SameLine();
  const bool cancel = ImGui::Button("Cancel", ImVec2(80, 0)) ||
                      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false);
  if (!dialog.message.empty())
    ImGui::TextColored(to_vec4(colors::kLate), "%s", dialog.message.c_str());
  else
    ImGui::TextDisabled("%zu selected; Ctrl+click picks several rank files; double-click opens",
                        browser.selection().size());
  if (cancel || !chosen.empty()) ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
  return chosen;
}

}  // namespace ringscope::view
