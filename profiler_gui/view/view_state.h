// ViewState: everything the user has changed about what is shown, in one
// struct: visible time range, selection, hover, open panel, search text and
// the timeline's drag gesture. Drawing code reads and updates it; the model
// never sees it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "timeline_model.h"

namespace ringscope::view {

enum class BottomPanel {
  kVerdict,
  kStragglers,
  kStatistics,
  kSearch,
  kBreakdown,
  kSettings,
  kCompare,
  kRunInfo,
  kTune,
  kBookmarks
};

struct HoveredItem {
  EventRef first;      // first event of the item
  uint32_t count = 1;  // > 1: a folded run
  int64_t run_end_ns = 0;
};

struct ViewState {
  // Visible time range, on rank 0's clock (the model's time base).
  int64_t view_begin_ns = 0, view_end_ns = 1;
  bool view_initialized = false;

  std::optional<EventRef> selected_event;
  std::optional<CollectiveKey> selected_collective;  // highlighted on every rank
  std::optional<HoveredItem> hovered;                // this frame's, for the tooltip

  BottomPanel panel = BottomPanel::kStragglers;
  bool panel_needs_focus = true;  // select `panel`'s tab on the next frame
  float bottom_panel_height = 200;
  bool show_legend = true;
  std::vector<bool> rank_collapsed;  // by rank index
  // Process sets whose tracks are hidden (the legend's check boxes).
  std::vector<uint16_t> hidden_process_sets;
  bool shows(const Track& track) const {
    return track.process_set == 0 ||
           std::find(hidden_process_sets.begin(), hidden_process_sets.end(), track.process_set) ==
               hidden_process_sets.end();
  }

  char search_text[128] = "";    // filters the stragglers and statistics tables
  int statistics_rank = -1;      // -1: all ranks together
  char tensor_search[128] = "";  // the search panel's query (substring of tensor names)

  // Shift + drag: a time range to zoom to once the button is released.
  bool range_selecting = false;
  float range_start_x = 0;

  // Timeline drag: pan anchored at the press.
  bool dragging = false;
  float drag_start_x = 0;
  int64_t drag_start_begin_ns = 0, drag_start_end_ns = 0;
};

}  // namespace ringscope::view
