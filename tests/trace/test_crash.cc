// Crash safety: a child process recording events is killed with SIGKILL; the
// file it leaves must pass PRAGMA integrity_check, open in the reader, and
// hold every event recorded well before the kill. The writer commits every
// 50 ms (documented loss ~100 ms); the bound checked is 1 s, as in
// kill_rank_test.sh, because a loaded machine can stall the writer thread for
// a while. It still catches a writer that does not commit while running.
#include <signal.h>
#include <sqlite3.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "ringscope/trace_reader.h"
#include "ringscope/trace_writer.h"
#include "trace_test_util.h"

using namespace ringscope;

namespace {

// Shared between parent and child: how many events the child had recorded at
// each millisecond of its run.
struct Progress {
  std::atomic<int64_t> recorded_at_ms[4096];
  std::atomic<int64_t> last_ms;
};

[[noreturn]] void child_main(const std::string& path, Progress* progress) {
  TraceWriter writer;
  if (!writer.open(path, 0, 1).ok()) _exit(3);
  const int32_t name = writer.intern("killed/tensor");
  const auto begin = std::chrono::steady_clock::now();
  for (int64_t i = 0;; ++i) {
    TraceEvent e;
    e.kind = uint16_t(EventKind::kEnqueue);
    e.start_ns = e.end_ns = writer.now_ns();
    e.value = i;
    e.name_id = name;
    writer.record(e);
    const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - begin)
                           .count();
    if (ms < 4096) {
      progress->recorded_at_ms[ms].store(i + 1);
      progress->last_ms.store(ms);
    }
    if (i % 16 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

TEST_CASE("a SIGKILLed writer leaves a readable file that lost only its last moments",
          "[trace][crash]") {
  test::TempDir dir;
  const std::string path = dir.file("killed.rank0.sqlite");
  auto* progress = static_cast<Progress*>(
      mmap(nullptr, sizeof(Progress), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  REQUIRE(progress != MAP_FAILED);
  new (progress) Progress{};
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) child_main(path, progress);
  constexpr int64_t kMaxLossMs = 1000;
  while (progress->last_ms.load() < kMaxLossMs + 500)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(kill(child, SIGKILL) == 0);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  const int64_t killed_at_ms = progress->last_ms.load();
  // Events recorded up to kMaxLossMs before the kill must be on disk.
  int64_t required = 0;
  for (int64_t ms = 0; ms <= killed_at_ms - kMaxLossMs; ++ms)
    required = std::max(required, progress->recorded_at_ms[ms].load());
  REQUIRE(required > 0);

  // The reader opens the unclosed WAL file read-only.
  int64_t stored = 0, max_value = -1;
  {
    TraceReader reader;
    Status s = reader.open({path});
    INFO(s.to_string());
    REQUIRE(s.ok());
    CHECK_FALSE(reader.ranks()[0].finalized);
    REQUIRE(reader
                .scan_events(0,
                             [&](const StoredEvent& e) {
                               ++stored;
                               max_value = std::max(max_value, e.event.value);
                               CHECK(reader.text(e.event.name_id) == "killed/tensor");
                               return true;
                             })
                .ok());
  }
  INFO("killed at " << killed_at_ms << " ms; recorded 1 s before: " << required
                    << "; stored: " << stored);
  CHECK(stored >= required);
  CHECK(max_value + 1 == stored);  // a prefix: nothing in the middle is missing

  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  CHECK(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) == "ok");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  munmap(progress, sizeof(Progress));

  // The CLI checks it too (notes the unclosed file; the one rank is complete).
  std::string output;
  CHECK(test::run_cli("check " + path, &output) == 0);
  CHECK(output.find("not closed") != std::string::npos);
}
