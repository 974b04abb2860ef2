// What the viewer holds for one rank after loading: its RankInfo and one
// display track per activity family that has events, in family order: the
// world's, then each process set's (its collectives among a subset of the
// ranks, on a runtime of its own) after them, by set.
#pragma once

#include <cstdint>
#include <vector>

#include "ringscope/trace_reader.h"
#include "track.h"

namespace ringscope::view {

struct RankTimeline {
  RankInfo info;
  std::vector<Track> tracks;  // ascending (process set, family), only those with events
  int64_t event_count = 0;

  // The world's track of `family`.
  const Track* track(TrackFamily family) const {
    for (const Track& t : tracks)
      if (t.family == family && t.process_set == 0) return &t;
    return nullptr;
  }
  // Every track of `family`: the world's and each process set's.
  std::vector<const Track*> tracks_of(TrackFamily family) const {
    std::vector<const Track*> out;
    for (const Track& t : tracks)
      if (t.family == family) out.push_back(&t);
    return out;
  }
};

}  // namespace ringscope::view
