// What-if replay: fusion groups and cycle counts of hand-built traces under
// other settings, the doorbell, the whole-burst start and ranks waiting on
// each other. Calibration, the modelled run, the CLI and the tuner's use of
// predictions: test_whatif_calibration.cc.
#include <algorithm>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "autotune_test_util.h"
#include "ringscope/planning/cycle_timing.h"
#include "ringscope/autotune/whatif_replay.h"
#include "whatif_trace_builder.h"

using namespace ringscope;
using namespace ringscope::autotune;
using namespace ringscope::autotune::test;

namespace {

// A run of `steps` steps at 2 ranks: tensors a, b, c, d of 1 MiB, submitted
// 1 us apart 1 ms into each step; rank 1 submits d `late_ns` after the rest.
// Only what the replay reads: submissions, marks and one ring allreduce per step.
std::vector<std::string> write_burst_run(const std::string& base, int steps, int64_t late_ns) {
  TraceBuilder b(base, 2, TuneSettings{});
  int64_t t = 1 * kMs;
  for (int step = 0; step < steps; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      int i = 0;
      for (const char* n : {"a", "b", "c", "d"}) {
        const int64_t late = (rank == 1 && std::string(n) == "d") ? late_ns : 0;
        b.enqueue(rank, t + kMs + i++ * kUs + late, n, 1 << 20);
      }
      b.allreduce(rank, step + 1, t + kMs + 100 * kUs, 500 * kUs, 10 * kUs, 4 << 20);
    }
    t += 4 * kMs + late_ns;
    for (int rank = 0; rank < 2; ++rank) b.mark(rank, t, step);
  }
  return b.close(t + kMs);
}

// A run at 2 ranks of six steps `step_ns` apart: rank r submits one 4 KiB
// tensor "a" submit_ns[r] into each step, its allreduce starts 20 us after
// the later submission, and both ranks mark the step mark_ns into it.
RecordedRun one_tensor_run(const TempDir& dir, int64_t step_ns, const int64_t (&submit_ns)[2],
                           int64_t mark_ns) {
  TraceBuilder b(dir.file("x.sqlite"), 2, TuneSettings{});
  int64_t t = kMs;
  for (int step = 0; step < 6; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      b.enqueue(rank, t + submit_ns[rank], "a", 4096);
      b.allreduce(rank, step + 1, t + std::max(submit_ns[0], submit_ns[1]) + 20 * kUs, 10 * kUs,
                  kUs, 4096);
    }
    for (int rank = 0; rank < 2; ++rank) b.mark(rank, t + mark_ns, step);
    t += step_ns;
  }
  b.close(t + kMs);
  RecordedRun run;
  const Status loaded = load_recorded_run_files({dir.file("x.sqlite")}, ScoreOptions{}, &run);
  INFO(loaded.to_string());
  REQUIRE(loaded.ok());
  return run;
}

// A cost model with known, simple terms.
CostModel simple_model() {
  CostModel m;
  m.world_size = 2;
  m.ring_step = {20 * kUs, 0.5, 10};  // 2 GB/s
  m.negotiate_fast_ns = 20 * kUs;
  m.negotiate_slow = {200 * kUs, 0, 10};
  m.callback = {0, 1 * kUs, 10};
  return m;
}

std::set<std::multiset<std::string>> member_sets(const ReplayResult& r, int64_t cycle) {
  std::set<std::multiset<std::string>> out;
  for (const ReplayGroup& g : r.groups)
    if (g.cycle == cycle)
      out.insert(std::multiset<std::string>(g.members.begin(), g.members.end()));
  return out;
}

std::vector<int64_t> work_cycles_of(const ReplayResult& r) {
  std::vector<int64_t> cycles;
  for (const ReplayGroup& g : r.groups)
    if (cycles.empty() || cycles.back() != g.cycle) cycles.push_back(g.cycle);
  return cycles;
}

ReplayResult replay(const RecordedRun& run, const TuneSettings& s,
                    const CostModel& model = simple_model()) {
  ReplayOptions options;
  options.keep_groups = true;
  ReplayResult r;
  Status st = replay_run(run, model, s, options, &r);
  INFO(st.to_string());
  REQUIRE(st.ok());
  return r;
}

}  // namespace

