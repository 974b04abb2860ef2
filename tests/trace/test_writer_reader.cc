// Writer -> reader round trips: concurrent recording from several threads
// loses nothing and keeps every field; interning is stable; a too-small
// buffer counts drops instead of blocking; file naming; window queries.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <thread>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "ringscope/trace_writer.h"
#include "trace_test_util.h"

using namespace ringscope;

TEST_CASE("per-rank file names derive from the base path", "[trace][naming]") {
  CHECK(per_rank_trace_path("runs/a.sqlite", 3) == "runs/a.rank3.sqlite");
  CHECK(per_rank_trace_path("runs/a", 0) == "runs/a.rank0.sqlite");
  CHECK(per_rank_trace_path("runs.d/a", 1) == "runs.d/a.rank1.sqlite");
  CHECK(per_rank_trace_path("a.b.db", 12) == "a.b.rank12.db");
  setenv("RINGSCOPE_TRACE", "/x/t.sqlite", 1);
  CHECK(trace_path_from_env(2) == "/x/t.rank2.sqlite");
  unsetenv("RINGSCOPE_TRACE");
  CHECK(trace_path_from_env(2).empty());
}

TEST_CASE("events recorded concurrently by several threads all arrive intact", "[trace][writer]") {
  test::TempDir dir;
  const std::string path = dir.file("t.rank1.sqlite");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50'000;
  TraceWriter writer;
  REQUIRE(writer.open(path, 1, 2, {{"run_id", "roundtrip"}, {"custom", "yes"}}).ok());
  const int32_t shared_name = writer.intern("shared/tensor");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const int32_t own = writer.intern("thread" + std::to_string(t));
      CHECK(writer.intern("shared/tensor") == shared_name);
      for (int i = 0; i < kPerThread; ++i) {
        TraceEvent e;
        e.kind =
            static_cast<uint16_t>(i % 3 == 0 ? EventKind::kRingReduceScatter : EventKind::kEnqueue);
        e.start_ns = writer.now_ns();
        e.end_ns = e.start_ns + (i % 3 == 0 ? 1000 + i : 0);
        e.cycle = i / 10;
        e.seq_index = i % 10;
        e.name_id = i % 2 ? own : shared_name;
        e.bytes = int64_t{i} * 1000;
        e.value = int64_t{t} * kPerThread + i;  // unique id of the event
        e.peer_send = t;
        e.step = i % 7;
        e.aux = -5;
        writer.record(e);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  REQUIRE(writer.flush().ok());
  CHECK(writer.written_events() == kThreads * kPerThread);
  REQUIRE(writer.close().ok());
  CHECK(writer.dropped_events() == 0);

  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK(reader.meta_value("custom") == "yes");
  CHECK(reader.meta_value("schema_version") == "1.2.0");
  CHECK(reader.world_size() == 2);
  REQUIRE(reader.ranks().size() == 1);
  CHECK(reader.ranks()[0].rank == 1);
  CHECK(reader.ranks()[0].finalized);
  CHECK(reader.ranks()[0].event_count == kThreads * kPerThread);
  std::vector<char> seen(kThreads * kPerThread, 0);
  std::set<uint32_t> thread_ids;
  int64_t bad = 0;
  REQUIRE(reader
              .scan_events(1,
                           [&](const StoredEvent& s) {
                             const TraceEvent& e = s.event;
                             const int64_t id = e.value;
                             const int t = static_cast<int>(id / kPerThread),
                                       i = static_cast<int>(id % kPerThread);
                             if (id < 0 || id >= kThreads * kPerThread || seen[size_t(id)])
                               return ++bad, true;
                             seen[size_t(id)] = 1;
                             const bool span = i % 3 == 0;
                             if (s.lane != (span ? Lane::kRing : Lane::kNegotiation) ||
                                 e.cycle != i / 10 || e.seq_index != i % 10 ||
                                 e.bytes != int64_t{i} * 1000 || e.peer_send != t ||
                                 e.peer_recv != -1 || e.step != i % 7 || e.aux != -5 ||
                                 e.end_ns - e.start_ns != (span ? 1000 + i : 0) ||
                                 reader.text(e.name_id) !=
                                     (i % 2 ? "thread" + std::to_string(t) : "shared/tensor"))
                               ++bad;
                             thread_ids.insert(e.thread);
                             return true;
                           })
              .ok());
  CHECK(bad == 0);
  CHECK(std::count(seen.begin(), seen.end(), 1) == kThreads * kPerThread);
  CHECK(thread_ids.size() == kThreads);  // the writer stamps each recording thread
}

TEST_CASE("a full buffer counts dropped events and stores the count", "[trace][writer]") {
  test::TempDir dir;
  const std::string path = dir.file("d.rank0.sqlite");
  TraceWriterOptions options;
  options.buffer_events = 64;
  options.idle_sleep_ms = 20;
  TraceWriter writer(options);
  REQUIRE(writer.open(path, 0, 1).ok());
  constexpr int kEvents = 200'000;
  TraceEvent e;
  e.kind = static_cast<uint16_t>(EventKind::kEnqueue);
  for (int i = 0; i < kEvents; ++i) writer.record(e);  // far faster than SQLite inserts
  REQUIRE(writer.close().ok());
  const uint64_t dropped = writer.dropped_events();
  CHECK(dropped > 0);

  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK(reader.ranks()[0].dropped_events == int64_t(dropped));
  int64_t enqueues = 0, marked = 0, last_total = 0;
  REQUIRE(reader
              .scan_events(0,
                           [&](const StoredEvent& s) {
                             if (s.event.kind == uint16_t(EventKind::kEnqueue)) ++enqueues;
                             if (s.event.kind == uint16_t(EventKind::kDropped))
                               marked += s.event.aux,
                                   last_total = std::max(last_total, s.event.value);
                             return true;
                           })
              .ok());
  CHECK(enqueues + int64_t(dropped) == kEvents);  // every event is either stored or counted
  CHECK(marked == int64_t(dropped));
  CHECK(last_total == int64_t(dropped));
}

TEST_CASE("window queries return exactly the overlapping events", "[trace][reader]") {
  test::TempDir dir;
  const std::string path = dir.file("w.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  // Spans [i*100, i*100+dur) with dur up to 1000 on the ring lane.
  for (int i = 0; i < 2000; ++i) {
    TraceEvent e;
    e.kind = uint16_t(EventKind::kRingAllgather);
    e.start_ns = i * 100;
    e.end_ns = e.start_ns + (i % 11) * 100;
    e.value = i;
    writer.record(e);
  }
  REQUIRE(writer.close().ok());
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK(reader.max_duration(0, Lane::kRing) == 1000);
  std::vector<Lane> lanes;
  REQUIRE(reader.lanes(0, &lanes).ok());
  CHECK(lanes == std::vector<Lane>{Lane::kRing});
  for (const auto& [begin, end] :
       {std::pair<int64_t, int64_t>{50'000, 50'550}, {0, 0}, {199'950, 400'000}}) {
    std::vector<StoredEvent> got;
    REQUIRE(reader.events_in_window(0, Lane::kRing, begin, end, &got).ok());
    std::vector<int64_t> expected;
    for (int i = 0; i < 2000; ++i)
      if (i * 100 <= end && i * 100 + (i % 11) * 100 >= begin) expected.push_back(i);
    std::vector<int64_t> ids;
    for (const StoredEvent& s : got) ids.push_back(s.event.value);
    CHECK(ids == expected);
  }
  // The events starting at a time: only those (spans that merely overlap it
  // are not), within a nanosecond.
  for (const int64_t t : {int64_t{0}, int64_t{50'000}, int64_t{50'001}, int64_t{50'050}}) {
    std::vector<StoredEvent> got;
    REQUIRE(reader.events_starting_at(0, Lane::kRing, t, &got).ok());
    INFO("t = " << t);
    if (t % 100 <= 1) {
      REQUIRE(got.size() == 1);
      CHECK(got[0].event.value == t / 100);
    } else {
      CHECK(got.empty());
    }
  }
  LaneColumns columns;
  REQUIRE(reader.lane_columns(0, Lane::kRing, &columns).ok());
  REQUIRE(columns.size() == 2000);
  CHECK(columns.dur_ns(13) == 200);
  CHECK(columns.end_ns(1999) == 1999 * 100 + (1999 % 11) * 100);
  CHECK(double(columns.memory_bytes()) / double(columns.size()) <= 40.0);
}

TEST_CASE("close drains everything even when the writer was sleeping", "[trace][writer]") {
  test::TempDir dir;
  TraceWriterOptions options;
  options.idle_sleep_ms = 1000;  // long sleep: close must wake it and still drain
  options.commit_interval_ms = 1000;
  TraceWriter writer(options);
  REQUIRE(writer.open(dir.file("c.sqlite"), 0, 1).ok());
  TraceEvent e;
  e.kind = uint16_t(EventKind::kStep);
  for (int i = 0; i < 30'000; ++i) writer.record(e);
  REQUIRE(writer.close().ok());
  TraceReader reader;
  REQUIRE(reader.open({dir.file("c.sqlite")}).ok());
  CHECK(reader.ranks()[0].event_count == 30'000);
  CHECK(reader.ranks()[0].dropped_events == 0);
}

TEST_CASE("a reader open on a live trace does not make the writer's close fail",
          "[trace][writer]") {
  test::TempDir dir;
  const std::string path = dir.file("live.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1, {{"run_id", "live"}}).ok());
  for (int i = 0; i < 1000; ++i) {
    TraceEvent e;
    e.kind = static_cast<uint16_t>(EventKind::kEnqueue);
    e.start_ns = e.end_ns = i;
    writer.record(e);
  }
  REQUIRE(writer.flush().ok());
  {
    TraceReader follower;  // a viewer following the run, still open at close
    REQUIRE(follower.open({path}).ok());
    size_t seen = 0;
    REQUIRE(follower.scan_events(0, [&](const StoredEvent&) { return ++seen, true; }).ok());
    CHECK(seen == 1000);
    REQUIRE(writer.close().ok());
  }
  TraceReader after;
  REQUIRE(after.open({path}).ok());
  REQUIRE(after.ranks().size() == 1);
  CHECK(after.ranks()[0].finalized);
  size_t seen = 0;
  REQUIRE(after.scan_events(0, [&](const StoredEvent&) { return ++seen, true; }).ok());
  CHECK(seen == 1000);
}

TEST_CASE("lane_columns holds exactly what scan_events reads, on rank 0's clock",
          "[trace][reader]") {
  test::TempDir dir;
  test::SyntheticRun run;                  // several lanes and ranks
  run.offset_end_per_rank_ns = 3'000'000;  // clocks drift: ends convert on their own
  const std::string base = dir.file("cols.sqlite");
  REQUIRE(test::write_synthetic_run(base, run).size() == 3);
  TraceReader reader;
  REQUIRE(reader.open({base}).ok());
  size_t compared = 0;
  for (const RankInfo& info : reader.ranks()) {
    std::vector<Lane> lanes;
    REQUIRE(reader.lanes(info.rank, &lanes).ok());
    for (Lane lane : lanes) {
      LaneColumns columns;
      REQUIRE(reader.lane_columns(info.rank, lane, &columns).ok());
      std::vector<StoredEvent> events;
      REQUIRE(
          reader
              .scan_events(
                  info.rank, [&](const StoredEvent& e) { return events.push_back(e), true; }, lane)
              .ok());
      REQUIRE(columns.size() == events.size());
      for (size_t i = 0; i < events.size(); ++i) {
        const TraceEvent& e = events[i].event;
        CHECK(columns.start_ns[i] == e.start_ns);
        CHECK(columns.end_ns(i) == e.end_ns);
        CHECK(columns.kind[i] == e.kind);
        CHECK(columns.cycle[i] == e.cycle);
        CHECK(columns.seq_index[i] == e.seq_index);
        CHECK(columns.name_id[i] == e.name_id);
        CHECK(columns.bytes[i] == e.bytes);
      }
      compared += events.size();
    }
  }
  CHECK(compared > 100);
}

TEST_CASE("autotune trial and decision marks are stored, in SQL and through the reader",
          "[trace][writer]") {
  // docs/autotune.md: step >= 0 a window, -1 a whole trial, -2 the decision.
  test::TempDir dir;
  const std::string path = dir.file("tune.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  const std::vector<int32_t> steps = {0, 1, -1, 0, -1, -2};
  for (size_t i = 0; i < steps.size(); ++i) {
    TraceEvent e;
    e.kind = uint16_t(EventKind::kAutotuneTrial);
    e.start_ns = static_cast<int64_t>(i) * 1000;
    e.end_ns = e.start_ns + 500;
    e.step = steps[i];
    writer.record(e);
  }
  TraceEvent ring;  // elsewhere a negative step is none (NULL)
  ring.kind = uint16_t(EventKind::kRingAllgather);
  ring.start_ns = 10'000, ring.end_ns = 10'100;
  writer.record(ring);
  REQUIRE(writer.close().ok());

  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  auto count = [&](const char* where) {
    sqlite3_stmt* stmt = nullptr;
    const std::string q = std::string("SELECT count(*) FROM events WHERE ") + where;
    REQUIRE(sqlite3_prepare_v2(db, q.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
    const int n = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
  };
  CHECK(count("kind = 26 AND step = -2") == 1);
  CHECK(count("kind = 26 AND step = -1") == 2);
  CHECK(count("kind = 26 AND step >= 0") == 3);
  CHECK(count("kind = 10 AND step IS NULL") == 1);
  sqlite3_close(db);
  // A merged file keeps them too.
  const std::string merged = dir.file("tune.merged.sqlite");
  REQUIRE(merge_traces({path}, merged).ok());
  REQUIRE(sqlite3_open(merged.c_str(), &db) == SQLITE_OK);
  CHECK(count("kind = 26 AND step = -2") == 1);
  CHECK(count("kind = 26 AND step = -1") == 2);
  sqlite3_close(db);

  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  std::vector<int32_t> read;
  REQUIRE(reader
              .scan_events(
                  0,
                  [&](const StoredEvent& s) {
                    read.push_back(s.event.step);
                    return true;
                  },
                  Lane::kAutotune)
              .ok());
  CHECK(read == steps);
}
