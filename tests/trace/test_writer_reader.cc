// Writer -> reader round trips: concurrent recording from several threads
// loses nothing and keeps every field; interning is stable; a too-small
// buffer counts drops instead of blocking; file naming; window queries; the
// clustered layout of a live file and the statistics close() writes.
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
  CHECK(reader.meta_value("schema_version") == "1.0.0");
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

namespace {
// One row of `sql` on `path` as text, columns joined by '|'; "" if none.
std::string sql_row(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  std::string row;
  if (sqlite3_step(stmt) == SQLITE_ROW)
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      const unsigned char* text = sqlite3_column_text(stmt, c);
      row += (c ? "|" : "") + std::string(text ? reinterpret_cast<const char*>(text) : "NULL");
    }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return row;
}

// Events in four lanes from two threads, start times out of order within
// each lane (spans recorded when they end, as the runtime does).
void record_mixed_lanes(TraceWriter& writer, int per_thread) {
  auto work = [&](int thread) {
    static const EventKind kinds[] = {EventKind::kEnqueue, EventKind::kNegotiate,
                                      EventKind::kFusionMember, EventKind::kRingAllgather};
    for (int i = 0; i < per_thread; ++i) {
      TraceEvent e;
      e.kind = static_cast<uint16_t>(kinds[(i + thread) % 4]);
      e.start_ns = 1'000'000 + int64_t{i} * 1000 - (i % 7) * 3000 + thread;
      e.end_ns = e.start_ns + (i % 5) * 2500;
      e.value = thread * per_thread + i;
      writer.record(e);
    }
  };
  std::thread other(work, 1);
  work(0);
  other.join();
}
}  // namespace