TEST_CASE("replay of a hand-built trace: fusion groups follow the threshold", "[whatif]") {
  TempDir dir;
  write_burst_run(dir.file("a.sqlite"), 6, 0);
  RecordedRun run;
  REQUIRE(load_recorded_run_files({dir.file("a.sqlite")}, ScoreOptions{}, &run).ok());
  REQUIRE(run.ranks.size() == 2);
  CHECK(run.ranks[0].tensors.size() == 24);
  CHECK(run.ranks[0].marks.size() == 6);

  // 2 MiB: pairs in submission order, one cycle per step.
  ReplayResult r = replay(run, TuneSettings{2 << 20, 1.0, true});
  CHECK(r.work_cycles == 6);
  CHECK(r.collectives == 12);
  const auto cycles = work_cycles_of(r);
  REQUIRE(cycles.size() == 6);
  for (int64_t c : cycles)
    CHECK(member_sets(r, c) == std::set<std::multiset<std::string>>{{"a", "b"}, {"c", "d"}});
  CHECK(r.slow_cycles == 1);  // later steps hit the response cache
  CHECK(r.unfinished == 0);

  // Fusion off: every tensor alone. 128 MiB: one group of four.
  CHECK(replay(run, TuneSettings{0, 1.0, true}).collectives == 24);
  ReplayResult big = replay(run, TuneSettings{128 << 20, 1.0, true});
  CHECK(big.collectives == 6);
  CHECK(member_sets(big, work_cycles_of(big)[0]) ==
        std::set<std::multiset<std::string>>{{"a", "b", "c", "d"}});
  // 3 MiB: first fit in order, a+b+c then d.
  ReplayResult three = replay(run, TuneSettings{3 << 20, 1.0, true});
  CHECK(member_sets(three, work_cycles_of(three)[2]) ==
        std::set<std::multiset<std::string>>{{"a", "b", "c"}, {"d"}});

  // Cache off: every work cycle goes through the coordinator.
  ReplayResult no_cache = replay(run, TuneSettings{2 << 20, 1.0, false});
  CHECK(no_cache.slow_cycles == no_cache.work_cycles);
  CHECK(no_cache.work_cycles == 6);
}

TEST_CASE("replay: an alltoall is never fused, always negotiates, priced as n-1 exchanges",
          "[whatif]") {
  // The trace does not keep the splits, so the replay cannot tell whether
  // the runtime's cache would have served them (cacheable_in_replay).
  TempDir dir;
  TraceBuilder b(dir.file("a2a.sqlite"), 2, TuneSettings{});
  int64_t t = 1 * kMs;
  const int steps = 6;
  for (int step = 0; step < steps; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      b.enqueue(rank, t + kMs, "a", 1 << 20);
      b.enqueue(rank, t + kMs + kUs, "routed", 1 << 20, /*alltoall*/ 4);
      b.enqueue(rank, t + kMs + 2 * kUs, "b", 1 << 20);
      b.allreduce(rank, step + 1, t + kMs + 100 * kUs, 500 * kUs, 10 * kUs, 2 << 20);
    }
    t += 4 * kMs;
    for (int rank = 0; rank < 2; ++rank) b.mark(rank, t, step);
  }
  const std::vector<std::string> files = b.close(t + kMs);
  RecordedRun run;
  const Status loaded = load_recorded_run_files(files, ScoreOptions{}, &run);
  INFO(loaded.to_string());
  REQUIRE(loaded.ok());
  const ReplayResult r = replay(run, TuneSettings{128 << 20, 1.0, true});
  CHECK(r.unfinished == 0);
  CHECK(r.collectives == 2 * steps);  // a+b fused, the alltoall alone
  for (int64_t c : work_cycles_of(r))
    CHECK(member_sets(r, c) == std::set<std::multiset<std::string>>{{"a", "b"}, {"routed"}});
  CHECK(r.slow_cycles == steps);  // the alltoall negotiates every step
  for (const ReplayGroup& g : r.groups)
    CHECK(g.from_cache == (g.members.size() == 2 && r.groups.front().cycle != g.cycle));
  // One exchange of half the tensor at 2 ranks, as a ring step of that size.
  const CostModel m = simple_model();
  CHECK(m.alltoall_ns(1 << 20) - m.overhead_ns(1 << 20) ==
        Approx(m.ring_step.at(static_cast<double>(1 << 19))));
}

