// Live refresh of a trace still being written: a per-rank file in WAL mode,
// never closed (no clustered layout, no end-of-run meta), loads without
// getting in the writer's way (its close() succeeds meanwhile); TraceWatch
// sees it grow; a refresh (blocking and on the worker thread) shows the new
// events; the view and selection survive the reload.
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "bookmarks.h"
#include "panels.h"
#include "ringscope/trace_writer.h"
#include "timeline_model.h"
#include "trace_test_util.h"
#include "trace_watch.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {

// `count` allreduces of 100 us, one per ms from `first`, on cycle = index.
void record_allreduces(TraceWriter& w, int32_t name, int first, int count) {
  for (int i = first; i < first + count; ++i) {
    TraceEvent e;
    e.kind = static_cast<uint16_t>(EventKind::kAllreduce);
    e.start_ns = 1'000'000 * int64_t{i};
    e.end_ns = e.start_ns + 100'000;
    e.cycle = i;
    e.seq_index = 0;
    e.name_id = name;
    e.bytes = 4096;
    w.record(e);
  }
}

}  // namespace

TEST_CASE("a trace being written loads, and refreshing shows what was added", "[live]") {
  test::TempDir dir;
  const std::string path = dir.file("live.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  const int32_t name = writer.intern("grad/live");
  record_allreduces(writer, name, 0, 10);
  REQUIRE(writer.flush().ok());

  TimelineModel model;
  REQUIRE(model.load({path}).ok());
  REQUIRE(model.ranks().size() == 1);
  CHECK_FALSE(model.ranks()[0].info.finalized);  // still open: what is there shows
  CHECK(model.trace().live_files == 1);          // read through a copy, not the live file
  CHECK(model.trace().reader.files().front() != path);
  CHECK(model.trace().event_count == 10);
  CHECK(model.refresh_state() == RefreshState::kNone);

  TraceWatch watch;
  watch.arm({path});
  REQUIRE(watch.stamps().size() == 1);
  CHECK(watch.stamps()[0].wal_size > 0);  // the writer's WAL
  CHECK_FALSE(watch.changed());

  // Select the 5th allreduce and remember the view, as the viewer does before a refresh.
  ViewState state;
  zoom_to(model, state, 3'500'000, 6'500'000);
  const Track& t = model.ranks()[0].tracks[0];
  REQUIRE(t.family == TrackFamily::kCollective);
  uint32_t fifth = 0;
  while (t.events.start_ns[fifth] != 4'000'000) ++fifth;
  state.selected_event = EventRef{0, 0, fifth};
  state.selected_collective = CollectiveKey{4, 0};
  const Bookmark anchor = bookmark_view(model, state, "before refresh");

  record_allreduces(writer, name, 10, 15);
  REQUIRE(writer.flush().ok());
  CHECK(watch.changed());
  REQUIRE(model.refresh().ok());
  CHECK(model.trace().event_count == 25);
  CHECK(model.trace().end_ns == 24'100'000);
  go_to_bookmark(model, state, anchor);
  CHECK(state.view_begin_ns == 3'500'000);
  CHECK(state.view_end_ns == 6'500'000);
  REQUIRE(state.selected_event);
  CHECK(model.track(*state.selected_event).events.start_ns[state.selected_event->event] ==
        4'000'000);
  REQUIRE(state.selected_collective);
  CHECK(state.selected_collective->cycle == 4);

  // On the worker thread: the old trace stays readable until finish_refresh.
  watch.arm({path});
  record_allreduces(writer, name, 25, 5);
  REQUIRE(writer.flush().ok());
  CHECK(watch.changed());
  model.start_refresh();
  CHECK(model.trace().event_count == 25);
  // Bounded: a refresh that never ends fails the test after a minute.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (model.refresh_state() == RefreshState::kRunning &&
         std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(model.refresh_state() != RefreshState::kRunning);
  CHECK(model.refresh_state() == RefreshState::kDone);
  CHECK(model.trace().event_count == 25);
  REQUIRE(model.finish_refresh().ok());
  CHECK(model.trace().event_count == 30);
  CHECK(model.refresh_state() == RefreshState::kNone);
  CHECK_FALSE(model.finish_refresh().ok());  // nothing pending

  // The run ends while the viewer has the trace loaded: the writer's close
  // (which needs the file alone to leave WAL mode and vacuum) still succeeds;
  // the closed file (clustered, meta complete) loads the same.
  watch.arm({path});
  REQUIRE(writer.close().ok());
  CHECK(watch.changed());
  REQUIRE(model.refresh().ok());
  CHECK(model.trace().event_count == 30);
  CHECK(model.ranks()[0].info.finalized);
  CHECK(model.trace().live_files == 0);
}

TEST_CASE("a refresh that fails keeps the trace shown", "[live]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 2;
  run.cycles = 3;
  const auto paths = test::write_synthetic_run(dir.file("run.sqlite"), run);
  TimelineModel model;
  REQUIRE(model.load({dir.path()}).ok());
  const int64_t events = model.trace().event_count;
  TraceWatch watch;
  watch.arm({dir.path()});
  CHECK(watch.stamps().size() == 2);
  CHECK_FALSE(watch.changed());
  // A third rank file appears in the directory: a change, and it is loaded.
  run.world_size = 3;
  test::write_synthetic_run(dir.file("more.sqlite"), run);  // more.rank0..2
  CHECK(watch.changed());
  std::filesystem::remove(dir.file("more.rank0.sqlite"));
  std::filesystem::remove(dir.file("more.rank1.sqlite"));
  std::filesystem::rename(dir.file("more.rank2.sqlite"), dir.file("run.rank2.sqlite"));
  REQUIRE(model.refresh().ok());
  CHECK(model.ranks().size() == 3);
  CHECK(model.trace().event_count > events);
  // The files vanish: the refresh fails, the loaded trace stays.
  for (const std::string& p : paths) std::filesystem::remove(p);
  std::filesystem::remove(dir.file("run.rank2.sqlite"));
  const Status s = model.refresh();
  CHECK_FALSE(s.ok());
  CHECK(model.state() == LoadState::kReady);
  CHECK(model.ranks().size() == 3);
}

TEST_CASE("a live trace with a mistyped second input fails, naming the input", "[live]") {
  test::TempDir dir;
  const std::string path = dir.file("live.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  record_allreduces(writer, writer.intern("grad/live"), 0, 5);
  REQUIRE(writer.flush().ok());
  TimelineModel model;
  const std::string typo = dir.file("no-such-run.sqlite");
  Status s = model.load({path, typo});
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("no-such-run") != std::string::npos);
  REQUIRE(model.load({path}).ok());  // the live file alone still loads
  CHECK(model.trace().event_count == 5);
}

TEST_CASE("a selection on rank 1 survives the end of the run, when the drift correction moves it",
          "[live]") {
  // The end clock offset is written at shutdown: loads during the run have
  // no drift correction, the last one has, and every event of rank 1 moves
  // on rank 0's clock. The selection is found again by its own clock.
  test::TempDir dir;
  const std::string base = dir.file("drift.sqlite");
  TraceWriter writers[2];
  for (int r = 0; r < 2; ++r) {
    REQUIRE(writers[r].open(per_rank_trace_path(base, r), r, 2, {{"run_id", "drift"}}).ok());
    writers[r].set_clock_offset_start(r * 1'000, 1000, 0);
    record_allreduces(writers[r], writers[r].intern("grad/drift"), 0, 10);
    REQUIRE(writers[r].flush().ok());
  }
  TimelineModel model;
  REQUIRE(model.load({base}).ok());
  REQUIRE(model.ranks().size() == 2);
  const RankTimeline& rank1 = model.ranks()[1];
  REQUIRE(rank1.info.rank == 1);
  uint32_t track = 0;
  while (rank1.tracks[track].family != TrackFamily::kCollective) ++track;
  const EventColumns& e = rank1.tracks[track].events;
  const EventRef late{1, track, static_cast<uint32_t>(e.start_ns.size() - 1)};
  const EventKey key = event_key_of(model, late);
  REQUIRE(find_event(model, key));
  for (int r = 0; r < 2; ++r) {  // the end offset differs by 50 us: drift
    writers[r].set_clock_offset_end(r * 51'000, 1000, 10'000'000);
    REQUIRE(writers[r].close().ok());
  }
  REQUIRE(model.refresh().ok());
  const auto found = find_event(model, key);
  REQUIRE(found);
  const EventColumns& after = model.track(*found).events;
  CHECK(after.start_ns[found->event] != key.start_ns);  // it moved
  CHECK(after.kind[found->event] == key.kind);
  CHECK(model.ranks()[found->rank_index].info.rank == 1);
  CHECK(found->event == late.event);
}
