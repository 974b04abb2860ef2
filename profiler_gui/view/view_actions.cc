// View actions shared by the timeline, the panels and the keyboard: fit,
// zoom at a point, pan, focus a collective (see panels.h). They keep the
// visible range inside sane bounds around the trace. Also zoom to a range,
// jump to a collective, fit the selection; bookmarking the view and going
// back to a bookmark (also how a live refresh keeps the view).
#include <algorithm>
#include <limits>

#include "panels.h"
#include "ringscope/saturating.h"

namespace ringscope::view {
namespace {

constexpr int64_t kMinSpanNs = 50;

// Time arithmetic saturates: a damaged trace's clock offsets (the reader
// saturates them) may put times near the ends of int64.
int64_t add(int64_t a, int64_t b) { return saturating_add(a, b); }
int64_t sub(int64_t a, int64_t b) { return saturating_sub(a, b); }

void set_range(const TimelineModel& model, ViewState& state, int64_t begin, int64_t end) {
  const int64_t total = std::max<int64_t>(sub(model.trace().end_ns, model.trace().begin_ns), 0);
  const int64_t max_span = std::max<int64_t>(total > std::numeric_limits<int64_t>::max() / 4
                                                 ? std::numeric_limits<int64_t>::max()
                                                 : total * 4,
                                             kMinSpanNs);
  int64_t span = std::clamp<int64_t>(sub(end, begin), kMinSpanNs, max_span);
  const int64_t lo = sub(model.trace().begin_ns, total), hi = add(model.trace().end_ns, total);
  begin = std::clamp(begin, std::min(sub(lo, span), hi), hi);
  state.view_begin_ns = begin;
  state.view_end_ns = add(begin, span);
  state.view_initialized = true;
}

}  // namespace

void fit_all(const TimelineModel& model, ViewState& state) {
  const int64_t b = model.trace().begin_ns, e = model.trace().end_ns;
  const int64_t margin = std::max<int64_t>(1, sub(e, b) / 50);
  set_range(model, state, sub(b, margin), add(e, margin));
}

void zoom_at(const TimelineModel& model, ViewState& state, int64_t anchor_ns, double factor) {
  const double b = static_cast<double>(sub(state.view_begin_ns, anchor_ns)) * factor;
  const double e = static_cast<double>(sub(state.view_end_ns, anchor_ns)) * factor;
  if (e - b < kMinSpanNs) return;
  auto offset = [](double v) { return static_cast<int64_t>(std::clamp(v, -9.0e18, 9.0e18)); };
  set_range(model, state, add(anchor_ns, offset(b)), add(anchor_ns, offset(e)));
}

void pan_by(const TimelineModel& model, ViewState& state, int64_t delta_ns) {
  set_range(model, state, add(state.view_begin_ns, delta_ns), add(state.view_end_ns, delta_ns));
}

void focus_collective(const TimelineModel& model, ViewState& state, const CollectiveKey& key) {
  state.selected_collective = key;
  const CollectiveReadiness* c = model.trace().stragglers.find(key);
  if (!c) return;
  // From the earliest readiness to the end of the collective, with margins.
  int64_t begin = c->start_ns;
  for (int64_t ready : c->ready_ns)
    if (ready >= 0) begin = std::min(begin, ready);
  const int64_t span = std::max<int64_t>(sub(c->end_ns, begin), 1000);
  const int64_t view_span = sub(state.view_end_ns, state.view_begin_ns);
  const bool visible = begin >= state.view_begin_ns && c->end_ns <= state.view_end_ns;
  if (visible && span > view_span / 40) return;  // already in view and not tiny
  set_range(model, state, sub(begin, span / 2), add(c->end_ns, span / 2));
}

void zoom_to(const TimelineModel& model, ViewState& state, int64_t begin, int64_t end) {
  if (end < begin) std::swap(begin, end);
  set_range(model, state, begin, end);
}

void jump_to_collective(const TimelineModel& model, ViewState& state, const CollectiveKey& key) {
  state.selected_collective = key;
  state.selected_event.reset();
  const CollectiveReadiness* c = model.trace().stragglers.find(key);
  if (!c) return;
  int64_t begin = c->start_ns;
  for (int64_t ready : c->ready_ns)
    if (ready >= 0) begin = std::min(begin, ready);
  const int64_t span = std::max<int64_t>(sub(c->end_ns, begin), 1000);
  set_range(model, state, sub(begin, span / 4), add(c->end_ns, span / 4));
}

bool fit_selection(TimelineModel& model, ViewState& state) {
  if (state.selected_collective && model.trace().stragglers.find(*state.selected_collective)) {
    const auto event = state.selected_event;
    jump_to_collective(model, state, *state.selected_collective);
    state.selected_event = event;
    return true;
  }
  if (!state.selected_event) return false;
  const Track& t = model.track(*state.selected_event);
  const int64_t b = t.events.start_ns[state.selected_event->event];
  const int64_t e = t.draw_end(state.selected_event->event);
  const int64_t margin = std::max<int64_t>(sub(e, b) / 4, 100);
  set_range(model, state, sub(b, margin), add(e, margin));
  return true;
}

Bookmark bookmark_view(const TimelineModel& model, const ViewState& state, std::string name) {
  Bookmark b;
  b.name = std::move(name);
  b.begin_ns = state.view_begin_ns;
  b.end_ns = state.view_end_ns;
  b.collective = state.selected_collective;
  if (state.selected_event) b.event = event_key_of(model, *state.selected_event);
  return b;
}

void go_to_bookmark(const TimelineModel& model, ViewState& state, const Bookmark& bookmark) {
  set_range(model, state, bookmark.begin_ns, bookmark.end_ns);
  state.selected_collective.reset();
  state.selected_event.reset();
  if (bookmark.collective && model.trace().stragglers.find(*bookmark.collective))
    state.selected_collective = bookmark.collective;
  if (bookmark.event) state.selected_event = find_event(model, *bookmark.event);
}

}  // namespace ringscope::view