TEST_CASE("replay: a late tensor gets its own cycle, started by the doorbell", "[whatif]") {
  TempDir dir;
  write_burst_run(dir.file("a.sqlite"), 6, 3 * kMs);  // rank 1 submits d 3 ms late
  RecordedRun run;
  REQUIRE(load_recorded_run_files({dir.file("a.sqlite")}, ScoreOptions{}, &run).ok());
  for (double cycle_ms : {1.0, 50.0}) {
    ReplayResult r = replay(run, TuneSettings{128 << 20, cycle_ms, true});
    CHECK(r.work_cycles == 12);
    const auto cycles = work_cycles_of(r);
    CHECK(member_sets(r, cycles[0]) == std::set<std::multiset<std::string>>{{"a", "b", "c"}});
    CHECK(member_sets(r, cycles[1]) == std::set<std::multiset<std::string>>{{"d"}});
    // Rank 1 is idle when d arrives: its doorbell starts the cycle, so even
    // a 50 ms cycle time does not delay d (steps stay near 1 + 3 + 0.1 ms).
    CHECK(r.score.median_step_ms < 8.0);
  }
}

TEST_CASE("replay: a burst the size of the last two starts its cycle without the quiet wait",
          "[whatif]") {
  // Both ranks submit the same four tensors every step. Steps 0 and 1 wait
  // out kBurstQuiet after the last submission, as the runtime does
  // (TensorQueue::expected_burst); from step 2 the fourth submission starts
  // the cycle at once.
  TempDir dir;
  write_burst_run(dir.file("a.sqlite"), 6, 0);
  RecordedRun run;
  REQUIRE(load_recorded_run_files({dir.file("a.sqlite")}, ScoreOptions{}, &run).ok());
  const ReplayResult r = replay(run, TuneSettings{128 << 20, 1.0, true});
  REQUIRE(r.groups.size() == 6);
  REQUIRE(r.marks.size() == 6);
  // From the last submission of step k (1 ms + 3 us after mark k-1) to the
  // end of its allreduce; steps 1-5 all take the fast path.
  auto after_last = [&](size_t k) { return r.groups[k].end_ns - (r.marks[k - 1] + kMs + 3 * kUs); };
  const int64_t quiet = std::chrono::duration_cast<std::chrono::nanoseconds>(kBurstQuiet).count();
  for (size_t k = 2; k < 6; ++k) CHECK(after_last(1) - after_last(k) == quiet);
}

TEST_CASE("replay: ranks waiting on each other meet again after the cycle time", "[whatif]") {
  // Rank 0 submits a then b, rank 1 b then a, 0.5 ms apart: after the first
  // cycle both hold a pending tensor, so neither wakes on work; the next
  // cycle comes at the cycle time.
  TempDir dir;
  TraceBuilder b(dir.file("x.sqlite"), 2, TuneSettings{});
  int64_t t = kMs;
  for (int step = 0; step < 6; ++step) {
    b.enqueue(0, t + kMs, "a", 4096);
    b.enqueue(1, t + kMs, "b", 4096);
    b.enqueue(0, t + kMs + 500 * kUs, "b", 4096);
    b.enqueue(1, t + kMs + 500 * kUs, "a", 4096);
    for (int rank = 0; rank < 2; ++rank)
      b.allreduce(rank, step + 1, t + 2 * kMs, 10 * kUs, kUs, 8192);
    t += 3 * kMs;
    for (int rank = 0; rank < 2; ++rank) b.mark(rank, t, step);
  }
  b.close(t + kMs);
  RecordedRun run;
  REQUIRE(load_recorded_run_files({dir.file("x.sqlite")}, ScoreOptions{}, &run).ok());
  const ReplayResult fast = replay(run, TuneSettings{128 << 20, 1.0, true});
  const ReplayResult slow = replay(run, TuneSettings{128 << 20, 50.0, true});
  CHECK(fast.work_cycles == 6);
  CHECK(slow.work_cycles == 6);
  CHECK(fast.score.median_step_ms < 5.0);
  CHECK(slow.score.median_step_ms > 50.0);
  CHECK(slow.score.median_bytes_per_second < fast.score.median_bytes_per_second / 5);
}