TEST_CASE("a live per-rank file is already clustered, and close() rewrites nothing",
          "[trace][writer][layout]") {
  test::TempDir dir;
  const std::string path = dir.file("live.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  record_mixed_lanes(writer, 20'000);
  REQUIRE(writer.flush().ok());
  // While running: the clustered table, in key order, and every row there.
  CHECK(
      sql_row(path, "SELECT sql LIKE '%WITHOUT ROWID%' FROM sqlite_master WHERE name = 'events'") ==
      "1");
  CHECK(sql_row(path, "SELECT count(*) FROM events") == "40000");
  CHECK(sql_row(path, "SELECT count(*) FROM sqlite_master WHERE name = 'cycles_by_number'") == "1");
  // Stored in key order: the table's own order (no ORDER BY) is by lane
  // and start; an arrival-order table would interleave lanes.
  CHECK(sql_row(path,
                "SELECT count(*) FROM (SELECT lane, start_ns, lag(lane) OVER () AS pl,"
                " lag(start_ns) OVER () AS ps FROM events) WHERE lane < pl OR"
                " (lane = pl AND start_ns < ps)") == "0");
  {
    TraceReader live;
    REQUIRE(live.open({path}).ok());
    CHECK_FALSE(live.ranks()[0].finalized);
    int64_t seen = 0;
    REQUIRE(live.scan_events(0, [&](const StoredEvent&) { return ++seen, true; }).ok());
    CHECK(seen == 40'000);
  }
  REQUIRE(writer.close().ok());
  // The statistics close() wrote from its counts are what a scan gives.
  const std::string stored = sql_row(
      path,
      "SELECT group_concat(lane || ':' || event_count || ':' || max_dur_ns || ':' || "
      "first_start_ns || ':' || last_end_ns, ' ') FROM (SELECT * FROM lane_stats ORDER BY lane)");
  const std::string scanned =
      sql_row(path,
              "SELECT group_concat(lane || ':' || n || ':' || d || ':' || f || ':' || l, ' ') FROM "
              "(SELECT lane, count(*) n, max(dur_ns) d, min(start_ns) f, max(start_ns + dur_ns) l "
              "FROM events GROUP BY lane ORDER BY lane)");
  CHECK(!stored.empty());
  CHECK(stored == scanned);
  CHECK(sql_row(path, "SELECT event_count, finalized FROM ranks") ==
        sql_row(path, "SELECT count(*), 1 FROM events"));
  // `tie` is the arrival number: one per row, so equal starts stay apart.
  CHECK(sql_row(path, "SELECT count(DISTINCT tie), min(tie), max(tie) FROM events") ==
        "40000|0|39999");
  CHECK(sql_row(path, "PRAGMA integrity_check") == "ok");
  CHECK(sql_row(path, "PRAGMA journal_mode") == "delete");  // one self-contained file
}

TEST_CASE("an unclosed file of an earlier build (events in arrival order) still reads",
          "[trace][reader][layout]") {
  test::TempDir dir;
  const std::string path = dir.file("old.rank0.sqlite");
  {
    TraceWriter writer;
    REQUIRE(writer.open(path, 0, 1).ok());
    record_mixed_lanes(writer, 2'000);
    REQUIRE(writer.close().ok());
  }
  // What an earlier build left when killed: a rowid table in arrival order,
  // no lane_stats, ranks.finalized = 0.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db,
                       "BEGIN; DROP VIEW events_v; DROP VIEW settings_v;"
                       "ALTER TABLE events RENAME TO clustered;"
                       "CREATE TABLE events(rank INTEGER NOT NULL, lane INTEGER NOT NULL,"
                       " kind INTEGER NOT NULL, start_ns INTEGER NOT NULL, dur_ns INTEGER NOT NULL,"
                       " cycle INTEGER, seq_index INTEGER, name_id INTEGER, bytes INTEGER,"
                       " value INTEGER, peer_send INTEGER, peer_recv INTEGER, step INTEGER,"
                       " aux INTEGER, thread INTEGER);"
                       "INSERT INTO events SELECT rank, lane, kind, start_ns, dur_ns, cycle,"
                       " seq_index, name_id, bytes, value, peer_send, peer_recv, step, aux,"
                       " thread FROM clustered ORDER BY tie;"
                       "DROP TABLE clustered; DELETE FROM lane_stats;"
                       "UPDATE ranks SET finalized = 0; COMMIT;",
                       nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK_FALSE(reader.ranks()[0].finalized);
  CHECK(reader.max_duration(0, Lane::kRing) == 10'000);
  std::vector<StoredEvent> window;
  REQUIRE(reader.events_in_window(0, Lane::kRing, 0, INT64_MAX / 4, &window).ok());
  CHECK(window.size() == 1'000);
  for (size_t i = 1; i < window.size(); ++i)
    CHECK(window[i - 1].event.start_ns <= window[i].event.start_ns);
  int64_t seen = 0;
  REQUIRE(reader.scan_events(0, [&](const StoredEvent&) { return ++seen, true; }).ok());
  CHECK(seen == 4'000);
}

TEST_CASE("the size cap is reported once the file reaches it, and a background close finishes it",
          "[trace][writer][cap]") {
  test::TempDir dir;
  const std::string path = dir.file("capped.rank0.sqlite");
  TraceWriterOptions options;
  options.size_cap_bytes = 512 * 1024;
  TraceWriter writer(options);
  REQUIRE(writer.open(path, 0, 1).ok());
  CHECK_FALSE(writer.at_size_cap());
  int64_t recorded = 0;
  auto record_some = [&](int count) {
    for (int i = 0; i < count; ++i, ++recorded) {
      TraceEvent e;
      e.kind = static_cast<uint16_t>(EventKind::kRingAllgather);
      e.start_ns = recorded * 1000;
      e.end_ns = e.start_ns + 700;
      e.value = recorded;
      writer.record(e);
    }
    REQUIRE(writer.flush().ok());
  };
  record_some(1000);
  CHECK_FALSE(writer.at_size_cap());  // ~40 KiB
  CHECK(writer.size_bytes() > 0);
  CHECK(writer.size_bytes() < options.size_cap_bytes);
  while (!writer.at_size_cap() && recorded < 1'000'000) record_some(1000);
  REQUIRE(writer.at_size_cap());
  CHECK(writer.size_bytes() >= options.size_cap_bytes);
  // The cap only reports: the writer goes on until its owner stops it.
  record_some(1000);
  CHECK(writer.written_events() == static_cast<uint64_t>(recorded));
  writer.close_in_background({{"stopped_by", "size cap (test)"}});
  CHECK(writer.is_open());  // until close() has waited for the thread
  TraceEvent late;
  late.kind = static_cast<uint16_t>(EventKind::kStep);
  writer.record(late);  // after the trace's end: neither written nor a drop
  REQUIRE(writer.close().ok());
  CHECK(writer.dropped_events() == 0);
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK(reader.ranks()[0].finalized);
  CHECK(reader.ranks()[0].dropped_events == 0);
  CHECK(reader.ranks()[0].event_count == recorded);
  CHECK(reader.meta_value("stopped_by", "") == "size cap (test)");
  CHECK(sql_row(path, "PRAGMA journal_mode") == "delete");
}

TEST_CASE(
    "without a cap the writer never reports one, and close() after a background close is "
    "harmless",
    "[trace][writer][cap]") {
  test::TempDir dir;
  const std::string path = dir.file("uncapped.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  for (int i = 0; i < 50'000; ++i) {
    TraceEvent e;
    e.kind = static_cast<uint16_t>(EventKind::kEnqueue);
    e.start_ns = e.end_ns = i;
    writer.record(e);
  }
  REQUIRE(writer.flush().ok());
  CHECK_FALSE(writer.at_size_cap());
  writer.close_in_background();
  writer.close_in_background();  // a second call changes nothing
  REQUIRE(writer.close().ok());
  CHECK_FALSE(writer.is_open());
  CHECK(writer.close().code() == StatusCode::kNotInitialized);
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CHECK(reader.ranks()[0].event_count == 50'000);
  CHECK(reader.meta_value("stopped_by", "none") == "none");
}
