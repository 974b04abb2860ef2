// Bookmarks: the add-bookmark popup (key B) and the Bookmarks tab listing
// every bookmark of this trace with its range and selection; a click goes
// there, x deletes it. Storage is BookmarkStore's (model/bookmarks.h).
#include <optional>

#include "file_ui.h"
#include "palette.h"
#include "time_format.h"

namespace ringscope::view {
namespace {

constexpr const char* kPopup = "Add bookmark";

void save(BookmarksUi& ui) {
  if (Status s = ui.store.save(); !s.ok()) ui.warning = "bookmarks not saved: " + s.to_string();
}

}  // namespace

void add_bookmark(const TimelineModel& model, const ViewState& state, BookmarksUi& ui,
                  const std::string& name) {
  ui.store.put(bookmark_view(model, state, name));
  save(ui);
}

void delete_bookmark(BookmarksUi& ui, size_t index) {
  if (ui.store.remove(index)) save(ui);
}

void request_add_bookmark(const TimelineModel& model, const ViewState& state, BookmarksUi& ui) {
  std::string name;
  if (state.selected_collective) {
    const CollectiveReadiness* c = model.trace().stragglers.find(*state.selected_collective);
    name = std::to_string(state.selected_collective->cycle) + ":" +
           std::to_string(state.selected_collective->seq_index);
    if (c && !c->member_names.empty()) {
      name += ' ';
      name += model.text(c->member_names[0]);
    }
  } else {
    for (size_t n = ui.store.entries().size() + 1; name.empty(); ++n)
      if (!ui.store.find("bookmark " + std::to_string(n))) name = "bookmark " + std::to_string(n);
  }
  std::snprintf(ui.name, sizeof(ui.name), "%s", name.c_str());
  ui.add_requested = true;
}

void draw_add_bookmark_popup(const TimelineModel& model, const ViewState& state, BookmarksUi& ui) {
  if (ui.add_requested) {
    ui.add_requested = false;
    ImGui::OpenPopup(kPopup);
  }
  if (!ImGui::BeginPopupModal(kPopup, nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  const int64_t origin = model.trace().begin_ns;
  ImGui::Text("%s - %s", format_duration(state.view_begin_ns - origin).c_str(),
              format_duration(state.view_end_ns - origin).c_str());
  if (state.selected_collective)
    ImGui::TextDisabled("with the selected collective %lld:%d",
                        static_cast<long long>(state.selected_collective->cycle),
                        state.selected_collective->seq_index);
  if (ImGui::IsWindowAppearing()) ImGui::SetKeyboardFocusHere();
  ImGui::SetNextItemWidth(320);
  const bool enter =
      ImGui::InputText("name", ui.name, sizeof(ui.name), ImGuiInputTextFlags_EnterReturnsTrue);
  if (ui.store.find(ui.name)) ImGui::TextDisabled("replaces the bookmark of that name");
  if (ImGui::Button("Add", ImVec2(80, 0)) || enter) {
    add_bookmark(model, state, ui, ui.name);
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel", ImVec2(80, 0)) ||
      ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape), false))
    ImGui::CloseCurrentPopup();
  ImGui::EndPopup();
}

void draw_bookmarks_panel(const TimelineModel& model, ViewState& state, BookmarksUi& ui,
                          FrameLayout* layout) {
  const auto& entries = ui.store.entries();
  layout->bookmark_rows = static_cast<int>(entries.size());
  if (ImGui::Button("Add (B)")) request_add_bookmark(model, state, ui);
  ImGui::SameLine();
  ImGui::TextDisabled(
      "%zu bookmarks of run %s, saved in %s", entries.size(), ui.store.trace_key().c_str(),
      ui.store.path().empty() ? "(nowhere: no config directory)" : ui.store.path().c_str());
  if (!ui.warning.empty()) ImGui::TextColored(to_vec4(colors::kLate), "%s", ui.warning.c_str());
  const ImGuiTableFlags flags = ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_Resizable;
  if (!ImGui::BeginTable("bookmarks", 5, flags)) return;
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("name");
  ImGui::TableSetupColumn("from");
  ImGui::TableSetupColumn("span");
  ImGui::TableSetupColumn("selection");
  ImGui::TableSetupColumn("", ImGuiTableColumnFlags_WidthFixed, 24);
  ImGui::TableHeadersRow();
  const int64_t origin = model.trace().begin_ns;
  std::optional<size_t> go, remove;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Bookmark& b = entries[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (ImGui::Selectable(b.name.c_str(), false, ImGuiSelectableFlags_AllowItemOverlap)) go = i;
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(b.begin_ns - origin).c_str());
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(format_duration(b.end_ns - b.begin_ns).c_str());
    ImGui::TableNextColumn();
    if (b.collective)
      ImGui::Text("collective %lld:%d", static_cast<long long>(b.collective->cycle),
                  b.collective->seq_index);
    else if (b.event)
      ImGui::Text("event on rank %d", b.event->rank);
    else
      ImGui::TextDisabled("-");
    ImGui::TableNextColumn();
    if (ImGui::SmallButton("x")) remove = i;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("delete this bookmark");
    ImGui::PopID();
  }
  ImGui::EndTable();
  if (go) go_to_bookmark(model, state, entries[*go]);
  if (remove) delete_bookmark(ui, *remove);
}

}  // namespace ringscope::view
