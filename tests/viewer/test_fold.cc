// The timeline fold and track packing: the fold equals a plain one-event-at-
// a-time reference, its output is bounded by the screen width however many
// events are visible, and rows never hold overlapping events.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <random>

#include "fold.h"
#include "track.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {

void push(LaneColumns& c, uint16_t kind, int64_t start, int64_t dur) {
  LaneColumns one;
  one.start_ns = {start};
  one.dur_ns_u32 = {static_cast<uint32_t>(dur)};
  one.cycle = {-1}, one.bytes = {0}, one.name_id = {-1}, one.seq_index = {-1}, one.kind = {kind};
  append_event(c, one, 0);
}

constexpr uint16_t kCycleKind = static_cast<uint16_t>(EventKind::kCycle);

// Non-overlapping events: random gaps, a mix of narrow and wide durations.
LaneColumns random_row(std::mt19937_64& rng, size_t n) {
  LaneColumns c;
  std::exponential_distribution<double> gap(1.0 / 200), narrow(1.0 / 20), wide(1.0 / 5000);
  std::bernoulli_distribution is_wide(0.1);
  int64_t t = 0;
  for (size_t i = 0; i < n; ++i) {
    t += 1 + static_cast<int64_t>(gap(rng));  // distinct starts: no ties, no overlap
    const int64_t dur = static_cast<int64_t>(is_wide(rng) ? wide(rng) : narrow(rng));
    push(c, kCycleKind, t, dur);
    t += dur;
  }
  return c;
}

struct Expected {
  uint32_t first, count;
};

// One event at a time: a narrow event starts a run that absorbs each next
// event while it is narrow, starts less than min_ns after the run's end and
// the run has not passed the view's end.
std::vector<Expected> reference_fold(const Track& t, const FoldRequest& r) {
  const double px_per_ns = r.width_px / static_cast<double>(r.end_ns - r.begin_ns);
  const int64_t min_ns =
      std::max<int64_t>(1, static_cast<int64_t>(std::ceil(r.min_px / px_per_ns)));
  std::vector<Expected> out;
  size_t i = 0;
  const size_t n = t.size();
  while (i < n && t.draw_end(i) < r.begin_ns) ++i;
  while (i < n && t.events.start_ns[i] <= r.end_ns) {
    int64_t run_end = t.draw_end(i);
    size_t j = i + 1;
    if (run_end - t.events.start_ns[i] < min_ns)
      while (j < n && run_end <= r.end_ns && t.draw_end(j) - t.events.start_ns[j] < min_ns &&
             t.events.start_ns[j] - run_end < min_ns)
        run_end = std::max(run_end, t.draw_end(j++));
    out.push_back({static_cast<uint32_t>(i), static_cast<uint32_t>(j - i)});
    i = j;
  }
  return out;
}

}  // namespace

TEST_CASE("fold equals the one-event-at-a-time reference", "[fold]") {
  std::mt19937_64 rng(7);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{97}, size_t{20'000}}) {
    LaneColumns row = random_row(rng, n);
    const Track track = build_track(TrackFamily::kCycle, {&row});
    REQUIRE(track.rows() == (n ? 1u : 0u));
    REQUIRE(track.size() == n);
    const int64_t total = n ? track.last_ns - track.first_ns : 1000;
    std::uniform_int_distribution<int64_t> pick(-total / 10, total);
    for (int trial = 0; trial < 60; ++trial) {
      int64_t a = pick(rng), b = pick(rng);
      if (a == b) continue;
      if (a > b) std::swap(a, b);
      FoldRequest request{a, b, static_cast<float>(200 + trial * 37), 3.0f};
      std::vector<FoldItem> items;
      fold_track(track, request, &items);
      const std::vector<Expected> expected = reference_fold(track, request);
      REQUIRE(items.size() == expected.size());
      for (size_t k = 0; k < items.size(); ++k) {
        CHECK(items[k].first == expected[k].first);
        CHECK(items[k].count == expected[k].count);
        CHECK(items[k].x0 <= items[k].x1);
      }
    }
  }
}

