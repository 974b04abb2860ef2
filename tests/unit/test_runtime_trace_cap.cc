// The trace size cap (Options::trace_max_bytes, RINGSCOPE_TRACE_MAX_MB):
// when a rank's file reaches it, every rank stops tracing after one agreed
// cycle, the files are finished in the background and say why, training
// goes on, start_trace is refused alike on every rank until stop_trace, and
// then records another window. A rank without a trace of its own keeps the
// others from waiting for it in the clock measurement.
// Ranks are threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <optional>
#include <thread>

#include "local_world.h"
#include "ringscope/trace_reader.h"
#include "ringscope/trace_schema.h"
#include "temp_dir.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

// Whether any rank's loop has stopped its trace, agreed by an allreduce:
// every rank leaves its traced loop after the same step (a rank that read
// its own recorder a moment before its loop cleared it would run one step
// more than its peers, alone).
// Whether this rank's trace is open: its recorder is the trace's (with no
// trace the runtime records into the flight recorder, or nothing).
bool tracing(const Runtime& rt) {
  return rt.recorder() != nullptr && rt.recorder() != rt.flight_recorder();
}

// `stopped`: this rank's say (by default, whether its trace is closed).
bool any_rank_stopped(Runtime& rt, ThreadChecks& checks, const std::string& tag,
                      std::optional<bool> stopped = std::nullopt) {
  std::vector<float> flag(1, stopped.value_or(!tracing(rt)) ? 1.0f : 0.0f);
  Status s = run_op(rt, allreduce_entry("stopped", DataType::kFloat32, {1}, flag.data(),
                                        flag.data(), ReduceOp::kMax));
  checks.expect(s.ok(), tag + "the stop agreement: " + s.to_string());
  return !s.ok() || flag[0] > 0;
}

// One step: 16 allreduces of 256 floats (one fused group), then a STEP mark.
Status run_step(Runtime& rt, int64_t step, std::vector<std::vector<float>>& grads) {
  std::vector<std::promise<Status>> done(grads.size());
  for (size_t k = 0; k < grads.size(); ++k) {
    std::fill(grads[k].begin(), grads[k].end(), 1.0f);
    TensorEntry e =
        allreduce_entry("grad/" + std::to_string(k), DataType::kFloat32,
                        {static_cast<int64_t>(grads[k].size())}, grads[k].data(), grads[k].data());
    e.done = [&done, k](const Status& s) { done[k].set_value(s); };
    if (Status s = rt.submit(std::move(e)); !s.ok()) return s;
  }
  for (auto& d : done)
    if (Status s = d.get_future().get(); !s.ok()) return s;
  rt.mark_step(step);
  return Status::OK();
}

struct FileFacts {
  bool opened = false, finalized = false, has_end_offset = false;
  int64_t last_cycle = -1, steps = 0, dropped = -1;
  std::string stopped_by;
};

FileFacts read_facts(const std::string& path, int rank) {
  FileFacts f;
  TraceReader reader;
  if (!reader.open({path}).ok()) return f;
  f.opened = true;
  const RankInfo& info = reader.ranks()[0];
  f.finalized = info.finalized;
  f.has_end_offset = info.has_end_offset;
  f.dropped = info.dropped_events;
  f.stopped_by = reader.meta_value("stopped_by", "");
  (void)reader.scan_events(rank, [&](const StoredEvent& e) {
    if (e.event.kind == static_cast<uint16_t>(EventKind::kCycle))
      f.last_cycle = std::max<int64_t>(f.last_cycle, e.event.cycle);
    f.steps += e.event.kind == static_cast<uint16_t>(EventKind::kStep);
    return true;
  });
  return f;
}

}  // namespace

