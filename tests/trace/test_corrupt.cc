// Untrusted files: empty, truncated, a PNG renamed, a foreign SQLite schema,
// a newer major schema version, a view posing as a table, and randomly
// damaged traces all give a clear Status (API) and exit code 1 (CLI), never
// a crash.
#include <sqlite3.h>

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_tools.h"
#include "trace_test_util.h"

using namespace ringscope;

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void sql_exec(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, statements.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
}

// Opens via the API and via every reading CLI command; all must fail cleanly.
// `sql` validates the schema only: a file whose damage is in the table
// contents still answers queries (sql_rejects = false).
void expect_rejected(const std::string& path, const std::string& expected_message,
                     bool sql_rejects = true) {
  TraceReader reader;
  Status status = reader.open({path});
  INFO(status.to_string());
  CHECK_FALSE(status.ok());
  CHECK(status.message().find(expected_message) != std::string::npos);
  for (const std::string command :
       {"check ", "stats ", "export --chrome /dev/null ", "merge /tmp/never.sqlite "}) {
    std::string output;
    CHECK(test::run_cli(command + path, &output) == 1);
    CHECK(output.find(expected_message) != std::string::npos);
  }
  CHECK(test::run_cli("sql " + path + " \"SELECT 1\"") == (sql_rejects ? 1 : 0));
}

std::string valid_trace(const test::TempDir& dir, const std::string& name) {
  test::SyntheticRun run;
  run.world_size = 1;
  run.cycles = 30;
  return test::write_synthetic_run(dir.file(name), run)[0];
}

}  // namespace