TEST_CASE("replay: an idle rank does not answer a doorbell", "[whatif]") {
  // Rank 0 submits a 1 ms into each step, rank 1 3 ms later. Rank 0 starts
  // a cycle at once and rings; rank 1, idle, does not answer it (the
  // runtime's idle rank sleeps to its period or its own work), so each step
  // takes one cycle, started by rank 1's submission, not an empty one for
  // the ring and a second for a.
  TempDir dir;
  const RecordedRun run = one_tensor_run(dir, 5 * kMs, {kMs, 4 * kMs}, 5 * kMs);
  const ReplayResult r = replay(run, TuneSettings{128 << 20, 50.0, true});
  CHECK(r.work_cycles == 6);
  CHECK(r.cycles == 6);
}

TEST_CASE("replay: idle ranks lengthen their period after 64 idle cycles", "[whatif]") {
  // Six steps 200 ms apart, one tensor each, submitted together: between
  // them nothing is pending anywhere, so the replay, as the runtime, runs
  // kIdleCyclesBeforeLongPeriod cycles of 1 ms and then cycles of 8 ms,
  // about 64 + 135 / 8 = 81 empty cycles per gap where 1 ms alone gives 199.
  TempDir dir;
  // The next step submits 199 ms after each mark.
  const RecordedRun run = one_tensor_run(dir, 200 * kMs, {0, 0}, kMs);
  const ReplayResult r = replay(run, TuneSettings{128 << 20, 1.0, true});
  INFO(r.cycles << " cycles");
  CHECK(r.work_cycles == 6);
  const int64_t empty = r.cycles - r.work_cycles;  // in the five gaps of 199 ms
  CHECK(empty >= 5 * 75);
  CHECK(empty <= 5 * 85);
}

TEST_CASE("replay of a run where a rank joined covers the steps before the join", "[whatif]") {
  // Rank 0 has 10 steps of data, then joins; rank 1 runs 16 steps, the last
  // 6 with rank 0 standing in (no ENQUEUE of its own there).
  TempDir dir;
  TraceBuilder b(dir.file("j.sqlite"), 2, TuneSettings{});
  int64_t t = kMs;
  for (int step = 0; step < 16; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      if (rank == 0 && step >= 10) {
        b.allreduce(rank, step + 1, t + 30 * kUs, 10 * kUs, kUs, 4096);
        continue;
      }
      b.enqueue(rank, t + 10 * kUs, "a", 4096);
      b.allreduce(rank, step + 1, t + 30 * kUs, 10 * kUs, kUs, 4096);
      b.mark(rank, t + 100 * kUs, step);
    }
    t += kMs;
  }
  TraceEvent& join = b.add(0, EventKind::kJoin, 10 * kMs + 200 * kUs, t);
  join.value = 1;
  b.close(t + kMs);
  RecordedRun run;
  const Status loaded = load_recorded_run_files({dir.file("j.sqlite")}, ScoreOptions{}, &run);
  INFO(loaded.to_string());
  REQUIRE(loaded.ok());
  REQUIRE(run.ranks.size() == 2);
  for (const RecordedRank& r : run.ranks) {
    CHECK(r.tensors.size() == 10);
    CHECK(r.marks.size() == 10);
  }
  CHECK_THAT(run.notes.back(), Catch::Contains("rank 0 joined after 10 step(s)"));
  const ReplayResult r = replay(run, TuneSettings{});
  CHECK(r.unfinished == 0);  // without the cut, rank 1's last 6 tensors never complete
  CHECK(r.collectives == 10);
}

