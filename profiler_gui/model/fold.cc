// The timeline's fold (see fold.h). Within a row events do not overlap, so
// their draw ends increase (the shared last row uses a running-max envelope)
// and "everything that ends before t" is a prefix found by binary search.
#include "fold.h"

#include <algorithm>
#include <cmath>

namespace ringscope::view {
namespace {

// First index in [lo, hi) of `row` whose end envelope is >= t (hi if none).
size_t first_ending_at_or_after(const Track& track, size_t row, size_t lo, size_t hi, int64_t t) {
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (track.end_envelope(row, mid) < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

// First index in [lo, hi) whose start is >= t (hi if none).
size_t first_starting_at_or_after(const EventColumns& ev, size_t lo, size_t hi, int64_t t) {
  auto begin = ev.start_ns.begin();
  return static_cast<size_t>(
      std::lower_bound(begin + static_cast<ptrdiff_t>(lo), begin + static_cast<ptrdiff_t>(hi), t) -
      begin);
}

}  // namespace

void fold_track(const Track& track, const FoldRequest& request, std::vector<FoldItem>* out) {
  const int64_t t0 = request.begin_ns, t1 = std::max(request.end_ns, request.begin_ns + 1);
  const double px_per_ns = static_cast<double>(request.width_px) / static_cast<double>(t1 - t0);
  // Events shorter than min_ns fold; at least 1 ns so instants always count as narrow.
  const int64_t min_ns =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(request.min_px / px_per_ns)));
  const double lo_px = -2.0, hi_px = request.width_px + 2.0;
  auto to_px = [&](int64_t t) {
    const double x = static_cast<double>(t - t0) * px_per_ns;
    return static_cast<float>(std::clamp(x, lo_px, hi_px));
  };
  const EventColumns& ev = track.events;

  for (size_t row = 0; row < track.rows(); ++row) {
    const size_t row_end = track.row_begin[row + 1];
    const bool overlapping_row = !track.row_end_envelope[row].empty();
    size_t i = first_ending_at_or_after(track, row, track.row_begin[row], row_end, t0);
    while (i < row_end && ev.start_ns[i] <= t1) {
      const int64_t start = ev.start_ns[i];
      int64_t run_end = track.draw_end(i);
      size_t j = i + 1;
      if (overlapping_row) {
        // The shared last row: events overlap, so width says little. Merge
        // every event that starts within min_ns of the run's end (by start,
        // which is sorted); the target grows by >= min_ns every two steps.
        while (j < row_end && run_end <= t1) {
          const size_t k = first_starting_at_or_after(ev, j, row_end, run_end + min_ns);
          if (k == j) break;
          run_end = std::max(run_end, track.max_draw_end(row, j, k));  // this run's own
          j = k;
        }
      } else if (run_end - start < min_ns) {
        // A narrow event: absorb the following narrow events that start within
        // min_ns of the run's end, a binary search per step of >= min_ns.
        while (j < row_end && run_end <= t1) {
          // Events ending before the target are narrow and close; past the
          // view's end the run stops growing.
          const int64_t target = std::min(run_end + min_ns, t1 + 1);
          const size_t k = first_ending_at_or_after(track, row, j, row_end, target);
          if (k > j) run_end = std::max(run_end, track.end_envelope(row, k - 1)), j = k;
          if (j >= row_end || run_end > t1) break;
          const int64_t next_start = ev.start_ns[j], next_end = track.draw_end(j);
          if (next_end - next_start >= min_ns || next_start - run_end >= min_ns) break;
          run_end = std::max(run_end, next_end);
          ++j;
        }
      }
      FoldItem item;
      item.x0 = to_px(start);
      item.x1 = to_px(run_end);
      item.first = static_cast<uint32_t>(i);
      item.count = static_cast<uint32_t>(j - i);
      item.kind = ev.kind[i];
      item.row = static_cast<uint8_t>(row);
      out->push_back(item);
      i = j;
      // In the shared row a long span (a stalled tensor's negotiation) lifts
      // the end envelope: the events under it that end before the view would
      // each become an item at its left edge. Skip them.
      if (overlapping_row) i = track.skip_ending_before(row, i, row_end, t0);
    }
  }
}

}  // namespace ringscope::view
