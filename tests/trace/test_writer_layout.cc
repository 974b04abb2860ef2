// The writer's file layout and its end: a live per-rank file is already the
// clustered table (close() writes the statistics it counted, rewrites
// nothing), an unclosed file of the earlier arrival-order layout still
// reads, the size cap is reported, and close_in_background finishes a file
// on the writer thread.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <thread>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_writer.h"
#include "trace_test_util.h"

using namespace ringscope;

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
