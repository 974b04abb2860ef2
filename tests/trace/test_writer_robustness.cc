// The trace writer under pressure: a thread recording faster than SQLite
// inserts still gets commits and flushes; ranks.event_count stays current;
// record() racing close() loses nothing uncounted; after a write error
// every event is either committed or counted as dropped.
#include <sqlite3.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "ringscope/trace_writer.h"
#include "trace_test_util.h"

using namespace ringscope;
using namespace std::chrono_literals;

namespace {

int64_t query_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 2000);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  const int64_t value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

TraceEvent enqueue_event(int64_t t) {
  TraceEvent e;
  e.kind = static_cast<uint16_t>(EventKind::kEnqueue);
  e.start_ns = e.end_ns = t;
  return e;
}

}  // namespace

TEST_CASE("a thread recording faster than the writer inserts still gets commits and flushes",
          "[trace][writer]") {
  test::TempDir dir;
  const std::string path = dir.file("busy.rank0.sqlite");
  TraceWriterOptions options;
  options.buffer_events = 4096;
  options.commit_interval_ms = 20;
  TraceWriter writer(options);
  REQUIRE(writer.open(path, 0, 1).ok());
  std::atomic<bool> stop{false};
  std::thread producer([&] {
    for (int64_t t = 0; !stop.load(std::memory_order_relaxed); ++t) writer.record(enqueue_event(t));
  });
  std::this_thread::sleep_for(300ms);
  // Committed while the producer never lets its buffer empty.
  const int64_t committed = query_int(path, "SELECT count(*) FROM events");
  auto flushed = std::async(std::launch::async, [&] { return writer.flush(); });
  const bool flush_returned = flushed.wait_for(30s) == std::future_status::ready;  // not forever
  stop = true;
  producer.join();
  CHECK(committed > 0);
  CHECK(flush_returned);
  CHECK(flushed.get().ok());
  REQUIRE(writer.close().ok());
}

TEST_CASE("ranks.event_count is kept current while the trace is written", "[trace][writer]") {
  test::TempDir dir;
  const std::string path = dir.file("count.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  writer.intern("a");
  for (int i = 0; i < 10; ++i) writer.record(enqueue_event(i));
  REQUIRE(writer.flush().ok());
  CHECK(query_int(path, "SELECT event_count FROM ranks") == 10);
  for (int i = 10; i < 1010; ++i) writer.record(enqueue_event(i));
  REQUIRE(writer.flush().ok());
  CHECK(query_int(path, "SELECT event_count FROM ranks") == 1010);
  CHECK(writer.written_events() == 1010);
  REQUIRE(writer.close().ok());
}

TEST_CASE("events recorded while close runs are written or counted, never lost",
          "[trace][writer]") {
  for (int round = 0; round < 5; ++round) {
    test::TempDir dir;
    const std::string path = dir.file("race.rank0.sqlite");
    TraceWriter writer;
    REQUIRE(writer.open(path, 0, 1).ok());
    constexpr int kThreads = 6;
    std::atomic<int64_t> recorded{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([&, i] {
        while (!go.load()) std::this_thread::yield();
        // Each thread's first record registers its buffer, some of them
        // while close() runs.
        std::this_thread::sleep_for(std::chrono::microseconds(200 * i));
        for (int k = 0; k < 3000; ++k) {
          writer.record(enqueue_event(int64_t(i) << 32 | k));
          recorded.fetch_add(1);
        }
      });
    go = true;
    std::this_thread::sleep_for(std::chrono::microseconds(300 + 150 * round));
    REQUIRE(writer.close().ok());
    for (std::thread& t : threads) t.join();
    const int64_t stored =
        query_int(path, "SELECT count(*) FROM events WHERE kind = " +
                            std::to_string(static_cast<int>(EventKind::kEnqueue)));
    INFO("round " << round << ": stored " << stored << ", dropped " << writer.dropped_events());
    CHECK(stored + int64_t(writer.dropped_events()) == recorded.load());
  }
}

TEST_CASE("after a write error every event is committed or counted as dropped", "[trace][writer]") {
  test::TempDir dir;
  const std::string path = dir.file("busy_lock.rank0.sqlite");
  TraceWriter writer;
  REQUIRE(writer.open(path, 0, 1).ok());
  for (int i = 0; i < 50; ++i) writer.record(enqueue_event(i));
  REQUIRE(writer.flush().ok());
  // Another connection takes the write lock: the writer's next insert waits
  // for it (5 s) and fails.
  sqlite3* holder = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &holder) == SQLITE_OK);
  REQUIRE(sqlite3_exec(holder, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
  for (int i = 50; i < 150; ++i) writer.record(enqueue_event(i));
  CHECK_FALSE(writer.flush().ok());
  for (int i = 150; i < 250; ++i) writer.record(enqueue_event(i));
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  CHECK_FALSE(writer.close().ok());
  const int64_t stored = query_int(path, "SELECT count(*) FROM events WHERE kind = " +
                                             std::to_string(static_cast<int>(EventKind::kEnqueue)));
  CHECK(stored == 50);
  CHECK(writer.written_events() == 50);
  CHECK(stored + int64_t(writer.dropped_events()) == 250);
}
