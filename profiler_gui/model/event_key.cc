// Naming an event stably and finding it again after a reload (see event_key.h).
#include "event_key.h"

#include <algorithm>

#include "ringscope/saturating.h"

namespace ringscope::view {

EventKey event_key_of(const TimelineModel& model, const EventRef& ref) {
  const EventColumns& e = model.track(ref).events;
  EventKey key;
  key.rank = model.ranks()[ref.rank_index].info.rank;
  key.kind = e.kind[ref.event];
  key.start_ns = e.start_ns[ref.event];
  key.seq_index = e.seq_index[ref.event];
  key.local_start_ns = model.ranks()[ref.rank_index].info.to_local(key.start_ns);
  return key;
}

std::optional<EventRef> find_event(const TimelineModel& model, const EventKey& key) {
  const std::vector<RankTimeline>& ranks = model.ranks();
  const TrackFamily family = track_family_of_lane(lane_of_kind(key.kind));
  std::optional<EventRef> best;
  int64_t best_distance = 0;
  for (uint32_t r = 0; r < ranks.size(); ++r) {
    if (ranks[r].info.rank != key.rank) continue;
    const bool local = key.local_start_ns != EventKey::kUnknown;
    const int64_t at = local ? ranks[r].info.to_rank0(key.local_start_ns) : key.start_ns;
    const int64_t tolerance = local ? 1000 : 0;
    for (uint32_t t = 0; t < ranks[r].tracks.size(); ++t) {
      const Track& track = ranks[r].tracks[t];
      if (track.family != family) continue;
      const EventColumns& e = track.events;
      for (size_t row = 0; row < track.rows(); ++row) {
        const auto begin = e.start_ns.begin() + track.row_begin[row];
        const auto end = e.start_ns.begin() + track.row_begin[row + 1];
        for (auto it = std::lower_bound(begin, end, saturating_sub(at, tolerance));
             it != end && *it <= saturating_add(at, tolerance); ++it) {
          const auto i = static_cast<uint32_t>(it - e.start_ns.begin());
          if (e.kind[i] != key.kind || e.seq_index[i] != key.seq_index) continue;
          const int64_t distance = *it > at ? *it - at : at - *it;
          if (!best || distance < best_distance) best = EventRef{r, t, i}, best_distance = distance;
        }
      }
    }
  }
  return best;
}

}  // namespace ringscope::view
