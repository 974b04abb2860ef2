// TraceControl alone, two ranks as threads over the in-process transport:
// a start on every rank opens each rank's file and arms the loop's view
// (the settings snapshot due once), a second start is refused while the
// trace is held, the stop at the size cap unhooks the recorder and finishes
// the file, stop() then frees the way for the next window, and the name-id
// cache belongs to one trace.
#include <catch2/catch.hpp>

#include <filesystem>
#include <thread>

#include "local_transport.h"
#include "ringscope/trace_schema.h"
#include "temp_dir.h"
#include "trace_control.h"

using namespace ringscope;

namespace {
// Runs fn(rank, control) on two threads as two ranks.
template <typename Fn>
void two_ranks(LoopProgress& progress, int64_t max_bytes, Fn fn) {
  auto fabric = std::make_shared<LocalFabric>(2);
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r)
    ranks[r] = std::thread([&, r] {
      LocalTransport transport(fabric, r);
      Topology topo;
      topo.rank = r;
      topo.size = 2;
      TraceControl control({&transport, topo, 30.0, max_bytes, [] { return false; }}, progress);
      fn(r, control);
    });
  for (auto& t : ranks) t.join();
}
}  // namespace

TEST_CASE("trace control: start, the loop's view, refused while held, stop, start again",
          "[runtime][parts][trace]") {
  test::TempDir dir;
  const std::string base = dir.file("parts"), next = dir.file("next");
  LoopProgress progress;
  progress.exited = true;  // no loop: stop() need not wait for cycles
  std::string errors[2];
  two_ranks(progress, 0, [&](int r, TraceControl& trace) {
    auto fail = [&](const std::string& what) { errors[r] += what + "; "; };
    if (!trace.start(base, {{"cache_capacity", "1024"}}, false).ok()) fail("start");
    if (!trace.recorder()) fail("no recorder after start");
    TraceControl::Cycle c = trace.begin_cycle();
    if (!c.traced || !c.snapshot_due || c.at_size_cap()) fail("first cycle's view");
    if (trace.begin_cycle().snapshot_due) fail("snapshot due twice");
    const int32_t id = trace.intern(c.recorder, "grad/w");
    if (id < 0 || trace.intern(c.recorder, "grad/w") != id) fail("intern");
    if (trace.intern(nullptr, "grad/w") != -1) fail("intern untraced");
    Status again = trace.start(next, {}, false);
    if (again.code() != StatusCode::kInvalidArgument ||
        again.message().find("call stop_trace() first") == std::string::npos)
      fail("second start: " + again.to_string());
    trace.mark_step(3);
    if (!trace.stop().ok()) fail("stop");
    if (trace.recorder()) fail("recorder after stop");
    if (trace.begin_cycle().traced) fail("traced after stop");
    if (!trace.start(next, {}, false).ok()) fail("start after stop");
    std::string warning;
    if (!trace.close(/*measure=*/true, 30.0, &warning).ok() || !warning.empty())
      fail("close: " + warning);
    if (trace.start(base, {}, /*shutting_down=*/true).code() != StatusCode::kShutdown)
      fail("start while shutting down");
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
  for (int r = 0; r < 2; ++r) {
    CHECK(std::filesystem::exists(per_rank_trace_path(base, r)));
    CHECK(std::filesystem::exists(per_rank_trace_path(next, r)));
  }
}

TEST_CASE("trace control: the stop at the size cap unhooks the recorder, start waits for stop",
          "[runtime][parts][trace]") {
  test::TempDir dir;
  const std::string base = dir.file("capped");
  LoopProgress progress;
  progress.exited = true;
  std::string errors[2];
  two_ranks(progress, 1 << 20, [&](int r, TraceControl& trace) {
    auto fail = [&](const std::string& what) { errors[r] += what + "; "; };
    if (!trace.start(base, {}, false).ok()) fail("start");
    TraceControl::Cycle c = trace.begin_cycle();
    std::string warning;
    const std::string said = trace.stop_at_size_cap(c.own, /*measure=*/true, 7, &warning);
    if (said.find("after cycle 7") == std::string::npos) fail("message: " + said);
    if (!warning.empty()) fail(warning);
    if (trace.recorder() || trace.begin_cycle().own) fail("still hooked after the cap");
    Status held = trace.start(base, {}, false);
    if (held.message().find("stopped at its size cap") == std::string::npos)
      fail("start after the cap: " + held.to_string());
    if (!trace.stop().ok()) fail("stop");  // waits for the background finish
    if (trace.closed_buffer_bytes() != 0) fail("buffers kept after the loop ended");
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}
