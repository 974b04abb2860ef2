// View actions without a window: zooming to a dragged range (Shift + drag),
// jumping to a search match, and the fit-selection key (Z) on a synthetic
// 4-rank run; the visible range they leave behind is checked.
#include <sqlite3.h>

#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "collective_search.h"
#include "panels.h"
#include "trace_test_util.h"
#include "viewer_test_util.h"

using namespace ringscope;
using namespace ringscope::view;

TEST_CASE("zoom to a range, jump to a collective, fit the selection", "[actions]") {
  test::TempDir dir;
  test::write_synthetic_run(dir.file("run.sqlite"), test::four_ranks());
  TimelineModel model;
  REQUIRE(model.load({dir.file("run.sqlite")}).ok());
  ViewState state;
  fit_all(model, state);
  const int64_t full = state.view_end_ns - state.view_begin_ns;

  SECTION("a dragged range, either direction") {
    zoom_to(model, state, 3'000'000, 2'000'000);
    CHECK(state.view_begin_ns == 2'000'000);
    CHECK(state.view_end_ns == 3'000'000);
    zoom_to(model, state, 5'000'000, 5'000'010);  // below the minimum span: widened
    CHECK(state.view_end_ns - state.view_begin_ns >= 50);
  }

  SECTION("jumping to a search match selects it and zooms to it") {
    const auto matches = search_tensors(model, "layer1/w2", 100);
    REQUIRE(matches.size() == 12);
    const TensorMatch& m = matches[7];
    jump_to_collective(model, state, m.key);
    REQUIRE(state.selected_collective);
    CHECK(*state.selected_collective == m.key);
    const CollectiveReadiness* c = model.trace().stragglers.find(m.key);
    CHECK(state.view_begin_ns <= c->start_ns);
    CHECK(state.view_end_ns >= c->end_ns);
    CHECK(state.view_end_ns - state.view_begin_ns < full / 20);  // zoomed in, not merely visible
  }

  SECTION("fit selection: the collective, else the event, else nothing") {
    CHECK(!fit_selection(model, state));
    CHECK(state.view_end_ns - state.view_begin_ns == full);
    state.selected_collective = CollectiveKey{4, 0};
    REQUIRE(fit_selection(model, state));
    const CollectiveReadiness* c = model.trace().stragglers.find({4, 0});
    CHECK(state.view_begin_ns <= c->start_ns);
    CHECK(state.view_end_ns >= c->end_ns);
    CHECK(state.view_end_ns - state.view_begin_ns < full / 20);

    state.selected_collective.reset();
    const RankTimeline& rank0 = model.ranks()[0];
    uint32_t cycle_track = 0;
    while (rank0.tracks[cycle_track].family != TrackFamily::kCycle) ++cycle_track;
    state.selected_event = EventRef{0, cycle_track, 3};  // the CYCLE span of cycle 3
    REQUIRE(fit_selection(model, state));
    const Track& t = rank0.tracks[cycle_track];
    CHECK(state.view_begin_ns < t.events.start_ns[3]);
    CHECK(state.view_end_ns > t.draw_end(3));
    CHECK(state.view_end_ns - state.view_begin_ns < 2 * (t.draw_end(3) - t.events.start_ns[3]));
  }
}

TEST_CASE("fit all covers a trace whose clock offset is near the end of int64", "[actions]") {
  // A damaged (or hand-edited) offset puts rank 1 3e18 ns away: the range
  // arithmetic overflowed and fit-all showed an empty 50 ns window.
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 2;
  run.cycles = 4;
  const std::vector<std::string> files = test::write_synthetic_run(dir.file("far.sqlite"), run);
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(files[1].c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "UPDATE ranks SET clock_offset_ns = 3000000000000000000, "
                       "clock_offset_end_ns = 3000000000000000000",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  TimelineModel model;
  REQUIRE(model.load({dir.file("far.sqlite")}).ok());
  REQUIRE(model.trace().end_ns - model.trace().begin_ns > 1'000'000'000'000'000'000);
  ViewState state;
  fit_all(model, state);
  CHECK(state.view_begin_ns <= model.trace().begin_ns);
  CHECK(state.view_end_ns >= model.trace().end_ns);
  pan_by(model, state, std::numeric_limits<int64_t>::max());
  CHECK(state.view_end_ns > state.view_begin_ns);
  zoom_at(model, state, std::numeric_limits<int64_t>::min(), 0.5);
  CHECK(state.view_end_ns > state.view_begin_ns);
}

TEST_CASE("screen x of any time stays finite and near the timeline", "[actions]") {
  // 100 ns over 1000 px: 10 px per ns.
  TimeToScreen map{1'000, 1'100, 50, 1000};
  CHECK(map.x(1'050) == Approx(550));
  CHECK(map.x(1'000) == Approx(50));
  // A highlight a second away at this zoom is 1e10 px out: held at 1e6.
  CHECK(map.x(1'000'000'001'000) == Approx(50 + 1000 + TimeToScreen::kFarPx));
  CHECK(map.x(-1'000'000'000) == Approx(50 - TimeToScreen::kFarPx));
  // Times at the ends of int64 (a damaged trace) do not overflow.
  const TimeToScreen wide{std::numeric_limits<int64_t>::min() / 2,
                          std::numeric_limits<int64_t>::max() / 2, 0, 800};
  CHECK(wide.x(0) == Approx(400));
  CHECK(std::isfinite(wide.x(std::numeric_limits<int64_t>::max())));
  CHECK(wide.x(std::numeric_limits<int64_t>::min()) < 0);
}
