// Starting a trace when one rank cannot open its file (here a directory,
// not empty, sits where its file would go): every rank's start_trace fails at once,
// the failing rank with its own reason and the others naming it, instead of
// the others waiting for it in the clock measurement until the op timeout;
// the runtime goes on, and a later start_trace works. Ranks are threads.
#include <catch2/catch.hpp>

#include <filesystem>

#include <future>
#include <thread>

#include "capture_recorder.h"
#include "local_world.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_schema.h"
#include "temp_dir.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("a trace file one rank cannot open fails start_trace on every rank, naming it",
          "[runtime][trace]") {
  const int n = 3, blocked = 1;
  test::TempDir dir;
  const std::string bad = dir.file("bad"), good = dir.file("good");
  // Not empty, so the writer's removal of an old file cannot clear it.
  std::filesystem::create_directories(per_rank_trace_path(bad, blocked) + "/keep");
  Options o = fast_options();
  o.op_timeout_seconds = 60;  // a wait for the blocked rank would show as a Timeout
  ThreadChecks checks;
  run_runtimes(n, o, [&](int r, Runtime& rt) {
    const std::string tag = "rank " + std::to_string(r) + ": ";
    Status s = rt.start_trace(bad);
    if (r == blocked) {
      checks.expect(!s.ok() && s.code() != StatusCode::kTimeout, tag + s.to_string());
    } else {
      checks.expect(s.code() == StatusCode::kIoError, tag + s.to_string());
      checks.expect(s.message().find("rank 1 could not open its trace file") != std::string::npos,
                    tag + s.message());
      checks.expect(!std::filesystem::exists(per_rank_trace_path(bad, r)),
                    tag + "its own file is removed");
    }
    std::vector<float> x(16, 1.0f);
    s = run_op(rt, allreduce_entry("after", DataType::kFloat32, {16}, x.data(), x.data()));
    checks.expect(s.ok() && x[0] == n, tag + "allreduce after: " + s.to_string());
    s = rt.start_trace(good);
    checks.expect(s.ok(), tag + "a good path: " + s.to_string());
    checks.expect(rt.stop_trace().ok(), tag + "stop_trace");
    checks.expect(std::filesystem::exists(per_rank_trace_path(good, r)), tag + "good file");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}

TEST_CASE("a tensor pending across a trace switch is recorded with the new trace's name and clock",
          "[runtime][trace]") {
  // Rank 0 submits "a" under recorder A; it waits for rank 1 while the
  // recorder becomes B, whose first interned text is another: "a"'s
  // negotiation span must name "a" in B, and not end before it starts.
  CaptureRecorder first, second;
  second.intern("another name");
  std::atomic<bool> switched{false};
  ThreadChecks checks;
  run_runtimes(
      2, fast_options(),
      [&](int r, Runtime& rt) {
        std::vector<float> x(8, 1.0f + r);
        if (r == 0) {
          std::promise<Status> done;
          TensorEntry e = allreduce_entry("a", DataType::kFloat32, {8}, x.data(), x.data());
          e.done = [&](const Status& s) { done.set_value(s); };
          checks.expect(rt.submit(std::move(e)).ok(), "submit");
          // Drained under A (its ENQUEUE is there), then two whole cycles
          // under B before rank 1 submits: the op runs in a B cycle.
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
          while (first.events(EventKind::kEnqueue).empty() &&
                 std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          rt.set_recorder(&second);
          const uint64_t cycles = rt.counters().cycles;
          while (rt.counters().cycles < cycles + 2 && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          switched = true;
          checks.expect(done.get_future().get().ok(), "a completes");
        } else {
          while (!switched) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          checks.expect(
              run_op(rt, allreduce_entry("a", DataType::kFloat32, {8}, x.data(), x.data())).ok(),
              "a completes on rank 1");
        }
        checks.expect(x[0] == 3.0f, "the sum");
      },
      nullptr, {&first});
  INFO(checks.summary());
  CHECK(checks.ok());
  CHECK(first.events(EventKind::kEnqueue).size() == 1);
  const std::vector<TraceEvent> negotiated = second.events(EventKind::kNegotiate);
  REQUIRE(negotiated.size() == 1);
  CHECK(second.text(negotiated[0].name_id) == "a");
  CHECK(negotiated[0].end_ns >= negotiated[0].start_ns);
}

TEST_CASE("trace windows opened and closed again keep no event buffers of closed windows",
          "[runtime][trace]") {
  // A window every N steps for days: each closed writer once kept its
  // per-thread event buffers (4.5 MiB a recording thread) until shutdown.
  test::TempDir dir;
  ThreadChecks checks;
  run_runtimes(2, fast_options(), [&](int r, Runtime& rt) {
    const std::string tag = "rank " + std::to_string(r) + ": ";
    std::vector<float> x(64, 1.0f);
    for (int window = 0; window < 4; ++window) {
      const std::string base = dir.file("w" + std::to_string(window));
      checks.expect(rt.start_trace(base).ok(), tag + "start_trace");
      for (int step = 0; step < 5; ++step) {
        rt.mark_step(step);  // a second recording thread: this one
        Status s = run_op(rt, allreduce_entry("g", DataType::kFloat32, {64}, x.data(), x.data()));
        checks.expect(s.ok(), tag + s.to_string());
      }
      checks.expect(rt.stop_trace().ok(), tag + "stop_trace");
    }
    // Every window but the last had cycles after it closed: released. The
    // last may still hold its buffers (released at the next start).
    const size_t held = rt.closed_trace_buffer_bytes();
    checks.expect(held <= 2 * 65536 * sizeof(TraceEvent),
                  tag + std::to_string(held) + " bytes still held by closed traces");
    // The files are whole: each window's steps are there.
    for (int window = 0; window < 4; ++window) {
      TraceReader reader;
      const std::string which = tag + "window " + std::to_string(window);
      if (!reader.open({per_rank_trace_path(dir.file("w" + std::to_string(window)), r)}).ok()) {
        checks.expect(false, which + ": cannot open");
        continue;
      }
      int steps = 0;
      Status s = reader.scan_events(r, [&](const StoredEvent& e) {
        steps += e.event.kind == static_cast<uint16_t>(EventKind::kStep);
        return true;
      });
      checks.expect(s.ok() && steps == 5, which + ": " + std::to_string(steps) + " steps");
    }
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
}