TEST_CASE("fold output is bounded by the screen, not by the event count", "[fold]") {
  LaneColumns row;
  const size_t n = 2'000'000;
  for (size_t i = 0; i < n; ++i) push(row, kCycleKind, static_cast<int64_t>(i) * 15, 10);
  const Track track = build_track(TrackFamily::kCycle, {&row});
  const float width = 1500;
  std::vector<FoldItem> items;
  fold_track(track, {track.first_ns, track.last_ns, width, 3.0f}, &items);
  CHECK(items.size() <= static_cast<size_t>(width / 3) + 2);
  uint64_t covered = 0;
  for (const FoldItem& item : items) covered += item.count;
  CHECK(covered == n);  // every visible event is in exactly one item
  // Deep zoom: one item per event, at its own pixel position.
  items.clear();
  fold_track(track, {15'000, 15'000 + 150, 1500, 3.0f}, &items);
  REQUIRE(items.size() == 11);  // events 1000..1010 overlap [15000, 15150]
  CHECK(items[0].count == 1);
  CHECK(items[0].x0 == Approx(0.0f));
  CHECK(items[0].x1 == Approx(100.0f));
  CHECK(items[1].x0 == Approx(150.0f));
}

TEST_CASE("overlapping events share the last row and still fold by the screen", "[fold]") {
  // 100 concurrent negotiations per burst (a real step enqueues many tensors),
  // more than the 2 rows the negotiation track has.
  LaneColumns lane;
  const uint16_t negotiate = static_cast<uint16_t>(EventKind::kNegotiate);
  for (int burst = 0; burst < 2000; ++burst)
    for (int k = 0; k < 100; ++k)
      push(lane, negotiate, burst * 100'000 + k * 300, 50'000 - k * 300);
  const Track track = build_track(TrackFamily::kNegotiation, {&lane});
  REQUIRE(track.rows() == 2);
  CHECK(track.row_end_envelope[0].empty());
  CHECK_FALSE(track.row_end_envelope[1].empty());
  // Rows below the last never overlap.
  for (size_t r = 0; r + 1 < track.rows(); ++r)
    for (size_t i = track.row_begin[r] + 1; i < track.row_begin[r + 1]; ++i)
      CHECK(track.events.start_ns[i] >= track.draw_end(i - 1));
  std::vector<FoldItem> items;
  const float width = 1200;
  fold_track(track, {track.first_ns, track.last_ns, width, 3.0f}, &items);
  uint64_t covered = 0;
  for (const FoldItem& item : items) covered += item.count;
  CHECK(covered == track.size());
  CHECK(items.size() <= 2 * (static_cast<size_t>(width / 3) + 2));
}

TEST_CASE("on equal starts the longer event takes the upper row", "[fold]") {
  LaneColumns fusion;
  push(fusion, static_cast<uint16_t>(EventKind::kMemcpyIn), 1000, 90);
  push(fusion, static_cast<uint16_t>(EventKind::kFusion), 1000, 500);
  push(fusion, static_cast<uint16_t>(EventKind::kMemcpyOut), 1400, 90);
  const Track track = build_track(TrackFamily::kFusion, {&fusion});
  REQUIRE(track.rows() == 2);
  CHECK(track.events.kind[0] == static_cast<uint16_t>(EventKind::kFusion));
  CHECK(track.row_begin[1] == 1);  // both copies in row 1
  CHECK(track.first_ns == 1000);
  CHECK(track.last_ns == 1500);
}

