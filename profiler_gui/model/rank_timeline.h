// What the viewer holds for one rank after loading: its RankInfo and one
// display track per activity family that has events, in family order.
#pragma once

#include <cstdint>
#include <vector>

#include "ringscope/trace_reader.h"
#include "track.h"

namespace ringscope::view {

struct RankTimeline {
  RankInfo info;
  std::vector<Track> tracks;  // ascending family, only families with events
  int64_t event_count = 0;

  const Track* track(TrackFamily family) const {
    for (const Track& t : tracks)
      if (t.family == family) return &t;
    return nullptr;
  }
};

}  // namespace ringscope::view
