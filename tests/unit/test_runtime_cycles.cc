// Whole runtimes, ranks as threads: the background loop's cycle time (the
// minimum period between cycle starts while work is outstanding, also after
// it changes mid-run) and the reuse of the host fusion buffer across cycles.
//
// The cycle-time checks are upper bounds on a cycle count over the time
// actually measured: a slow machine only makes cycles rarer, so they cannot
// fail from noise, while a loop that ignored the cycle time would run
// hundreds of cycles where the bound allows a few.
#include <catch2/catch.hpp>

#include <atomic>

#include <chrono>
#include <thread>

#include "ringscope/planning/cycle_timing.h"
#include "local_world.h"
#include "tensor_values.h"

using namespace ringscope;
using namespace ringscope::testing;

namespace {

Options quiet_options(double cycle_ms) {
  Options o;
  o.settings.cycle_time_ms = cycle_ms;
  o.op_timeout_seconds = 30;
  o.log_level = 0;
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Rank 0 submits `name` at once, rank 1 `delay` later, so rank 0 has work
// outstanding for `delay` while every cycle finds nothing to run. Returns,
// on each rank, the cycles run meanwhile and the seconds they took.
struct CycleCount {
  uint64_t cycles = 0;
  double seconds = 0;
};
CycleCount count_cycles_while_waiting(Runtime& rt, int rank, const std::string& name,
                                      std::chrono::milliseconds delay, ThreadChecks& checks) {
  std::vector<float> buf(16, 1.0f);
  if (rank == 1) std::this_thread::sleep_for(delay);
  const uint64_t before = rt.counters().cycles;
  const auto t0 = std::chrono::steady_clock::now();
  Status s = run_op(rt, allreduce_entry(name, DataType::kFloat32, {16}, buf.data(), buf.data()));
  checks.expect(s.ok(), s.to_string());
  return CycleCount{rt.counters().cycles - before, seconds_since(t0)};
}

// Cycles that a loop honouring `period_ms` may run in `seconds`: one per
// period, plus the cycle that starts the wait, the one a peer's doorbell
// starts when it submits, and three to spare (rounding; a switch agreed
// in the first cycle). Measured: 31 at 10 ms in 0.30 s, 7 at 100 ms in 0.60 s.
uint64_t most_cycles(double seconds, double period_ms) {
  return static_cast<uint64_t>(seconds * 1000.0 / period_ms) + 5;
}

}  // namespace

TEST_CASE("cycles with work outstanding are spaced by the cycle time, also after it changes",
          "[runtime][cycle]") {
  const int n = 2;
  ThreadChecks checks;
  std::vector<CycleCount> fast(n), slow(n);
  std::vector<double> applied(n, 0);
  run_runtimes(n, quiet_options(10.0), [&](int r, Runtime& rt) {
    fast[r] = count_cycles_while_waiting(rt, r, "a", std::chrono::milliseconds(300), checks);
    // Rank 0 proposes a slower cycle; every rank switches at one agreed
    // cycle, which the next op's cycles must already honour.
    if (r == 0) {
      Settings s = rt.settings();
      s.cycle_time_ms = 100.0;
      rt.propose_settings(s);
    }
    std::vector<float> buf(16, 1.0f);
    Status s =
        run_op(rt, allreduce_entry("switch", DataType::kFloat32, {16}, buf.data(), buf.data()));
    checks.expect(s.ok(), s.to_string());
    applied[r] = rt.settings().cycle_time_ms;
    slow[r] = count_cycles_while_waiting(rt, r, "b", std::chrono::milliseconds(600), checks);
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r << ": " << fast[r].cycles << " cycles in " << fast[r].seconds
                 << " s at 10 ms, then " << slow[r].cycles << " in " << slow[r].seconds
                 << " s at 100 ms");
    CHECK(applied[r] == 100.0);
    CHECK(fast[r].cycles >= 1);
    CHECK(fast[r].cycles <= most_cycles(fast[r].seconds, 10.0));
    CHECK(slow[r].cycles >= 1);
    CHECK(slow[r].cycles <= most_cycles(slow[r].seconds, 100.0));
  }
}

TEST_CASE("the host fusion buffer is allocated per new largest group, then reused",
          "[runtime][fusion]") {
  const int n = 2;
  Options o = quiet_options(5.0);  // a rank whose peer lags waits for it
  o.shared_memory = false;         // the message-based ring fuses through the host buffer
  o.settings.fusion_threshold_bytes = 64 * 1024;
  constexpr int kSteps = 30, kTensors = 16;  // 16 x 16 KiB: fused groups of up to 4
  ThreadChecks checks;
  std::vector<Runtime::Counters> after_steps(n), after_growth(n), after_switch(n), after_shrink(n);
  run_runtimes(n, o, [&](int r, Runtime& rt) {
    std::vector<std::vector<uint8_t>> bufs;
    std::vector<std::string> names;
    for (int t = 0; t < kTensors; ++t) names.push_back("t" + std::to_string(t));
    auto step = [&](int i) {
      // Inputs first, so the submissions come as one burst (one cycle).
      bufs.clear();
      for (int t = 0; t < kTensors; ++t) bufs.push_back(make_input(DataType::kFloat32, r, 4096, t));
      const std::vector<Status> res = allreduce_many(rt, names, bufs, DataType::kFloat32, 4096);
      for (int t = 0; t < kTensors; ++t) {
        checks.expect(res[t].ok(), "step " + std::to_string(i) + ": " + res[t].to_string());
        checks.expect(get_element(DataType::kFloat32, bufs[t].data(), 7) ==
                          expected_allreduce(DataType::kFloat32, ReduceOp::kSum, n, 7, 1, 1, t),
                      "fused value, step " + std::to_string(i));
      }
    };
    auto set_threshold = [&](int64_t bytes) {
      if (r == 0) {
        Settings s = rt.settings();
        s.fusion_threshold_bytes = bytes;
        rt.propose_settings(s);
      }
      // The switch is agreed in a cycle of the next steps. Every rank runs
      // the same number of them: the tensor names repeat, so a rank that
      // stopped a step early (its settings already switched, in an idle
      // cycle, before its peer looked) would leave its peer's last step
      // unmatched until the op timeout. Each step runs at least one cycle.
      for (int i = 0; i < 5; ++i) step(-1);
      checks.expect(rt.settings().fusion_threshold_bytes == bytes, "threshold switched");
    };
    for (int i = 0; i < kSteps; ++i) step(i);
    after_steps[r] = rt.counters();
    set_threshold(256 * 1024);
    for (int i = 0; i < kSteps; ++i) step(i);
    after_growth[r] = rt.counters();
    set_threshold(64 * 1024);
    after_switch[r] = rt.counters();
    for (int i = 0; i < kSteps; ++i) step(i);
    after_shrink[r] = rt.counters();
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < n; ++r) {
    INFO("rank " << r);
    // Group sizes are multiples of 16 KiB up to the threshold, and the
    // buffer only grows: at most 4 allocations for the first 30 steps
    // (dozens of fused groups), at most 12 more after the threshold grew
    // to 256 KiB, none once it is back at 64 KiB.
    CHECK(after_steps[r].fusion_buffer_allocations >= 1);
    CHECK(after_steps[r].fusion_buffer_allocations <= 4);
    CHECK(after_steps[r].fusion_buffer_bytes >= 32 * 1024);
    CHECK(after_steps[r].fusion_buffer_bytes <= 64 * 1024);
    CHECK(after_growth[r].fusion_buffer_allocations <=
          after_steps[r].fusion_buffer_allocations + 12);
    CHECK(after_growth[r].fusion_buffer_bytes <= 256 * 1024);
    CHECK(after_growth[r].fusion_buffer_bytes >= after_steps[r].fusion_buffer_bytes);
    CHECK(after_shrink[r].fusion_buffer_allocations == after_switch[r].fusion_buffer_allocations);
    CHECK(after_shrink[r].fusion_buffer_bytes == after_switch[r].fusion_buffer_bytes);
  }
}

TEST_CASE("a rank sleeping out a long cycle time joins when a late peer's doorbell rings",
          "[runtime][cycle]") {
  // Rank 0 submits 'x' at once and then, its work outstanding, sleeps out a
  // 10 s cycle time. Rank 1 submits 'x' 100 ms later: idle, it starts a cycle
  // at once, and as rank 0 has not joined it 50 us later (kDoorbellDelay) it
  // rings its doorbell; rank 0 joins at its next poll. Without the doorbell
  // 'x' would wait for rank 0's cycle time, nearly 10 s: the bound checked
  // (half of that) leaves seconds of slack for a loaded machine.
  for (const bool shared : {true, false}) {
    Options o = quiet_options(10000.0);
    o.shared_memory = shared;  // negotiation in shared memory, or messages
    ThreadChecks checks;
    double rank1_seconds = 0;
    uint64_t rang = 0;
    run_runtimes(2, o, [&](int r, Runtime& rt) {
      checks.expect(rt.negotiates_in_shared_memory() == shared, "the negotiation path asked for");
      std::vector<float> buf(16, 1.0f);
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const uint64_t before = rt.counters().doorbells_rung;
      const auto t0 = std::chrono::steady_clock::now();
      Status s = run_op(rt, allreduce_entry("x", DataType::kFloat32, {16}, buf.data(), buf.data()));
      checks.expect(s.ok(), s.to_string());
      checks.expect(buf[0] == 2.0f, "the sum of two ones");
      if (r == 1) {
        rank1_seconds = seconds_since(t0);
        rang = rt.counters().doorbells_rung - before;
      }
    });
    INFO(checks.summary());
    REQUIRE(checks.ok());
    INFO((shared ? "shared-memory" : "message")
         << " negotiation: rank 1 waited " << rank1_seconds << " s, rang " << rang << " time(s)");
    CHECK(rang >= 1);
    CHECK(rank1_seconds < 5.0);  // not rank 0's 10 s cycle time
  }
}

TEST_CASE("an idle rank does not answer a doorbell: the ringer's cycle waits for its work",
          "[runtime][cycle]") {
  // Rank 0 submits 'x' at once: idle, it starts a cycle and rings. Rank 1,
  // idle and sleeping out its 2 s period, submits 'x' 100 ms later. It used
  // to answer the ring with a cycle holding nothing (every collective needs
  // its tensor too) and then run a second one for 'x'; now the first cycle
  // it joins is the one that runs 'x', started by its own submission.
  for (const bool shared : {true, false}) {
    Options o = quiet_options(2000.0);
    o.shared_memory = shared;
    ThreadChecks checks;
    uint64_t rank1_cycles = 0, rang = 0;
    run_runtimes(2, o, [&](int r, Runtime& rt) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // past the start-up cycles
      std::vector<float> buf(16, 1.0f);
      const Runtime::Counters before = rt.counters();
      if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      Status s = run_op(rt, allreduce_entry("x", DataType::kFloat32, {16}, buf.data(), buf.data()));
      checks.expect(s.ok(), s.to_string());
      checks.expect(buf[0] == 2.0f, "the sum of two ones");
      const Runtime::Counters after = rt.counters();
      if (r == 1) rank1_cycles = after.cycles - before.cycles;
      if (r == 0) rang = after.doorbells_rung - before.doorbells_rung;
    });
    INFO(checks.summary());
    REQUIRE(checks.ok());
    INFO((shared ? "shared-memory" : "message")
         << " negotiation: rank 1 ran " << rank1_cycles << " cycle(s); rank 0 rang " << rang);
    CHECK(rang == 1);
    CHECK(rank1_cycles == 1);
  }
}

TEST_CASE("idle ranks lengthen their period together after 64 idle cycles, and work still runs",
          "[runtime][cycle]") {
  // With nothing pending anywhere the ranks agree every kIdlePeriod (1 ms)
  // for kIdleCyclesBeforeLongPeriod cycles, then every kIdlePeriodLong (8 ms).
  // Upper bound over the time measured (a slow machine only makes cycles
  // rarer): the 1 ms period alone would run ~500 cycles in 0.5 s.
  Options o = quiet_options(1.0);
  ThreadChecks checks;
  uint64_t cycles[2] = {0, 0};
  double seconds[2] = {0, 0};
  std::atomic<int> counted{0};
  run_runtimes(3, o, [&](int r, Runtime& rt) {
    const uint64_t before = rt.counters().cycles;
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // A starved thread may need longer for the first 64 idle cycles.
    // The count is of consecutive idle cycles: read once, as a peer's
    // submission below makes the next cycle busy and resets it.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    uint64_t idle = rt.counters().idle_cycles;
    while (idle < kIdleCyclesBeforeLongPeriod && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      idle = rt.counters().idle_cycles;
    }
    if (r < 2) {
      cycles[r] = rt.counters().cycles - before;
      seconds[r] = seconds_since(t0);
    }
    checks.expect(idle >= kIdleCyclesBeforeLongPeriod,
                  "idle cycles counted: " + std::to_string(idle));
    // Nobody submits before every rank has seen its idle cycles: a pending
    // op anywhere makes every rank's cycles busy.
    ++counted;
    while (counted.load() < 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // Work after the long idle: every rank submits, the op completes.
    std::vector<float> buf(16, 1.0f);
    Status s = run_op(rt, allreduce_entry("x", DataType::kFloat32, {16}, buf.data(), buf.data()));
    checks.expect(s.ok(), s.to_string());
    checks.expect(buf[0] == 3.0f, "the sum of three ones");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << cycles[r] << " idle cycles in " << seconds[r] << " s");
    const uint64_t bound =
        kIdleCyclesBeforeLongPeriod + most_cycles(seconds[r], 8.0) + 5;  // + start-up cycles
    CHECK(cycles[r] <= bound);
    CHECK(cycles[r] >= 1);
  }
  CHECK(idle_period(0) == kIdlePeriod);
  CHECK(idle_period(kIdleCyclesBeforeLongPeriod - 1) == kIdlePeriod);
  CHECK(idle_period(kIdleCyclesBeforeLongPeriod) == kIdlePeriodLong);
}

TEST_CASE("a rank with work pending keeps every rank on the short idle period",
          "[runtime][cycle]") {
  // Rank 0 submits 'x' at once; ranks 1 and 2 only 300 ms later. Meanwhile
  // ranks 1 and 2 have nothing pending, but rank 0 has: the agreed busy flag
  // keeps the count of idle cycles at 0 on every rank, so the idle ranks
  // stay in phase with rank 0's 1 ms cycles instead of going to 8 ms on
  // their own (a count kept from each rank's own queue would reach 64 here).
  Options o = quiet_options(1.0);
  ThreadChecks checks;
  std::vector<int64_t> idle_before_submit(3, -1);
  run_runtimes(3, o, [&](int r, Runtime& rt) {
    std::vector<float> buf(16, 1.0f);
    if (r > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      idle_before_submit[r] = rt.counters().idle_cycles;
    }
    Status s = run_op(rt, allreduce_entry("x", DataType::kFloat32, {16}, buf.data(), buf.data()));
    checks.expect(s.ok(), s.to_string());
    checks.expect(buf[0] == 3.0f, "the sum of three ones");
  });
  INFO(checks.summary());
  REQUIRE(checks.ok());
  CHECK(idle_before_submit[1] == 0);
  CHECK(idle_before_submit[2] == 0);
}
