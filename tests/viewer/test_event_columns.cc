// The viewer's compact event columns: 32-bit storage with an overflow list
// reads back every int64 exactly (checked against a plain vector), and a
// track built from the reader's columns keeps durations, cycles and byte
// counts that do not fit in 32 bits, and end envelopes far from the start.
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "event_columns.h"
#include "track.h"

using namespace ringscope;
using namespace ringscope::view;

TEST_CASE("compact int64 column equals a plain vector, overflow included", "[model][columns]") {
  const std::vector<int64_t> edges = {0,
                                      -1,
                                      1,
                                      INT32_MAX,
                                      int64_t{INT32_MAX} + 1,
                                      INT32_MIN,  // the escape value itself overflows
                                      int64_t{INT32_MIN} + 1,
                                      int64_t{INT32_MIN} - 1,
                                      std::numeric_limits<int64_t>::max(),
                                      std::numeric_limits<int64_t>::min(),
                                      int64_t{1} << 40};
  for (size_t n : {size_t{0}, size_t{1}, size_t{97}, size_t{100'000}}) {
    std::mt19937_64 rng(n);
    std::vector<int64_t> plain;
    CompactInt64Column column;
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      switch (rng() % 4) {
        case 0:
          v = edges[rng() % edges.size()];
          break;
        case 1:
          v = static_cast<int64_t>(rng());  // mostly large
          break;
        default:
          v = static_cast<int64_t>(rng() % 2'000'000) - 1'000'000;  // small
      }
      plain.push_back(v);
      column.push_back(v);
    }
    REQUIRE(column.size() == n);
    CHECK(column.empty() == (n == 0));
    size_t large = 0;
    for (size_t i = 0; i < n; ++i) {
      CHECK(column[i] == plain[i]);
      large += plain[i] <= INT32_MIN || plain[i] > INT32_MAX;
    }
    CHECK(column.overflow_count() == large);
    column.shrink_to_fit();
    CHECK(column.memory_bytes() == n * sizeof(int32_t) + large * 16);
  }
}

TEST_CASE("track columns keep values wider than 32 bits", "[model][columns]") {
  LaneColumns lane;
  auto push = [&](int64_t start, int64_t dur, int64_t cycle, int64_t bytes) {
    LaneColumns one;
    one.start_ns = {start};
    one.dur_ns_u32 = {0};
    if (dur >= 0 && dur < LaneColumns::kLongDuration)
      one.dur_ns_u32 = {static_cast<uint32_t>(dur)};
    else
      one.dur_ns_u32 = {LaneColumns::kLongDuration}, one.long_durations = {{0, dur}};
    one.cycle = {cycle}, one.bytes = {bytes}, one.name_id = {7}, one.seq_index = {3};
    one.kind = {static_cast<uint16_t>(EventKind::kAllreduce)};
    append_event(lane, one, 0);
  };
  const int64_t day = int64_t{86'400} * 1'000'000'000;   // a 1-day span: > 2^32 ns
  push(1'000, day, int64_t{1} << 33, int64_t{6} << 30);  // 6 GiB
  push(2'000, day / 2, -1, 0);                           // inside the long one: second row
  push(2'100, 10, 4, 0);                                 // overlaps both: shares the last row
  push(3'000, -20, 5, 100);                              // corrupt: ends before it starts
  push(day + 5'000, 10, 6, 1);
  const Track t = build_track(TrackFamily::kCollective, {&lane});
  REQUIRE(t.size() == 5);
  REQUIRE(t.rows() == 2);
  REQUIRE(!t.row_end_envelope[1].empty());
  bool saw_long = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const EventColumns& e = t.events;
    CHECK(e.name_id[i] == 7);
    CHECK(e.seq_index[i] == 3);
    if (e.start_ns[i] == 1'000) {
      saw_long = true;
      CHECK(e.dur_ns(i) == day);
      CHECK(e.end_ns(i) == 1'000 + day);
      CHECK(e.cycle[i] == int64_t{1} << 33);
      CHECK(e.bytes[i] == int64_t{6} << 30);
    }
    if (e.start_ns[i] == 3'000) CHECK(e.dur_ns(i) == -20);
    if (e.start_ns[i] == 2'000) CHECK(e.cycle[i] == -1);
    // The envelope of the short event is the half-day span's end: > 2^32 ns away.
    if (e.start_ns[i] == 2'100) CHECK(t.end_envelope(1, i) == 2'000 + day / 2);
  }
  CHECK(saw_long);
  CHECK(t.last_ns == day + 5'010);
  // Envelopes (the shared last row) hold ends more than 2^32 ns past a start.
  for (size_t row = 0; row < t.rows(); ++row)
    for (size_t i = t.row_begin[row]; i < t.row_begin[row + 1]; ++i)
      CHECK(t.end_envelope(row, i) >= t.draw_end(i));
  CHECK(t.memory_bytes() >= t.size() * 30);
}