TEST_CASE("a trace at its size cap stops on every rank after one agreed cycle, training goes on",
          "[runtime][trace][cap]") {
  const int n = GENERATE(1, 2, 3);
  test::TempDir dir;
  const std::string base = dir.file("capped"), next = dir.file("next");
  Options o = fast_options();
  o.trace_max_bytes = 512 * 1024;
  ThreadChecks checks;
  std::vector<int64_t> steps_traced(n, 0);
  run_runtimes(n, o, [&](int r, Runtime& rt) {
    const std::string tag = "rank " + std::to_string(r) + ": ";
    std::vector<std::vector<float>> grads(16, std::vector<float>(256));
    checks.expect(rt.start_trace(base).ok(), tag + "start_trace");
    int64_t step = 0;
    // Until a loop stops its trace (the recorder goes), with a bound.
    for (; !any_rank_stopped(rt, checks, tag) && step < 20'000; ++step) {
      Status s = run_step(rt, step, grads);
      if (!s.ok()) {
        checks.expect(false, tag + "step " + std::to_string(step) + ": " + s.to_string());
        return;
      }
    }
    steps_traced[r] = step;
    // Every rank's loop stops in the same cycle: give the others' a moment.
    for (int wait = 0; tracing(rt) && wait < 2000; ++wait)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    checks.expect(!tracing(rt), tag + "the trace never stopped on this rank");
    // At once, without stop_trace: refused on every rank alike (a rank whose
    // loop has not stopped its trace yet must not leave the others waiting).
    Status early = rt.start_trace(next);
    checks.expect(early.code() == StatusCode::kInvalidArgument &&
                      early.message().find("call stop_trace() first") != std::string::npos,
                  tag + "start_trace before stop_trace: " + early.to_string());
    // Training goes on, untraced, with correct results.
    for (int k = 0; k < 20; ++k, ++step) {
      Status s = run_step(rt, step, grads);
      checks.expect(s.ok() && grads[0][0] == static_cast<float>(n),
                    tag + "after the cap: " + s.to_string());
    }
    const Runtime::Counters c = rt.counters();
    checks.expect(c.trace_caps == 1 && c.trace_cap_clock_measurements == 1,
                  tag + std::to_string(c.trace_caps) + " cap stops, " +
                      std::to_string(c.trace_cap_clock_measurements) + " clock measurements");
    // The next window, after stop_trace (which waits for the file).
    checks.expect(rt.stop_trace().ok(), tag + "stop_trace after the cap");
    Status started = rt.start_trace(next);
    checks.expect(started.ok(), tag + "start_trace after the cap: " + started.to_string());
    for (int k = 0; k < 3; ++k, ++step) checks.expect(run_step(rt, step, grads).ok(), tag);
    checks.expect(rt.stop_trace().ok(), tag + "stop_trace");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  std::vector<FileFacts> facts;
  for (int r = 0; r < n; ++r) facts.push_back(read_facts(per_rank_trace_path(base, r), r));
  for (int r = 0; r < n; ++r) {
    const FileFacts& f = facts[r];
    INFO("n = " << n << ", rank " << r << ": stopped_by '" << f.stopped_by << "'");
    REQUIRE(f.opened);
    CHECK(f.finalized);
    // No check of f.dropped: the steps run back to back, and where another
    // test takes the second core the writer thread falls behind and drops
    // (counted in the file; the writer's accounting has its own tests).
    // What matters here is where the trace stopped.
    CHECK(f.stopped_by.find("size cap") != std::string::npos);
    CHECK(f.stopped_by.find("0.5 MiB (RINGSCOPE_TRACE_MAX_MB)") != std::string::npos);
    // They stopped after the same cycle: its number is in stopped_by.
    CHECK(f.stopped_by == facts[0].stopped_by);
    CHECK(f.stopped_by.find("after cycle ") != std::string::npos);
    CHECK(f.last_cycle > 0);
    // A STEP mark is recorded after its step's cycle; the step that ran in
    // the last traced cycle may have lost its mark to the stop.
    CHECK(f.steps >= steps_traced[r] - 1);
    CHECK(f.steps <= steps_traced[r]);
    if (r > 0) CHECK(f.has_end_offset);  // measured at the cap, on every rank
    const FileFacts window = read_facts(per_rank_trace_path(next, r), r);
    CHECK(window.opened);
    CHECK(window.steps == 3);
    CHECK(window.stopped_by.empty());
  }
}

TEST_CASE("a rank without its own trace keeps the others from timing the clock at the cap",
          "[runtime][trace][cap]") {
  // Rank 1 stops its trace at once; rank 0's reaches the cap. Had rank 0
  // measured the clock, it would wait for rank 1 until the op timeout and
  // its loop would fail: every later op would.
  test::TempDir dir;
  const std::string base = dir.file("one");
  Options o = fast_options();
  o.trace_max_bytes = 512 * 1024;
  o.op_timeout_seconds = 20;
  ThreadChecks checks;
  run_runtimes(2, o, [&](int r, Runtime& rt) {
    const std::string tag = "rank " + std::to_string(r) + ": ";
    std::vector<std::vector<float>> grads(16, std::vector<float>(256));
    checks.expect(rt.start_trace(base).ok(), tag + "start_trace");
    if (r == 1) checks.expect(rt.stop_trace().ok(), tag + "stop_trace");
    // Rank 0's stop ends the traced part on both (rank 1 has no recorder:
    // it only follows).
    int64_t step = 0;
    for (;; ++step) {
      const bool stopped = r == 0 ? any_rank_stopped(rt, checks, tag)
                                  : any_rank_stopped(rt, checks, tag, /*stopped=*/false);
      if (stopped || step >= 20'000) {
        checks.expect(stopped, tag + "the trace never stopped");
        break;
      }
      Status s = run_step(rt, step, grads);
      if (!s.ok()) {
        checks.expect(false, tag + "step " + std::to_string(step) + ": " + s.to_string());
        return;
      }
    }
    for (int k = 0; k < 5; ++k, ++step)
      checks.expect(run_step(rt, step, grads).ok(), tag + "a step after the cap");
    // Rank 0 stopped its trace without timing the clock against rank 1.
    const Runtime::Counters c = rt.counters();
    checks.expect(c.trace_caps == (r == 0 ? 1u : 0u) && c.trace_cap_clock_measurements == 0,
                  tag + std::to_string(c.trace_caps) + " cap stops, " +
                      std::to_string(c.trace_cap_clock_measurements) + " clock measurements");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  const FileFacts rank0 = read_facts(per_rank_trace_path(base, 0), 0);
  REQUIRE(rank0.opened);
  CHECK(rank0.finalized);
  CHECK(rank0.stopped_by.find("size cap") != std::string::npos);
}