TEST_CASE("replay of a run where every rank joined after the same steps is not cut", "[whatif]") {
  // A join at the end of each of two epochs of 8 steps, on both ranks.
  TempDir dir;
  TraceBuilder b(dir.file("e.sqlite"), 2, TuneSettings{});
  int64_t t = kMs;
  for (int step = 0; step < 16; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      b.enqueue(rank, t + 10 * kUs, "a", 4096);
      b.allreduce(rank, step + 1, t + 30 * kUs, 10 * kUs, kUs, 4096);
      b.mark(rank, t + 100 * kUs, step);
      if (step % 8 == 7) b.add(rank, EventKind::kJoin, t + 200 * kUs, t + 300 * kUs).value = 1;
    }
    t += kMs;
  }
  b.close(t + kMs);
  RecordedRun run;
  const Status loaded = load_recorded_run_files({dir.file("e.sqlite")}, ScoreOptions{}, &run);
  INFO(loaded.to_string());
  REQUIRE(loaded.ok());
  for (const RecordedRank& r : run.ranks) CHECK(r.tensors.size() == 16);
  for (const std::string& note : run.notes) CHECK_THAT(note, !Catch::Contains("joined"));
}

TEST_CASE("a run cut at a join is scored over the steps the replay covers", "[whatif]") {
  // Rank 1 runs out of data after 10 steps of 1 ms and joins; rank 0 runs
  // 20 more steps of 0.5 ms with rank 1 standing in. The replay covers the
  // first 10 steps, so the recorded score it is anchored to must too.
  TempDir dir;
  TraceBuilder b(dir.file("j.sqlite"), 2, TuneSettings{});
  int64_t t = kMs;
  for (int step = 0; step < 30; ++step) {
    const int64_t step_ns = step < 10 ? kMs : kMs / 2;
    for (int rank = 0; rank < 2; ++rank) {
      b.allreduce(rank, step + 1, t + 30 * kUs, 10 * kUs, kUs, 4096);
      if (rank == 1 && step >= 10) continue;
      b.enqueue(rank, t + 10 * kUs, "a", 4096);
      b.mark(rank, t + 100 * kUs, step);
    }
    t += step_ns;
  }
  b.add(1, EventKind::kJoin, 10 * kMs + 200 * kUs, t).value = 1;
  b.close(t + kMs);
  RecordedRun run;
  const Status loaded = load_recorded_run_files({dir.file("j.sqlite")}, ScoreOptions{}, &run);
  INFO(loaded.to_string());
  REQUIRE(loaded.ok());
  CHECK(run.score.median_step_ms == Approx(1.0).epsilon(0.01));
  for (const ScoreWindow& w : run.score.windows) CHECK(w.end_ns <= 11 * kMs + 100 * kUs);
}

TEST_CASE("a join before the first step is a clear error naming the trace", "[whatif]") {
  TempDir dir;
  TraceBuilder b(dir.file("j0.sqlite"), 2, TuneSettings{});
  int64_t t = kMs;
  for (int step = 0; step < 10; ++step) {
    for (int rank = 0; rank < 2; ++rank) {
      b.allreduce(rank, step + 1, t + 30 * kUs, 10 * kUs, kUs, 4096);
      if (rank == 1) continue;
      b.enqueue(rank, t + 10 * kUs, "a", 4096);
      b.mark(rank, t + 100 * kUs, step);
    }
    t += kMs;
  }
  b.enqueue(1, 100 * kUs, "a", 4096);  // one tensor, then it joins
  b.add(1, EventKind::kJoin, 200 * kUs, t).value = 1;
  b.close(t + kMs);
  RecordedRun run;
  const Status loaded = load_recorded_run_files({dir.file("j0.sqlite")}, ScoreOptions{}, &run);
  CHECK(loaded.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(loaded.message(), Catch::Contains("j0.sqlite"));
  CHECK_THAT(loaded.message(), Catch::Contains("before its first STEP mark"));
}
