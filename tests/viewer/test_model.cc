// TimelineModel: loading a synthetic 4-rank run (per-rank files and merged)
// into tracks, asynchronous loading with progress, event details read back on
// demand, and bad inputs (garbage, PNG, newer schema, missing) failing with a
// message instead of crashing.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "ringscope/trace_tools.h"
#include "timeline_model.h"
#include "viewer_test_util.h"

using namespace ringscope;
using namespace ringscope::view;

namespace {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

TEST_CASE("model loads every rank and lane into tracks", "[model]") {
  test::TempDir dir;
  const test::SyntheticRun run = test::four_ranks();
  test::write_synthetic_run(dir.file("run.sqlite"), run);
  TimelineModel model;
  REQUIRE(model.load({dir.file("run.sqlite")}).ok());
  REQUIRE(model.state() == LoadState::kReady);
  REQUIRE(model.ranks().size() == 4);
  CHECK(model.trace().event_count == 4 * test::synthetic_events_per_rank(run));
  for (const RankTimeline& rank : model.ranks()) {
    CHECK(rank.event_count == test::synthetic_events_per_rank(run));
    for (TrackFamily f : {TrackFamily::kCycle, TrackFamily::kNegotiation, TrackFamily::kFusion,
                          TrackFamily::kCollective, TrackFamily::kRing, TrackFamily::kUser})
      CHECK(rank.track(f) != nullptr);
    for (size_t k = 1; k < rank.tracks.size(); ++k)
      CHECK(rank.tracks[k - 1].family < rank.tracks[k].family);
  }
  CHECK(model.trace().begin_ns == 0);  // the first SETTINGS event
  CHECK(model.trace().end_ns >= test::synthetic_cycle_start_ns(run.cycles - 1) + 4'000'000);
  // ~38 bytes per event of columns, plus vector slack.
  CHECK(model.trace().memory_bytes < 64 * static_cast<size_t>(model.trace().event_count));

  SECTION("event details come back from the file: a ring step's peers") {
    const RankTimeline& rank1 = model.ranks()[1];
    uint32_t ring = 0;
    while (rank1.tracks[ring].family != TrackFamily::kRing) ++ring;
    const StoredEvent* step = model.event_detail({1, ring, 0});
    REQUIRE(step != nullptr);
    CHECK(step->event.peer_send == 2);
    CHECK(step->event.peer_recv == 0);
    CHECK(step->event.step >= 0);
  }
  SECTION("a fused member maps to its collective") {
    const RankTimeline& rank0 = model.ranks()[0];
    uint32_t fusion = 0;
    while (rank0.tracks[fusion].family != TrackFamily::kFusion) ++fusion;
    const EventColumns& e = rank0.tracks[fusion].events;
    for (uint32_t i = 0; i < e.size(); ++i)
      if (e.kind[i] == static_cast<uint16_t>(EventKind::kFusionMember) && e.seq_index[i] == 4) {
        const auto key = model.collective_of({0, fusion, i});
        REQUIRE(key);
        CHECK(key->seq_index == 3);  // second group: members 3, 4, 5
        break;
      }
  }
  SECTION("names resolve both ways") {
    const auto id = model.find_name("grad/layer1/w2");
    REQUIRE(id);
    CHECK(model.text(*id) == "grad/layer1/w2");
    CHECK_FALSE(model.find_name("no/such/tensor"));
  }
}

TEST_CASE("model loads on a worker thread with progress", "[model]") {
  test::TempDir dir;
  test::SyntheticRun run = test::four_ranks();
  run.cycles = 200;
  test::write_synthetic_run(dir.file("run.sqlite"), run);
  TimelineModel model;
  model.start_loading({dir.file("run.sqlite")});
  double last = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (model.state() == LoadState::kLoading && std::chrono::steady_clock::now() < deadline) {
    const LoadProgress p = model.progress();
    CHECK(p.fraction >= last);
    CHECK(p.fraction <= 1.0);
    last = p.fraction;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  REQUIRE(model.state() == LoadState::kReady);
  CHECK(model.progress().fraction == 1.0);
  CHECK(model.progress().events_loaded == 4 * test::synthetic_events_per_rank(run));
}

TEST_CASE("a merged file and per-rank files give the same analysis", "[model]") {
  test::TempDir dir;
  const auto paths = test::write_synthetic_run(dir.file("run.sqlite"), test::four_ranks());
  REQUIRE(merge_traces(paths, dir.file("merged.sqlite")).ok());
  TimelineModel per_rank, merged;
  REQUIRE(per_rank.load(paths).ok());
  REQUIRE(merged.load({dir.file("merged.sqlite")}).ok());
  const auto& a = per_rank.trace().stragglers;
  const auto& b = merged.trace().stragglers;
  REQUIRE(a.collectives.size() == b.collectives.size());
  for (size_t i = 0; i < a.collectives.size(); ++i) {
    CHECK(a.collectives[i].key == b.collectives[i].key);
    CHECK(a.collectives[i].lateness_ns == b.collectives[i].lateness_ns);
    CHECK(a.collectives[i].member_names.size() == b.collectives[i].member_names.size());
  }
  CHECK(per_rank.trace().statistics.size() == merged.trace().statistics.size());
  // Per-rank files load on two threads, the merged file on one: the same
  // ranks in the same order, column for column.
  REQUIRE(per_rank.ranks().size() == merged.ranks().size());
  for (size_t r = 0; r < per_rank.ranks().size(); ++r) {
    const RankTimeline& x = per_rank.ranks()[r];
    const RankTimeline& y = merged.ranks()[r];
    CHECK(x.info.rank == y.info.rank);
    CHECK(x.event_count == y.event_count);
    REQUIRE(x.tracks.size() == y.tracks.size());
    for (size_t k = 0; k < x.tracks.size(); ++k) {
      const EventColumns& e = x.tracks[k].events;
      const EventColumns& f = y.tracks[k].events;
      REQUIRE(e.size() == f.size());
      size_t differing = 0;
      for (size_t i = 0; i < e.size(); ++i)
        differing += e.start_ns[i] != f.start_ns[i] || e.dur_ns(i) != f.dur_ns(i) ||
                     e.cycle[i] != f.cycle[i] || e.bytes[i] != f.bytes[i] ||
                     e.seq_index[i] != f.seq_index[i] || e.kind[i] != f.kind[i] ||
                     per_rank.text(e.name_id[i]) != merged.text(f.name_id[i]);
      CHECK(differing == 0);
    }
  }
}

TEST_CASE("bad inputs fail with a message, never a crash", "[model][corrupt]") {
  test::TempDir dir;
  const auto paths = test::write_synthetic_run(dir.file("run.sqlite"), test::four_ranks());
  write_file(dir.file("garbage.sqlite"), std::string(4096, '\x5a'));
  write_file(dir.file("image.png"), std::string("\x89PNG\r\n\x1a\n", 8) + std::string(100, '\0'));
  write_file(dir.file("empty.sqlite"), "");
  // A newer major schema version.
  REQUIRE(merge_traces(paths, dir.file("newer.sqlite")).ok());
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(dir.file("newer.sqlite").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "UPDATE meta SET value = '2.0.0' WHERE key = 'schema_version'", nullptr,
                       nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  // A file cut in half.
  {
    std::ifstream in(paths[0], std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_file(dir.file("half.rank0.sqlite"), bytes.substr(0, bytes.size() / 2));
  }
  for (const char* name : {"garbage.sqlite", "image.png", "empty.sqlite", "newer.sqlite",
                           "missing.sqlite", "half.rank0.sqlite"}) {
    INFO(name);
    TimelineModel model;
    const Status s = model.load({dir.file(name)});
    if (std::string(name) == "half.rank0.sqlite" && s.ok()) continue;  // a readable prefix
    CHECK_FALSE(s.ok());
    CHECK(model.state() == LoadState::kFailed);
    CHECK_FALSE(model.error().message().empty());
  }
  TimelineModel newer;
  CHECK(newer.load({dir.file("newer.sqlite")}).message().find("2.0.0") != std::string::npos);
}

TEST_CASE("a hung job's dumps load with blame's verdict, a healthy run's without",
          "[model][verdict]") {
  test::TempDir dir;
  test::write_synthetic_hang(dir.file("hang.sqlite"));
  TimelineModel model;
  REQUIRE(model.load({dir.file("hang.sqlite")}).ok());
  const auto& verdict = model.trace().verdict;
  REQUIRE(verdict.has_value());
  CHECK(verdict->verdict == "hung");
  REQUIRE(!verdict->stuck.empty());
  CHECK(verdict->stuck[0].name == "grad/b");
  CHECK(verdict->stuck[0].missing == std::vector<int>{1});
  CHECK(verdict->stuck[0].waiting == std::vector<int>{0, 2});
  for (const BlameRank& r : verdict->ranks) {
    CHECK(r.straggler == 1);
    CHECK(r.straggler_count == 1);
  }

  test::write_synthetic_run(dir.file("run.sqlite"), test::four_ranks());
  TimelineModel healthy;
  REQUIRE(healthy.load({dir.file("run.sqlite")}).ok());
  CHECK(!healthy.trace().verdict.has_value());
  CHECK(healthy.trace().verdict_problem.empty());
}
