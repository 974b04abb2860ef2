// A selected event named by what it is rather than where it sits in the
// loaded columns (rank number, kind, start, seq_index), so a selection
// survives a reload of a growing trace and can be stored in a bookmark.
#pragma once

#include <cstdint>
#include <optional>

#include "timeline_model.h"

namespace ringscope::view {

struct EventKey {
  static constexpr int64_t kUnknown = INT64_MIN;
  int32_t rank = 0;  // rank number, not index
  uint16_t kind = 0;
  int64_t start_ns = 0;  // rank 0's clock
  int32_t seq_index = -1;
  // The rank's own clock (what the file stores): a run that ends writes its
  // end clock offset, and every event of ranks >= 1 then moves on rank 0's
  // clock by the drift correction. kUnknown in older bookmarks.
  int64_t local_start_ns = kUnknown;
  bool operator==(const EventKey& o) const {
    return rank == o.rank && kind == o.kind && start_ns == o.start_ns && seq_index == o.seq_index;
  }
};

// Valid in kReady only.
EventKey event_key_of(const TimelineModel& model, const EventRef& ref);
// The loaded event with that key, if any: the one of its kind and seq_index
// starting nearest to where its local start now maps (within 1 us, for the
// clock conversion's rounding), else at exactly start_ns.
std::optional<EventRef> find_event(const TimelineModel& model, const EventKey& key);

}  // namespace ringscope::view
