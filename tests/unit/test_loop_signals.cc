// The loop's small lock-free parts alone: LoopGate (settled once: open or
// never run), ShutdownSignal (asked once, its cut ends waits) and
// CounterBoard (updates under its lock, copies from any thread).
#include <catch2/catch.hpp>

#include <thread>

#include "loop_gate.h"
#include "runtime_counters.h"
#include "shutdown_signal.h"
#include "transport.h"

using namespace ringscope;

TEST_CASE("loop gate: a waiting loop runs once opened, and the outcome is set once",
          "[runtime][parts]") {
  LoopGate gate;
  CHECK_FALSE(gate.settled());
  bool ran = false;
  std::thread loop([&] { ran = gate.wait(); });
  gate.open();
  loop.join();
  CHECK(ran);
  CHECK(gate.ran());
  gate.never_run();  // too late: opened already
  CHECK(gate.ran());

  LoopGate closed;
  closed.never_run();
  CHECK_FALSE(closed.wait());
  CHECK_FALSE(closed.ran());
  closed.open();
  CHECK_FALSE(closed.ran());
}

TEST_CASE("shutdown signal: the first request sets the cut that ends waits", "[runtime][parts]") {
  ShutdownSignal shutdown;
  CHECK_FALSE(shutdown.requested());
  CHECK(shutdown.cut()->load() == 0);
  Deadline far = Deadline::after(3600);
  far.cut_short = shutdown.cut();
  CHECK_FALSE(far.expired());
  CHECK(shutdown.request(0.0));
  CHECK(shutdown.requested());
  CHECK_FALSE(shutdown.request(100.0));  // once
  CHECK(far.expired());                  // the cut has passed
}

TEST_CASE("counter board: updates and copies", "[runtime][parts]") {
  CounterBoard board;
  std::thread loop([&] {
    for (int i = 0; i < 1000; ++i) board.update([](RuntimeCounters& c) { ++c.cycles; });
  });
  uint64_t seen = 0;
  while (seen < 1000) {
    const uint64_t now = board.snapshot().cycles;
    REQUIRE(now >= seen);  // never goes back
    seen = now;
  }
  loop.join();
  CHECK(board.writer_view().cycles == 1000);
}