TEST_CASE("a long span in the shared row does not turn the events before the view into items",
          "[fold]") {
  // A stalled tensor's negotiation lasts 1 s in the shared row, beside pairs
  // of overlapping negotiations every microsecond. Zoomed to 10 us in the
  // middle, only what is in view becomes an item.
  LaneColumns lane;
  const uint16_t negotiate = static_cast<uint16_t>(EventKind::kNegotiate);
  push(lane, negotiate, 0, 500);
  push(lane, negotiate, 100, 1'000'000'000);  // row 0 is busy: the shared row
  for (int64_t t = 1000; t < 1'000'000'000; t += 1000) {
    push(lane, negotiate, t, 600);
    push(lane, negotiate, t + 100, 600);  // overlaps: the shared row too
  }
  const Track track = build_track(TrackFamily::kNegotiation, {&lane});
  REQUIRE(track.rows() == 2);
  std::vector<FoldItem> items;
  fold_track(track, {500'000'000, 500'010'000, 1000, 3.0f}, &items);
  size_t left_of_view = 0;
  for (const FoldItem& item : items) left_of_view += item.x1 < 0;
  CHECK(left_of_view == 0);
  CHECK(items.size() < 100);
}

TEST_CASE("after a long span in the shared row, each folded run ends where its own events end",
          "[fold]") {
  // The running envelope of the shared row stays at the long span's end for
  // everything after it; taken for a run's end, every run after the span
  // was drawn to the right edge of the view.
  LaneColumns lane;
  const uint16_t negotiate = static_cast<uint16_t>(EventKind::kNegotiate);
  push(lane, negotiate, 0, 500);
  push(lane, negotiate, 100, 1'000'000'000);                 // the stalled tensor, 1 s
  for (int64_t t = 1000; t < 1'000'000'000; t += 100'000) {  // two pairs every 100 us
    push(lane, negotiate, t, 600);
    push(lane, negotiate, t + 100, 600);
    push(lane, negotiate, t + 1000, 600);
    push(lane, negotiate, t + 1100, 600);
  }
  const Track track = build_track(TrackFamily::kNegotiation, {&lane});
  REQUIRE(track.rows() == 2);
  std::vector<FoldItem> items;
  // 10 ms at 1000 px: 10 us per px, runs of 3 px merge; each pair is 0.07 px.
  fold_track(track, {500'000'000, 510'000'000, 1000, 3.0f}, &items);
  // Each pair's first event is in row 0, its second beside the long span in
  // the shared row; the two of a row 1 us apart fold into one item: 100
  // two-event items per row, plus the long span.
  int in_shared_row = 0;
  for (const FoldItem& item : items) {
    if (track.events.dur[item.first] >= 1'000'000) continue;  // the long span itself
    in_shared_row += item.row == 1;
    INFO("row " << int(item.row) << ", " << item.count << " event(s) at " << item.x0 << ".."
                << item.x1);
    CHECK(item.x1 - item.x0 < 1.0f);
    CHECK(item.count == 2);
  }
  CHECK(in_shared_row == 100);
  CHECK(items.size() == 201);
  // The same far from the span's start (the events before the view skipped
  // a block at a time).
  items.clear();
  fold_track(track, {900'000'000, 910'000'000, 1000, 3.0f}, &items);
  CHECK(items.size() == 201);
}

TEST_CASE("an online-tuned run's nested spans leave its STEP marks unfolded", "[fold]") {
  // A decision over its trials over back-to-back windows, STEP marks every
  // 10 ms inside: with one shared row every mark folded at every zoom.
  LaneColumns lane;
  const uint16_t trial = static_cast<uint16_t>(EventKind::kAutotuneTrial);
  const uint16_t step = static_cast<uint16_t>(EventKind::kStep);
  constexpr int64_t kMs = 1'000'000;
  push(lane, trial, 0, 1000 * kMs);  // the decision
  push(lane, trial, 0, 500 * kMs);   // two trials
  push(lane, trial, 500 * kMs, 500 * kMs);
  for (int64_t w = 0; w < 10; ++w) push(lane, trial, w * 100 * kMs, 100 * kMs);  // windows
  for (int64_t m = 5; m < 1000; m += 10) push(lane, step, m * kMs, 0);
  const Track track = build_track(TrackFamily::kUser, {&lane});
  std::vector<FoldItem> items;
  fold_track(track, {150 * kMs, 170 * kMs, 1000, 3.0f}, &items);
  int marks = 0;
  for (const FoldItem& item : items)
    if (item.kind == step) {
      CHECK(item.count == 1);
      ++marks;
    }
  CHECK(marks == 2);  // 155 and 165 ms
}
