// Builds display tracks from lane columns: merge, order, pack into rows
// (see track.h).
#include "track.h"

#include <algorithm>
#include <numeric>

namespace ringscope::view {

TrackFamily track_family_of_lane(Lane lane) {
  switch (lane) {
    case Lane::kCycle:
      return TrackFamily::kCycle;
    case Lane::kNegotiation:
      return TrackFamily::kNegotiation;
    case Lane::kFusion:
      return TrackFamily::kFusion;
    case Lane::kCollective:
    case Lane::kCallback:
      return TrackFamily::kCollective;
    case Lane::kRing:
      return TrackFamily::kRing;
    case Lane::kUser:
    case Lane::kSettings:
    case Lane::kAutotune:
      return TrackFamily::kUser;
    case Lane::kErrors:
      return TrackFamily::kErrors;
    default:
      return TrackFamily::kOther;
  }
}

const char* track_family_name(TrackFamily family) {
  switch (family) {
    case TrackFamily::kCycle:
      return "cycle";
    case TrackFamily::kNegotiation:
      return "negotiation";
    case TrackFamily::kFusion:
      return "fusion / copies";
    case TrackFamily::kCollective:
      return "collective";
    case TrackFamily::kRing:
      return "ring steps";
    case TrackFamily::kUser:
      return "steps / settings";
    case TrackFamily::kErrors:
      return "errors";
    case TrackFamily::kOther:
      return "other";
  }
  return "other";
}

int track_max_rows(TrackFamily family) {
  switch (family) {
    case TrackFamily::kCycle:
    case TrackFamily::kErrors:
      return 1;
    case TrackFamily::kUser:
      // An online-tuned run nests three spans (the decision, its trials,
      // their back-to-back windows) over the STEP and SETTINGS marks: in one
      // shared row everything folded into one box at every zoom.
      return 4;
    default:
      return 2;
  }
}

size_t Track::memory_bytes() const {
  size_t bytes = events.memory_bytes() + row_begin.capacity() * sizeof(uint32_t);
  for (const auto& envelope : row_end_envelope) bytes += envelope.memory_bytes();
  for (const auto& blocks : row_block_max_end) bytes += blocks.capacity() * sizeof(int64_t);
  return bytes;
}

int64_t Track::max_draw_end(size_t row, size_t lo, size_t hi) const {
  if (row_end_envelope[row].empty()) return draw_end(hi - 1);  // ends increase
  const std::vector<int64_t>& blocks = row_block_max_end[row];
  const size_t base = row_begin[row];
  int64_t best = INT64_MIN;
  size_t i = lo;
  while (i < hi) {
    const size_t offset = i - base;
    if (offset % kEndBlock == 0 && i + kEndBlock <= hi) {
      best = std::max(best, blocks[offset / kEndBlock]);
      i += kEndBlock;
    } else {
      best = std::max(best, draw_end(i));
      ++i;
    }
  }
  return best;
}

size_t Track::skip_ending_before(size_t row, size_t i, size_t hi, int64_t t) const {
  const bool blocked = !row_end_envelope[row].empty();
  const size_t base = row_begin[row];
  while (i < hi && events.start_ns[i] < t) {
    const size_t offset = i - base;
    if (blocked && offset % kEndBlock == 0 && i + kEndBlock <= hi &&
        row_block_max_end[row][offset / kEndBlock] < t && events.start_ns[i + kEndBlock - 1] < t) {
      i += kEndBlock;
      continue;
    }
    if (draw_end(i) >= t) break;
    ++i;
  }
  return i;
}

void append_event(LaneColumns& to, const LaneColumns& from, size_t i) {
  const int64_t dur = from.dur_ns(i);
  if (dur >= 0 && dur < LaneColumns::kLongDuration) {
    to.dur_ns_u32.push_back(static_cast<uint32_t>(dur));
  } else {
    to.long_durations.emplace_back(static_cast<uint32_t>(to.size()), dur);
    to.dur_ns_u32.push_back(LaneColumns::kLongDuration);
  }
  to.start_ns.push_back(from.start_ns[i]);
  to.cycle.push_back(from.cycle[i]);
  to.bytes.push_back(from.bytes[i]);
  to.name_id.push_back(from.name_id[i]);
  to.seq_index.push_back(from.seq_index[i]);
  to.kind.push_back(from.kind[i]);
  to.process_set.push_back(i < from.process_set.size() ? from.process_set[i] : 0);
}

Track build_track(TrackFamily family, const std::vector<const LaneColumns*>& lanes) {
  // 1. One list of (lane, index), ordered by start, longest first on ties.
  struct Ref {
    int64_t start, end;
    uint32_t lane, index;
  };
  std::vector<Ref> refs;
  size_t total = 0;
  for (const LaneColumns* lane : lanes) total += lane->size();
  refs.reserve(total);
  for (uint32_t l = 0; l < lanes.size(); ++l)
    for (size_t i = 0; i < lanes[l]->size(); ++i) {
      const int64_t start = lanes[l]->start_ns[i];
      refs.push_back({start, std::max(start, lanes[l]->end_ns(i)), l, static_cast<uint32_t>(i)});
    }
  std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });

  // 2. Greedy packing: the first row free at the event's start, else the last row.
  const int max_rows = track_max_rows(family);
  std::vector<int64_t> row_end;
  std::vector<uint8_t> row_of(refs.size());
  for (size_t k = 0; k < refs.size(); ++k) {
    size_t row = 0;
    while (row < row_end.size() && row_end[row] > refs[k].start) ++row;
    if (row == row_end.size()) {
      if (static_cast<int>(row_end.size()) < max_rows)
        row_end.push_back(refs[k].end);
      else
        row = row_end.size() - 1;
    }
    row_end[row] = std::max(row_end[row], refs[k].end);
    row_of[k] = static_cast<uint8_t>(row);
  }

  // 3. Scatter into one column set grouped by row.
  Track track;
  track.family = family;
  const size_t rows = row_end.size();
  std::vector<uint32_t> counts(rows, 0);
  for (uint8_t row : row_of) ++counts[row];
  track.row_begin.assign(rows + 1, 0);
  for (size_t r = 0; r < rows; ++r) track.row_begin[r + 1] = track.row_begin[r] + counts[r];
  EventColumns& ev = track.events;
  ev.reserve(total);
  for (size_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < refs.size(); ++k)
      if (row_of[k] == r) ev.append(*lanes[refs[k].lane], refs[k].index);

  // 4. Rows whose events overlap (only the shared last row can) get a
  //    running-maximum envelope of their ends.
  track.row_end_envelope.resize(rows);
  track.row_block_max_end.resize(rows);
  track.first_ns = refs.empty() ? 0 : refs.front().start;
  track.last_ns = track.first_ns;
  for (size_t r = 0; r < rows; ++r) {
    bool overlaps = false;
    int64_t running = INT64_MIN;
    for (size_t i = track.row_begin[r]; i < track.row_begin[r + 1]; ++i) {
      if (ev.start_ns[i] < running) overlaps = true;
      running = std::max(running, track.draw_end(i));
    }
    track.last_ns = std::max(track.last_ns, running);
    if (!overlaps) continue;
    CompactInt64Column& envelope = track.row_end_envelope[r];
    envelope.reserve(track.row_begin[r + 1] - track.row_begin[r]);
    std::vector<int64_t>& blocks = track.row_block_max_end[r];
    running = INT64_MIN;
    for (size_t i = track.row_begin[r]; i < track.row_begin[r + 1]; ++i) {
      running = std::max(running, track.draw_end(i));
      envelope.push_back(running - ev.start_ns[i]);
      const size_t block = (i - track.row_begin[r]) / Track::kEndBlock;
      if (block == blocks.size()) blocks.push_back(INT64_MIN);
      blocks[block] = std::max(blocks[block], track.draw_end(i));
    }
  }
  return track;
}

}  // namespace ringscope::view
