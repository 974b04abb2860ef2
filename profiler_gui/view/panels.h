// The drawing side of ringscope-view: one function per panel, each in its own
// file (timeline_panel.cc, stragglers_panel.cc, ...). Panels read the model,
// read and update ViewState, and draw with ImGui; they keep no other state
// except the caches declared here.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "bookmarks.h"
#include "collective_search.h"
#include "imgui.h"
#include "pixel_layer.h"
#include "ring_flows.h"
#include "time_breakdown.h"
#include "timeline_model.h"
#include "trace_compare.h"
#include "tune_panel.h"
#include "view_state.h"

namespace ringscope::view {

// Where the last frame drew what (window pixels), for the headless render test.
struct FrameLayout {
  struct Band {
    int rank = 0;
    float y0 = 0, y1 = 0;                // whole band, clipped to the timeline
    float header_y0 = 0, header_y1 = 0;  // rank label row
    float label_x0 = 0, label_x1 = 0;
  };
  std::vector<Band> bands;
  ImVec4 timeline_rect{0, 0, 0, 0};  // x0, y0, x1, y1
  float time_x0 = 0, time_x1 = 0;    // the x range that shows the view's time span
  ImVec4 panel_rect{0, 0, 0, 0};
  std::string panel;     // name of the bottom panel drawn
  int flow_arrows = 0;   // ring-step flow arrows drawn (selected collective)
  int compare_rows = 0;  // rows of the compare panel's two tables
  int search_rows = 0;   // matches listed by the search panel (all, not only visible)
  // Open dialog (drawn this frame when entries >= 0) and bookmarks panel.
  ImVec4 open_dialog_rect{0, 0, 0, 0};
  int open_dialog_entries = -1;  // directory entries listed
  int open_dialog_recent = 0, open_dialog_recent_missing = 0;
  struct DialogRow {
    std::string name;  // the entry's name as listed ("a.rank*.sqlite", "sub/")
    ImVec4 rect;       // x0, y0, x1, y1 of its row
  };
  std::vector<DialogRow> open_dialog_rows;  // the listing's rows drawn this frame
  int bookmark_rows = -1;                   // rows of the bookmarks panel, -1: not drawn
  TuneLayout tune;                          // the Tune panel's plots (tune_panel.h)
  int verdict_rows = -1;      // lines of the verdict panel's diagnosis, -1: not drawn
  int verdict_waiting = 0;    // bands marked waiting in the stuck collective
  int verdict_missing = 0;    // bands marked as never having submitted it
};

// Maps trace time to screen x within a rectangle of the timeline.
struct TimeToScreen {
  int64_t begin_ns = 0, end_ns = 1;
  float x0 = 0, width = 1;
  // Far off-screen coordinates are held a million pixels out: at extreme
  // zoom a highlight or arrow end would otherwise lie 1e12 px away, past
  // what float vertices and the rasterisers keep exact. Subtraction in
  // double: a damaged trace's times may lie near the ends of int64.
  static constexpr double kFarPx = 1e6;
  double px_per_ns() const {
    return width / (static_cast<double>(end_ns) - static_cast<double>(begin_ns));
  }
  float x(int64_t t) const {
    const double px = (static_cast<double>(t) - static_cast<double>(begin_ns)) * px_per_ns();
    return x0 + static_cast<float>(std::clamp(px, -kFarPx, width + kFarPx));
  }
  int64_t time(float px) const {
    return begin_ns + static_cast<int64_t>(static_cast<double>(px - x0) / px_per_ns());
  }
};

// Filtered, ordered rows of the stragglers table; rebuilt when the search
// text changes.
struct StragglersTableCache {
  std::string filter;
  bool valid = false;
  std::vector<uint32_t> rows;  // indexes into StragglerReport::collectives
};

// Ring-step flows of the selected collective, read from the file when the
// selection changes.
struct RingFlowCache {
  std::optional<CollectiveKey> key;
  std::vector<RingFlow> flows;
};

// The search panel's matches, recomputed when the query changes.
struct SearchCache {
  std::string query;
  bool valid = false;
  size_t total = 0;
  std::vector<TensorMatch> matches;
};

// Per-rank time breakdown, computed on first use on a worker thread (it
// sorts every span of every rank: seconds for 10 M events, which would
// freeze the window). Reset (which waits for the worker) before the trace
// it reads is replaced.
struct BreakdownCache {
  bool valid = false;
  std::vector<RankBreakdown> ranks;
  std::future<std::vector<RankBreakdown>> computing;
  // Set by reset(): the worker stops at its next rank, so the wait for it
  // (before its trace goes) is short.
  std::shared_ptr<std::atomic<bool>> cancel = std::make_shared<std::atomic<bool>>(false);
  // Takes the worker's result when it is ready (every frame, whatever tab
  // is shown, so a finished worker never keeps the viewer busy).
  void poll() {
    if (computing.valid() &&
        computing.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      ranks = computing.get();
      valid = true;
    }
  }
  void reset() {
    cancel->store(true);
    if (computing.valid()) computing.wait();
    *this = BreakdownCache();
  }
};
struct CompareCache {
  bool valid = false;
  TraceComparison result;
};
struct SettingsCache {
  bool valid = false;
  std::vector<SettingChange> changes;
};

void draw_legend(const TimelineModel& model, ViewState& state);
// The legend's line of process-set check boxes (nothing without sets).
void draw_process_set_filter(const TimelineModel& model, ViewState& state);
// Ticks and labels (times relative to origin_ns) across `map`, in a strip of height h at y.
void draw_time_axis(ImDrawList* draw, const TimeToScreen& map, float y, float h, int64_t origin_ns);
// Vertical grid lines matching the axis ticks, between y0 and y1.
void draw_time_grid(PixelLayer* pixels, const TimeToScreen& map, float y0, float y1,
                    int64_t origin_ns);
void draw_event_tooltip(TimelineModel& model, const HoveredItem& item);
// The bands' fills, grid and boxes go to `pixels`, which the frame's draw
// data shows (PixelLayer::draw): it must live until the frame is rendered.
void draw_timeline_panel(TimelineModel& model, ViewState& state, RingFlowCache* flows,
                         PixelLayer* pixels, FrameLayout* layout);
// Arrows from each send step to the matching step on the peer rank; ring_y[r]
// is the centre of rank index r's ring track on screen (NaN: not visible).
int draw_ring_flow_arrows(ImDrawList* draw, const TimeToScreen& map,
                          const std::vector<RingFlow>& flows, const std::vector<float>& ring_y);
void draw_stragglers_panel(const TimelineModel& model, ViewState& state,
                           StragglersTableCache* cache);
void draw_statistics_panel(const TimelineModel& model, ViewState& state);
// The verdict of `ringscope trace blame` on the files shown (a job that
// hung, failed, was killed or slowed): diagnosis, the collectives waited in,
// and per rank its state, last events and Python stack.
void draw_verdict_panel(const TimelineModel& model, FrameLayout* layout);
void draw_run_info_panel(const TimelineModel& model);
void draw_search_panel(const TimelineModel& model, ViewState& state, SearchCache* cache,
                       FrameLayout* layout);
void draw_breakdown_panel(const TimelineModel& model, BreakdownCache* cache);
void draw_settings_panel(const TimelineModel& model, SettingsCache* cache);
// `other`: the --compare trace (nullptr: none given).
void draw_compare_panel(const TimelineModel& model, TimelineModel* other,
                        const std::string& other_path, CompareCache* cache, FrameLayout* layout);

// View actions shared by panels and keys (view_actions.cc).
void fit_all(const TimelineModel& model, ViewState& state);
void zoom_at(const TimelineModel& model, ViewState& state, int64_t anchor_ns, double factor);
void pan_by(const TimelineModel& model, ViewState& state, int64_t delta_ns);
// Selects the collective and, unless it is already well visible, centres it.
void focus_collective(const TimelineModel& model, ViewState& state, const CollectiveKey& key);
// Selects the collective and zooms to it (readiness to end, with margins).
void jump_to_collective(const TimelineModel& model, ViewState& state, const CollectiveKey& key);
// Shows [begin, end] (clamped like every other view change).
void zoom_to(const TimelineModel& model, ViewState& state, int64_t begin, int64_t end);
// Zooms to the selected collective, else the selected event; false if none.
bool fit_selection(TimelineModel& model, ViewState& state);
// The visible range and selection as a bookmark, and back: go_to_bookmark
// shows its range and selects its collective and event where the trace (a
// reloaded one too) has them.
Bookmark bookmark_view(const TimelineModel& model, const ViewState& state, std::string name);
void go_to_bookmark(const TimelineModel& model, ViewState& state, const Bookmark& bookmark);

}  // namespace ringscope::view