TEST_CASE("corrupt and foreign files are rejected with clear errors", "[trace][corrupt]") {
  test::TempDir dir;
  SECTION("empty file") {
    write_bytes(dir.file("empty.sqlite"), "");
    expect_rejected(dir.file("empty.sqlite"), "file is empty");
  }
  SECTION("PNG renamed") {
    write_bytes(dir.file("image.sqlite"), std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
    expect_rejected(dir.file("image.sqlite"), "is a PNG image");
  }
  SECTION("a FIFO (without a writer its open would block)") {
    const std::string fifo = dir.file("fifo.sqlite");
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    expect_rejected(fifo, "is not a regular file");
  }
  SECTION("text file") {
    write_bytes(dir.file("notes.sqlite"), "hello, I am not a database\n");
    expect_rejected(dir.file("notes.sqlite"), "not a SQLite database");
  }
  SECTION("truncated trace") {
    const std::string path = valid_trace(dir, "t.sqlite");
    std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
    // The header says how long the file is: the cut is named as such.
    expect_rejected(path, "the file is truncated");
    std::filesystem::resize_file(path, 100);
    expect_rejected(path, "the file is truncated");
  }
  SECTION("foreign SQLite schema") {
    sql_exec(dir.file("other.sqlite"),
             "CREATE TABLE users(id INTEGER, name TEXT); INSERT INTO users VALUES(1,'x');");
    expect_rejected(dir.file("other.sqlite"), "not a ringscope trace (no meta table)");
  }
  SECTION("newer major schema version") {
    const std::string path = valid_trace(dir, "v2.sqlite");
    sql_exec(path, "UPDATE meta SET value = '2.0.0' WHERE key = 'schema_version'");
    expect_rejected(path, "trace schema version 2.0.0 is not supported");
  }
  SECTION("newer minor version is accepted") {
    const std::string path = valid_trace(dir, "v11.sqlite");
    sql_exec(path, "UPDATE meta SET value = '1.1.0' WHERE key = 'schema_version'");
    TraceReader reader;
    CHECK(reader.open({path}).ok());
  }
  SECTION("a required column is missing") {
    const std::string path = valid_trace(dir, "col.sqlite");
    sql_exec(path, "ALTER TABLE strings RENAME COLUMN text TO body");
    expect_rejected(path, "table strings lacks column text");
  }
  SECTION("ranks read back out of order from a damaged page (found by the fuzzer)") {
    // Two rows of rank 0 after a row of rank 1: open() used to look the
    // duplicate up with a binary search over the unsorted list (null deref).
    const std::string path = dir.file("fuzz-crash.sqlite");
    std::filesystem::copy_file(
        std::string(RINGSCOPE_TRACE_TEST_DATA) + "/fuzz-crash-unsorted-ranks.sqlite", path);
    expect_rejected(path, "rank 0 also in", false);
  }
  SECTION("a rank number beyond 32 bits") {
    const std::string path = valid_trace(dir, "r.sqlite");
    sql_exec(path,
             "UPDATE ranks SET rank = 1;"
             "INSERT INTO ranks(rank) VALUES (4294967296), (8589934592);");
    expect_rejected(path, "invalid rank 4294967296", false);
  }
  SECTION("a view posing as the events table") {
    const std::string path = valid_trace(dir, "view.sqlite");
    sql_exec(path,
             "DROP VIEW events_v; DROP TABLE events; CREATE VIEW events AS SELECT 1 AS rank;");
    expect_rejected(path, "events is a view, not a table");
  }
  SECTION("a view posing as lane_stats, with a query that never ends") {
    const std::string path = valid_trace(dir, "stats_view.sqlite");
    sql_exec(path,
             "DROP TABLE lane_stats; CREATE VIEW lane_stats AS WITH RECURSIVE c(x) AS "
             "(SELECT 0 UNION ALL SELECT x + 1 FROM c) SELECT 0 AS rank, 0 AS lane, "
             "1 AS event_count, 1 AS max_dur_ns FROM c;");
    expect_rejected(path, "lane_stats is a view, not a table");
  }
}

TEST_CASE("a damaged lane_stats count does not make lane_columns allocate it", "[trace][corrupt]") {
  // lane_columns() reserved lane_stats.event_count entries: 2^40 from a
  // damaged file threw std::bad_alloc (an abort in the CLI and the viewer).
  test::TempDir dir;
  const std::string path = valid_trace(dir, "s.sqlite");
  sql_exec(path, "UPDATE lane_stats SET event_count = 1099511627776");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  LaneColumns columns;
  const Status s = reader.lane_columns(0, Lane::kCycle, &columns);
  // Read without the huge allocation, and then refused: the count disagrees.
  CHECK(columns.size() == 30);
  CHECK(columns.memory_bytes() < (size_t{1} << 30));
  CHECK(s.code() == StatusCode::kCorrupt);
  CHECK(s.message().find("read 30 of the 1099511627776 events of lane") != std::string::npos);
}

TEST_CASE("rows lost from a closed trace are an error, not a quietly shorter trace",
          "[trace][corrupt]") {
  // Damaged pages can drop rows with no SQLite error; the counts the writer
  // stored at close (ranks.event_count, lane_stats) give them away.
  test::TempDir dir;
  const std::string path = valid_trace(dir, "lost.sqlite");
  sql_exec(path,
           "DELETE FROM events WHERE lane = (SELECT min(lane) FROM events) AND "
           "start_ns > (SELECT avg(start_ns) FROM events)");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  int64_t seen = 0;
  const Status scan = reader.scan_events(0, [&](const StoredEvent&) { return ++seen > 0; });
  CHECK(scan.code() == StatusCode::kCorrupt);
  CHECK(scan.message().find("the file is damaged") != std::string::npos);
  CHECK(scan.message().find(path) != std::string::npos);
  std::vector<Lane> lanes;
  REQUIRE(reader.lanes(0, &lanes).ok());
  int corrupt_lanes = 0;
  for (Lane lane : lanes) {
    LaneColumns columns;
    corrupt_lanes += reader.lane_columns(0, lane, &columns).code() == StatusCode::kCorrupt;
  }
  CHECK(corrupt_lanes > 0);
  // A scan that stops early is not a complete read and is not judged.
  CHECK(reader.scan_events(0, [](const StoredEvent&) { return false; }).ok());
  std::string out;
  CHECK(test::run_cli("stats " + path, &out) != 0);
  CHECK(out.find("damaged") != std::string::npos);
  // check, where that message sends the user, reports it among the rest.
  CHECK(test::run_cli("check " + path, &out) == 1);
  CHECK(out.find("row-count") != std::string::npos);
}

TEST_CASE("a duration near INT64_MAX saturates instead of overflowing", "[trace][corrupt]") {
  test::TempDir dir;
  const std::string path = valid_trace(dir, "long.sqlite");
  sql_exec(path,
           "UPDATE events SET dur_ns = 9223372036854775807 WHERE lane = 0 AND start_ns = "
           "(SELECT max(start_ns) FROM events WHERE lane = 0);"
           "UPDATE lane_stats SET max_dur_ns = 9223372036854775807;");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  int events = 0;
  REQUIRE(reader
              .scan_events(0,
                           [&](const StoredEvent& e) {
                             CHECK(e.event.end_ns >= e.event.start_ns);
                             ++events;
                             return true;
                           })
              .ok());
  CHECK(events > 30);
  LaneColumns columns;
  REQUIRE(reader.lane_columns(0, Lane::kCycle, &columns).ok());
  REQUIRE(columns.size() == 30);
  for (size_t i = 0; i < columns.size(); ++i) CHECK(columns.end_ns(i) >= columns.start_ns[i]);
  std::vector<StoredEvent> window;
  REQUIRE(reader.events_in_window(0, Lane::kCycle, INT64_MIN / 4, INT64_MAX / 4, &window).ok());
  CHECK(window.size() == 30);
}

TEST_CASE("randomly damaged traces never crash the reader", "[trace][corrupt]") {
  test::TempDir dir;
  const std::string path = valid_trace(dir, "fuzz.sqlite");
  const std::string original = read_bytes(path);
  std::mt19937 rng(1234);
  int rejected = 0, accepted = 0;
  for (int round = 0; round < 150; ++round) {
    std::string damaged = original;
    const int flips = 1 + int(rng() % 16);
    for (int i = 0; i < flips; ++i) damaged[rng() % damaged.size()] = char(rng());
    write_bytes(dir.file("damaged.sqlite"), damaged);
    TraceReader reader;
    if (!reader.open({dir.file("damaged.sqlite")}).ok()) {
      ++rejected;
      continue;
    }
    ++accepted;
    // Whatever opened must be fully readable without crashing.
    for (const RankInfo& r : reader.ranks()) {
      (void)reader.scan_events(r.rank, [](const StoredEvent&) { return true; });
      LaneColumns columns;
      (void)reader.lane_columns(r.rank, Lane::kRing, &columns);
      std::vector<StoredEvent> window;
      (void)reader.events_in_window(r.rank, Lane::kFusion, 0, 1'000'000'000, &window);
    }
    (void)reader.quick_check();
    CheckReport report;
    (void)check_trace(reader, {}, &report);
  }
  // Both outcomes occur, so the scan, lane, window and check paths above ran
  // on damaged files that open.
  CHECK(accepted > 0);
  CHECK(rejected > 0);
}

TEST_CASE("check names events of an unknown kind or in another kind's lane", "[trace][corrupt]") {
  test::TempDir dir;
  const std::string path = valid_trace(dir, "kinds.sqlite");
  // Enqueue events (kind 2, lane 1): one becomes kind 999, one moves to lane 5.
  sql_exec(path,
           "UPDATE events SET kind = 999 WHERE kind = 2 AND start_ns = "
           "(SELECT min(start_ns) FROM events WHERE kind = 2);"
           "UPDATE events SET lane = 5 WHERE kind = 2 AND start_ns = "
           "(SELECT max(start_ns) FROM events WHERE kind = 2)");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  std::string all;
  for (const std::string& v : report.violations) all += v + "\n";
  INFO(all);
  CHECK(all.find("event-kind: rank 0: unknown event kind 999") != std::string::npos);
  CHECK(all.find("event-lane: rank 0: ENQUEUE at") != std::string::npos);
}

TEST_CASE("check notes, not fails, kinds a newer minor schema may add", "[trace][corrupt]") {
  // trace-schema.md: a 1.x reader reads any 1.y; a minor version may add kinds.
  test::TempDir dir;
  const std::string path = valid_trace(dir, "newer.sqlite");
  sql_exec(path,
           "UPDATE meta SET value = '1.99.0' WHERE key = 'schema_version';"
           "UPDATE events SET kind = 999 WHERE kind = 2 AND start_ns = "
           "(SELECT min(start_ns) FROM events WHERE kind = 2)");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  std::string all, notes;
  for (const std::string& v : report.violations) all += v + "\n";
  for (const std::string& n : report.notes) notes += n + "\n";
  INFO(all << notes);
  CHECK(all.find("event-kind") == std::string::npos);
  CHECK(notes.find("event kinds 999 are newer than this ringscope (schema 1.99.0)") !=
        std::string::npos);
}

TEST_CASE("a file of schema 1.0.0, before the STRAGGLER kind, reads and checks as before",
          "[trace][corrupt]") {
  test::TempDir dir;
  const std::string path = valid_trace(dir, "older.sqlite");
  sql_exec(path, "UPDATE meta SET value = '1.0.0' WHERE key = 'schema_version'");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  std::string all;
  for (const std::string& v : report.violations) all += v + "\n";
  INFO(all);
  CHECK(report.violations.empty());
}

TEST_CASE("a file of schema 1.1.0, without events.process_set, reads as the world's",
          "[trace][corrupt][sets]") {
  test::TempDir dir;
  const std::string path = valid_trace(dir, "before_sets.sqlite");
  sql_exec(path,
           "DROP VIEW events_v; ALTER TABLE events DROP COLUMN process_set;"
           "UPDATE meta SET value = '1.1.0' WHERE key = 'schema_version'");
  TraceReader reader;
  REQUIRE(reader.open({path}).ok());
  int64_t events = 0;
  REQUIRE(reader
              .scan_events(0,
                           [&](const StoredEvent& e) {
                             CHECK(e.event.process_set == 0);
                             ++events;
                             return true;
                           })
              .ok());
  CHECK(events > 100);
  LaneColumns columns;
  REQUIRE(reader.lane_columns(0, Lane::kCollective, &columns).ok());
  CHECK(columns.process_set.size() == columns.size());
  CheckReport report;
  REQUIRE(check_trace(reader, {}, &report).ok());
  CHECK(report.violations.empty());
  // And the viewer and merge take it: merge writes the current schema.
  CHECK(merge_traces({path}, dir.file("merged.sqlite")).ok());
}
