// Merging per-rank files: times land on rank 0's clock (start/end offsets
// interpolated for drift), string ids are unified, the per-rank set read
// directly agrees with the merged file, and the merged file passes check.
#include <sqlite3.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "ringscope/trace_writer.h"
#include "trace_test_util.h"

using namespace ringscope;

namespace {

// Every event of every rank of a trace, one line each with its name's text:
// two merges of the same run compare row by row.
std::vector<std::string> event_rows(const std::string& path) {
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  std::vector<std::string> rows;
  for (const RankInfo& info : reader.ranks())
    REQUIRE(reader
                .scan_events(info.rank,
                             [&](const StoredEvent& s) {
                               const TraceEvent& e = s.event;
                               rows.push_back(
                                   std::to_string(s.rank) + " " + std::to_string(e.kind) + " " +
                                   std::to_string(e.start_ns) + " " + std::to_string(e.end_ns) +
                                   " " + std::to_string(e.cycle) + " " + std::to_string(e.value) +
                                   " " + std::string(reader.text(e.name_id)));
                               return true;
                             })
                .ok());
  return rows;
}

// Rank r: offset r*1 ms at local 0 and r*1 ms + r*10 us at local 100 ms.
void write_offset_rank(const std::string& base, int rank, int world) {
  TraceWriter w;
  REQUIRE(w.open(per_rank_trace_path(base, rank), rank, world, {{"run_id", "offsets"}}).ok());
  w.set_clock_offset_start(rank * 1'000'000, 5'000, 0);
  for (int i = 0; i <= 10; ++i) {
    TraceEvent e;
    e.kind = uint16_t(EventKind::kCallback);
    e.start_ns = i * 10'000'000;
    e.end_ns = e.start_ns + 1'000;
    e.name_id = w.intern("rank" + std::to_string(rank) + "-name");
    e.value = i;
    w.record(e);
  }
  w.set_clock_offset_end(rank * 1'000'000 + rank * 10'000, 5'000, 100'000'000);
  REQUIRE(w.close().ok());
}

int64_t expected_rank0_time(int rank, int64_t local) {
  const double slope = rank * 10'000.0 / 100'000'000.0;
  return local + rank * 1'000'000 + std::llround(slope * double(local));
}

}  // namespace

TEST_CASE("merge applies clock offsets with linear drift", "[trace][merge]") {
  test::TempDir dir;
  const std::string base = dir.file("off.sqlite");
  for (int r = 0; r < 3; ++r) write_offset_rank(base, r, 3);
  const std::string merged = dir.file("merged.sqlite");
  MergeResult result;
  REQUIRE(merge_traces({base}, merged, &result).ok());
  CHECK(result.ranks == 3);
  CHECK(result.events == 33);

  TraceReader from_merged, from_set, from_dir;
  REQUIRE(from_merged.open({merged}).ok());
  REQUIRE(from_set.open({base}).ok());
  REQUIRE(from_dir.open({dir.path()}).ok());
  CHECK(from_merged.merged());
  CHECK_FALSE(from_set.merged());
  CHECK(from_dir.files().size() == 3);
  CHECK(from_merged.meta_value("rank") == "merged");
  for (const TraceReader* reader : {&from_merged, &from_set}) {
    for (int r = 0; r < 3; ++r) {
      std::vector<StoredEvent> events;
      REQUIRE(
          reader->scan_events(r, [&](const StoredEvent& e) { return events.push_back(e), true; })
              .ok());
      REQUIRE(events.size() == 11);
      for (const StoredEvent& e : events) {
        const int64_t local = e.event.value * 10'000'000;
        CHECK(e.event.start_ns == expected_rank0_time(r, local));
        CHECK(e.event.end_ns == expected_rank0_time(r, local + 1'000));
        CHECK(reader->text(e.event.name_id) == "rank" + std::to_string(r) + "-name");
      }
      // Window on rank 0's clock around rank r's 6th event.
      std::vector<StoredEvent> window;
      const int64_t t = expected_rank0_time(r, 50'000'000);
      REQUIRE(reader->events_in_window(r, Lane::kCallback, t - 10, t + 10, &window).ok());
      REQUIRE(window.size() == 1);
      CHECK(window[0].event.value == 5);
    }
  }
  CHECK(from_merged.ranks()[2].clock_aligned);
  CHECK(from_merged.ranks()[2].clock_offset_end_ns == 2'020'000);
  CHECK_FALSE(from_set.ranks()[2].clock_aligned);
  CHECK(from_merged.string_count() == 3);
}

TEST_CASE("a synthetic run merges, reads back per collective and passes check", "[trace][merge]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 4;
  const std::string base = dir.file("run.sqlite");
  test::write_synthetic_run(base, run);
  const std::string merged = dir.file("run.merged.sqlite");
  REQUIRE(merge_traces({base}, merged).ok());
  TraceReader reader;
  REQUIRE(reader.open({merged}).ok());
  for (const RankInfo& r : reader.ranks())
    CHECK(r.event_count == test::synthetic_events_per_rank(run));
  // One collective across all ranks: everything tagged (cycle 3, seq 3), the
  // second fused group of cycle 3 (responses 3, 4, 5).
  std::vector<StoredEvent> collective;
  REQUIRE(reader.collective(3, 3, &collective).ok());
  std::map<int, int> ring_steps, per_rank;
  for (const StoredEvent& e : collective) {
    CHECK(e.event.cycle == 3);
    CHECK(e.event.seq_index == 3);
    ++per_rank[e.rank];
    if (e.lane == Lane::kRing) ++ring_steps[e.rank];
  }
  CHECK(per_rank.size() == 4);
  for (int r = 0; r < 4; ++r) {
    CHECK(ring_steps[r] == 6);
    // negotiate + first member (own seq 3) + fusion + 2 memcpy + allreduce + 6 steps + callback
    CHECK(per_rank[r] == 1 + 1 + 1 + 2 + 1 + 6 + 1);
  }
  // The ring lane alone: exactly the ring steps.
  std::vector<StoredEvent> ring_only;
  REQUIRE(reader.collective(3, 3, &ring_only, Lane::kRing).ok());
  CHECK(ring_only.size() == 4 * 6);
  for (const StoredEvent& e : ring_only) CHECK(e.lane == Lane::kRing);
  std::vector<SettingChange> settings;
  REQUIRE(reader.settings(&settings).ok());
  REQUIRE(settings.size() == 8);
  CHECK(settings.back().value == 32 << 20);
  CHECK(settings.back().key == int(SettingKey::kFusionThresholdBytes));

  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  INFO((report.violations.empty() ? "" : report.violations[0]));
  CHECK(report.ok());
  CHECK(report.collectives == run.cycles * run.collectives_per_cycle);
  CHECK(test::run_cli("check " + merged) == 0);
  CHECK(test::run_cli("check " + base) == 0);  // the per-rank set directly

  // The CLI merge writes the same rows.
  const std::string merged2 = dir.file("cli.merged.sqlite");
  std::string output;
  CHECK(test::run_cli("merge " + merged2 + " " + dir.file("run.rank0.sqlite") + " " +
                          dir.file("run.rank1.sqlite") + " " + dir.file("run.rank2.sqlite") + " " +
                          dir.file("run.rank3.sqlite"),
                      &output) == 0);
  CHECK(output.find("merged 4 ranks") != std::string::npos);
  const std::vector<std::string> rows = event_rows(merged);
  CHECK(rows.size() > 100);
  CHECK(event_rows(merged2) == rows);
}

TEST_CASE("merge and export refuse to write over a trace they would destroy", "[trace][merge]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 2;
  const std::string base = dir.file("run.sqlite");
  const std::vector<std::string> files = test::write_synthetic_run(base, run);
  auto bytes = [](const std::string& path) { return std::filesystem::file_size(path); };
  const auto rank0_size = bytes(files[0]), rank1_size = bytes(files[1]);
  std::string out;
  // OUT is rank 0's own file, the inputs named by their base path.
  CHECK(test::run_cli("merge " + files[0] + " " + base, &out) != 0);
  CHECK(out.find("is one of the input traces") != std::string::npos);
  // OUT forgotten: the first per-rank file taken for OUT.
  CHECK(test::run_cli("merge " + files[0] + " " + files[1], &out) != 0);
  CHECK(out.find("not a merged file") != std::string::npos);
  // Chrome export over an input.
  CHECK(test::run_cli("export --chrome " + files[1] + " " + base, &out) != 0);
  CHECK(out.find("is one of the input traces") != std::string::npos);
  CHECK(bytes(files[0]) == rank0_size);
  CHECK(bytes(files[1]) == rank1_size);
  CHECK(test::run_cli("check " + base) == 0);
  // A merged file may be merged over again, and an export replaces its old
  // JSON whole (nothing of the temporary file is left).
  const std::string merged = dir.file("merged.sqlite"), json = dir.file("run.json");
  REQUIRE(test::run_cli("merge " + merged + " " + base) == 0);
  CHECK(test::run_cli("merge " + merged + " " + base) == 0);
  { std::ofstream(json) << "old"; }
  CHECK(test::run_cli("export --chrome " + json + " " + base) == 0);
  CHECK(bytes(json) > 100);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    CHECK(entry.path().string().find(".tmp") == std::string::npos);
}

TEST_CASE("a process set's events keep their set, cycles and world-rank peers through merge",
          "[trace][merge][sets]") {
  test::TempDir dir;
  test::SyntheticRun run;
  run.world_size = 3;
  run.cycles = 2;
  run.process_set_ranks = {0, 2};
  const std::string base = dir.file("sets.sqlite");
  test::write_synthetic_run(base, run);
  const std::string merged = dir.file("sets.merged.sqlite");
  REQUIRE(merge_traces({base}, merged).ok());
  for (const std::string& input : {base, merged}) {
    INFO(input);
    TraceReader reader;
    REQUIRE(reader.open({input}).ok());
    // The set's allreduce of its cycle 1: on ranks 0 and 2 only, every event
    // stamped with set 1; its one ring step each way goes to the other member.
    std::vector<StoredEvent> collective;
    REQUIRE(reader.collective(kProcessSetCycleBase + 1, 0, &collective).ok());
    std::set<int> ranks;
    int ring_steps = 0;
    for (const StoredEvent& e : collective) {
      ranks.insert(e.rank);
      CHECK(e.event.process_set == 1);
      if (e.lane == Lane::kRing) {
        ++ring_steps;
        CHECK(e.event.peer_send == (e.rank == 0 ? 2 : 0));
        CHECK(e.event.peer_recv == (e.rank == 0 ? 2 : 0));
      }
    }
    CHECK(ranks == std::set<int>{0, 2});
    CHECK(ring_steps == 2 * 2);
    // The world's collectives are not the set's.
    std::vector<StoredEvent> world;
    REQUIRE(reader.collective(1, 0, &world).ok());
    REQUIRE(!world.empty());
    for (const StoredEvent& e : world) CHECK(e.event.process_set == 0);
    // The viewer's columns carry it too.
    LaneColumns columns;
    REQUIRE(reader.lane_columns(2, Lane::kCollective, &columns).ok());
    REQUIRE(columns.process_set.size() == columns.size());
    CHECK(std::count(columns.process_set.begin(), columns.process_set.end(), 1) == run.cycles);
  }
  // In SQL: NULL for the world's events, the id for the set's; events_v
  // says 0 for the world.
  std::string out;
  REQUIRE(test::run_cli("sql " + merged +
                            " \"SELECT 'ranks=' || group_concat(rank) FROM (SELECT DISTINCT rank"
                            " FROM events_v WHERE process_set = 1 AND kind_name = 'PROCESS_SET'"
                            " ORDER BY rank)\"",
                        &out) == 0);
  CHECK(out.find("ranks=0,2") != std::string::npos);
  REQUIRE(test::run_cli("sql " + merged +
                            " \"SELECT 'world=' || count(*) FROM events WHERE process_set IS NULL"
                            " AND rank = 1 AND kind = 18\"",
                        &out) == 0);
  CHECK(out.find("world=" + std::to_string(run.cycles * run.collectives_per_cycle)) !=
        std::string::npos);
  CHECK(test::run_cli("check " + merged) == 0);
}
