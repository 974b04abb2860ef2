// A display track: one rank's events of one activity family (one or more
// trace lanes), packed into rows in which events never overlap, so the fold
// can binary-search each row by end time. Built once at load; read-only after.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "event_columns.h"
#include "ringscope/trace_reader.h"

namespace ringscope::view {

// What a track shows; the viewer draws one track per family that has events.
enum class TrackFamily : uint8_t {
  kCycle,        // lane cycle
  kNegotiation,  // lane negotiation
  kFusion,       // lane fusion: FUSION groups, members, copies
  kCollective,   // lanes collective + callback
  kRing,         // lane ring: reduce-scatter / allgather / broadcast steps
  kUser,         // lanes user + settings + autotune: step marks and knobs
  kErrors,       // lane errors
  kOther,        // kinds unknown to this build
};
inline constexpr int kTrackFamilyCount = 8;

TrackFamily track_family_of_lane(Lane lane);
const char* track_family_name(TrackFamily family);  // "negotiation", "fusion / copies", ...
// Rows a family may use; events that overlap all of them share the last row.
// An instant at the same time as a span's start counts as overlapping it.
int track_max_rows(TrackFamily family);

struct Track {
  TrackFamily family = TrackFamily::kOther;
  uint16_t process_set = 0;         // its events' process set (0: the world's)
  EventColumns events;              // grouped by row; within a row sorted by start
  std::vector<uint32_t> row_begin;  // row r holds events [row_begin[r], row_begin[r+1])
  // Per row: empty when its events never overlap (so draw ends increase),
  // else the running maximum of draw_end (only the shared last row can
  // overlap), stored as its distance from the event's start (>= 0, 32 bits).
  std::vector<CompactInt64Column> row_end_envelope;
  // Per row with an envelope: the largest draw_end of each block of
  // kEndBlock events, so the fold finds the end of a run of events, and skips
  // events that end before the view, without one step per event (a long span
  // early in the row lifts the envelope for everything after it).
  static constexpr size_t kEndBlock = 64;
  std::vector<std::vector<int64_t>> row_block_max_end;
  int64_t first_ns = 0, last_ns = 0;  // earliest start, latest draw end

  size_t rows() const { return row_begin.empty() ? 0 : row_begin.size() - 1; }
  size_t size() const { return events.size(); }
  // End used for drawing: never before the start (a corrupt span may end earlier).
  // Inline, as the two below: the fold's binary searches call them per probe.
  int64_t draw_end(size_t i) const {
    const int64_t start = events.start_ns[i];
    return std::max(start, start + events.dur[i]);
  }
  // Largest draw end of the events of `row` up to and including i.
  int64_t end_envelope(size_t row, size_t i) const {
    const CompactInt64Column& envelope = row_end_envelope[row];
    return envelope.empty() ? draw_end(i) : events.start_ns[i] + envelope[i - row_begin[row]];
  }
  // Largest draw end of the events [lo, hi) of `row` (lo < hi).
  int64_t max_draw_end(size_t row, size_t lo, size_t hi) const;
  // First index in [i, hi) of `row` that starts at or after t or ends at or
  // after t (hi if none): the events before it all lie left of t.
  size_t skip_ending_before(size_t row, size_t i, size_t hi, int64_t t) const;
  size_t memory_bytes() const;
};

// Merges the lanes' events (each sorted by start), orders them by start and,
// on ties, longest first (a FUSION above its copies), and packs them into at
// most track_max_rows(family) rows.
Track build_track(TrackFamily family, const std::vector<const LaneColumns*>& lanes);

// Appends event i of `from` to `to` (all columns).
void append_event(LaneColumns& to, const LaneColumns& from, size_t i);

}  // namespace ringscope::view
