// Level of detail for the timeline: turns the events of a track that fall in
// the visible time range into draw items, where runs of events narrower than
// a few pixels become one folded item with a count. Cost per row is
// O(width_px / min_px x log n), independent of how many events are visible.
#pragma once

#include <cstdint>
#include <vector>

#include "track.h"

namespace ringscope::view {

struct FoldRequest {
  int64_t begin_ns = 0;  // visible range
  int64_t end_ns = 1;
  float width_px = 1;  // pixels the range spans
  float min_px = 3;    // narrower events fold with their neighbours
};

struct FoldItem {
  float x0 = 0, x1 = 0;  // pixels from the range's left edge (clamped just outside the view)
  uint32_t first = 0;    // index into Track::events
  uint32_t count = 1;    // > 1: a folded run of events [first, first + count)
  uint16_t kind = 0;     // kind of the first event
  uint8_t row = 0;
  bool folded() const { return count > 1; }
};

// Appends the draw items of every row of `track` to `out` (row by row, each
// row left to right). In a row of non-overlapping events, a run of events
// each narrower than min_px with gaps under min_px folds. In the shared last
// row (where events may overlap) every event starting within min_px of the
// run's end folds into it, whatever its width.
void fold_track(const Track& track, const FoldRequest& request, std::vector<FoldItem>* out);

}  // namespace ringscope::view
