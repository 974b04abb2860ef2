// What-if replay: fusion groups and cycle counts of hand-built traces under
// other settings, the cost model's least-squares calibration, the replay of a
// trace generated from a known cost model reproducing its own score, the
// tuner's use of predictions, the CLI, and the error for traces without
// ENQUEUE events.
#include <algorithm>
#include <cmath>
#include <deque>
#include <fstream>
#include <set>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "autotune_test_util.h"
#include "cycle_timing.h"
#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/whatif_replay.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"

using namespace ringscope;
using namespace ringscope::autotune;
using namespace ringscope::autotune::test;

namespace {

constexpr int64_t kUs = 1000, kMs = 1000 * 1000;

// Per-rank trace files written event by event.
class TraceBuilder {
 public:
  TraceBuilder(const std::string& base, int ranks, const TuneSettings& s) {
    for (int r = 0; r < ranks; ++r) {
      paths_.push_back(per_rank_trace_path(base, r));
      writers_.push_back(std::make_unique<TraceWriter>());
      REQUIRE(writers_[r]
                  ->open(paths_[r], r, ranks,
                         {{"run_id", "replay-test"},
                          {"fusion_threshold_bytes", std::to_string(s.fusion_threshold_bytes)},
                          {"cycle_time_ms", std::to_string(s.cycle_time_ms)},
                          {"cache_capacity", s.cache_enabled ? "1024" : "0"}})
                  .ok());
      writers_[r]->set_clock_offset_start(0, 1000, 0);
    }
  }
  TraceEvent& add(int rank, EventKind kind, int64_t start, int64_t end) {
    events_.push_back({rank, TraceEvent{}});
    TraceEvent& e = events_.back().second;
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.end_ns = end;
    return e;
  }
  void enqueue(int rank, int64_t t, const std::string& name, int64_t bytes) {
    add(rank, EventKind::kEnqueue, t, t).bytes = bytes;
    events_.back().second.name_id = writers_[rank]->intern(name);
  }
  int32_t name(int rank, const std::string& n) { return writers_[rank]->intern(n); }
  void mark(int rank, int64_t t, int step) { add(rank, EventKind::kStep, t, t).aux = step; }
  // A ring allreduce at 2 ranks: one reduce-scatter and one allgather step.
  void allreduce(int rank, int64_t cycle, int64_t start, int64_t step_ns, int64_t overhead,
                 int64_t bytes) {
    for (int k = 0; k < 2; ++k) {
      TraceEvent& s = add(rank, k == 0 ? EventKind::kRingReduceScatter : EventKind::kRingAllgather,
                          start + k * step_ns, start + (k + 1) * step_ns);
      s.cycle = cycle, s.seq_index = 0, s.step = 0, s.bytes = bytes / 2;
    }
    TraceEvent& a = add(rank, EventKind::kAllreduce, start, start + 2 * step_ns + overhead);
    a.cycle = cycle, a.seq_index = 0, a.bytes = bytes;
  }
  std::vector<std::string> close(int64_t end) {
    for (auto& [rank, e] : events_) writers_[rank]->record(e);
    for (auto& w : writers_) {
      w->set_clock_offset_end(0, 1000, end);
      REQUIRE(w->close().ok());
    }
    return paths_;
  }

 private:
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<TraceWriter>> writers_;
  std::deque<std::pair<int, TraceEvent>> events_;  // stable references
};

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

TEST_CASE("least squares recovers alpha and beta of ring steps", "[whatif]") {
  const double alpha = 35e3, ns_per_byte = 0.4;  // 35 us, 2.5 GB/s
  CalibrationSamples s;
  for (int64_t bytes : {int64_t{4096}, int64_t{65536}, int64_t{1} << 20, int64_t{8} << 20})
    for (int k = 0; k < 9; ++k) {
      // Noise that averages out: -3%, 0, +3% in turn.
      const double ns =
          (alpha + ns_per_byte * static_cast<double>(bytes)) * (1 + 0.03 * (k % 3 - 1));
      s.ring_steps.push_back({bytes, static_cast<int64_t>(std::llround(ns))});
    }
  s.negotiations.push_back({false, 3, 25 * kUs});
  CostModel m;
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.ring_step.alpha_ns == Approx(alpha).epsilon(1e-3));
  CHECK(m.ring_step.per_unit_ns == Approx(ns_per_byte).epsilon(1e-4));
  CHECK(m.ring_gbps() == Approx(2.5).epsilon(1e-3));
  // 2 ranks: reduce-scatter + allgather of half the buffer each.
  CHECK(m.allreduce_ns(2 << 20) == Approx(2 * (alpha + ns_per_byte * (1 << 20))).epsilon(1e-3));
  // A run that forced the ring (RINGSCOPE_CPU_ALLREDUCE=ring) at 4 ranks is
  // priced as 6 ring steps of a quarter, where the runtime's own choice
  // would be halving-doubling (1 MiB) and recursive doubling (8 KiB).
  CostModel four;
  REQUIRE(fit_cost_model(s, 4, false, &four).ok());
  const double hd = four.allreduce_ns(1 << 20);
  four.ring_only = true;
  const double ring = four.allreduce_ns(1 << 20);
  CHECK(ring - four.overhead_ns(1 << 20) ==
        Approx(6 * (alpha + ns_per_byte * (1 << 18))).epsilon(1e-3));
  CHECK(ring != Approx(hd));
  CHECK(four.allreduce_ns(8192) - four.overhead_ns(8192) ==
        Approx(6 * (alpha + ns_per_byte * 2048)).epsilon(1e-3));

  // The relative fit's medians resist late-peer outliers (x1.6 on 2 of 9).
  std::vector<std::vector<double>> ox;
  std::vector<double> oy;
  for (double bytes : {4096.0, 65536.0, 1048576.0})
    for (int k = 0; k < 9; ++k) {
      ox.push_back({1.0, bytes});
      oy.push_back((alpha + ns_per_byte * bytes) * (k == 2 || k == 7 ? 1.6 : 1.0));
    }
  std::vector<double> robust;
  REQUIRE(fit_linear(ox, oy, &robust, /*relative=*/true));
  CHECK(robust[0] == Approx(alpha).epsilon(1e-6));
  CHECK(robust[1] == Approx(ns_per_byte).epsilon(1e-6));

  // Plain fit_linear: an exact plane; a negative term is clamped to 0.
  std::vector<std::vector<double>> x;
  std::vector<double> y;
  for (double m1 : {1.0, 2.0, 5.0})
    for (double b1 : {1e3, 1e5, 1e6}) {
      x.push_back({1.0, m1, b1});
      y.push_back(1000 + 300 * m1 + 0.2 * b1);
    }
  std::vector<double> coef;
  REQUIRE(fit_linear(x, y, &coef));
  CHECK(coef[0] == Approx(1000).epsilon(1e-6));
  CHECK(coef[1] == Approx(300).epsilon(1e-6));
  CHECK(coef[2] == Approx(0.2).epsilon(1e-6));
  REQUIRE(fit_linear({{1.0, 1.0}, {1.0, 2.0}, {1.0, 3.0}}, {300, 200, 100}, &coef));
  CHECK(coef[1] == 0.0);
  CHECK(coef[0] > 0.0);
  CHECK_FALSE(fit_linear({}, {}, &coef));
}

namespace {

// The true costs the modelled run below is generated from.
struct Truth {
  int64_t ring_alpha = 40 * kUs;
  double ring_ns_per_byte = 0.5;
  int64_t overhead = 12 * kUs;
  int64_t negotiate_fast = 30 * kUs, negotiate_slow = 400 * kUs;
  int64_t callback_per_response = 2 * kUs;
  int64_t copy_alpha = 5 * kUs;
  double copy_ns_per_byte = 0.1;
  int64_t gap = 20 * kUs, compute = 300 * kUs;
};

// A run the runtime could have recorded at (128 MiB, 1 ms, cache on), built
// from `truth`: each step submits 2, 4 or 8 tensors of 256 KiB as a burst
// (1 us apart) after `compute`; both ranks idle, so the cycle starts 15 us
// (kBurstQuiet) after the burst, negotiates (slow in step 0, fast after),
// runs one fused ring allreduce with copies, the callbacks, and marks the
// step `gap` later.
std::vector<std::string> write_modelled_run(const std::string& base, const Truth& truth,
                                            int steps) {
  TraceBuilder b(base, 2, TuneSettings{});
  const int64_t size = 256 << 10;
  int64_t mark = kMs;
  for (int step = 0; step < steps; ++step) {
    const int count = 2 << (step % 3);
    const int64_t cycle = step + 1;
    const int64_t first = mark + truth.compute;
    const int64_t last = first + (count - 1) * kUs;
    const int64_t start = last + 15 * kUs;
    const int64_t decided = start + (step == 0 ? truth.negotiate_slow : truth.negotiate_fast);
    const int64_t bytes = count * size;
    const int64_t copy = truth.copy_alpha + std::llround(truth.copy_ns_per_byte * bytes);
    const int64_t ring_step =
        truth.ring_alpha + std::llround(truth.ring_ns_per_byte * static_cast<double>(bytes / 2));
    const int64_t coll_start = decided + copy;
    const int64_t coll_end = coll_start + 2 * ring_step + truth.overhead;
    const int64_t out_end = coll_end + copy;
    const int64_t cb_end = out_end + count * truth.callback_per_response;
    for (int rank = 0; rank < 2; ++rank) {
      for (int i = 0; i < count; ++i) {
        const std::string name = "t" + std::to_string(i);
        b.enqueue(rank, first + i * kUs, name, size);
        TraceEvent& n = b.add(rank, EventKind::kNegotiate, first + i * kUs, decided);
        n.cycle = cycle, n.seq_index = i, n.bytes = size, n.name_id = b.name(rank, name);
        n.aux = step == 0 ? kPathSlow : kPathFast;
      }
      TraceEvent& c = b.add(rank, EventKind::kCycle, start, cb_end);
      c.cycle = cycle, c.aux = step == 0 ? kPathSlow : kPathFast, c.value = count;
      TraceEvent& f = b.add(rank, EventKind::kFusion, decided, out_end);
      f.cycle = cycle, f.seq_index = 0, f.bytes = bytes, f.aux = count;
      TraceEvent& in = b.add(rank, EventKind::kMemcpyIn, decided, decided + copy);
      in.cycle = cycle, in.seq_index = 0, in.bytes = bytes;
      TraceEvent& out = b.add(rank, EventKind::kMemcpyOut, coll_end, out_end);
      out.cycle = cycle, out.seq_index = 0, out.bytes = bytes;
      b.allreduce(rank, cycle, coll_start, ring_step, truth.overhead, bytes);
      TraceEvent& cb = b.add(rank, EventKind::kCallback, out_end, cb_end);
      cb.cycle = cycle, cb.value = count;
    }
    mark = cb_end + truth.gap;
    for (int rank = 0; rank < 2; ++rank) b.mark(rank, mark, step);
  }
  return b.close(mark + kMs);
}

}  // namespace

TEST_CASE("shared-memory allreduces are priced from their own spans", "[whatif]") {
  const double alpha = 20e3, ns_per_byte = 0.1;
  CalibrationSamples s;
  for (int64_t bytes : {int64_t{1} << 16, int64_t{1} << 20, int64_t{8} << 20})
    for (int k = 0; k < 5; ++k)
      s.shm_allreduces.push_back(
          {bytes, static_cast<int64_t>(alpha + ns_per_byte * static_cast<double>(bytes))});
  s.negotiations.push_back({false, 3, 25 * kUs});
  CostModel m;
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.shm_allreduce.samples == 15);
  CHECK(m.allreduce_ns(1 << 20) == Approx(alpha + ns_per_byte * (1 << 20)).epsilon(1e-3));
  // Below 16 KiB the runtime runs the ring, which this run never recorded.
  CHECK(m.allreduce_ns(4096) == Approx(alpha + ns_per_byte * 4096).epsilon(1e-3));
  CHECK(std::any_of(m.notes.begin(), m.notes.end(), [](const std::string& n) {
    return n.find("only shared-memory") != std::string::npos;
  }));
  // With ring steps recorded too, small and over-64-MiB buffers use the ring.
  for (int k = 0; k < 9; ++k) s.ring_steps.push_back({int64_t{2048} << (k % 3), 35'000});
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.allreduce_ns(4096) == Approx(m.overhead_ns(4096) + 2 * m.ring_step.at(2048)));
  CHECK(m.allreduce_ns(int64_t{128} << 20) ==
        Approx(m.overhead_ns(int64_t{128} << 20) + 2 * m.ring_step.at(64 << 20)));
  CHECK(m.allreduce_ns(1 << 20) == Approx(alpha + ns_per_byte * (1 << 20)).epsilon(1e-3));
}

TEST_CASE("calibration on a modelled run recovers its costs", "[whatif]") {
  TempDir dir;
  const Truth truth;
  write_modelled_run(dir.file("m.sqlite"), truth, 12);
  RecordedRun run;
  REQUIRE(load_recorded_run_files({dir.file("m.sqlite")}, ScoreOptions{}, &run).ok());
  CostModel m;
  REQUIRE(fit_cost_model(run.samples, run.world_size, false, &m).ok());
  CHECK(m.ring_step.alpha_ns == Approx(truth.ring_alpha).epsilon(1e-3));
  CHECK(m.ring_step.per_unit_ns == Approx(truth.ring_ns_per_byte).epsilon(1e-3));
  CHECK(m.overhead_ns(1 << 20) == Approx(truth.overhead).epsilon(1e-3));
  CHECK(m.negotiate_fast_ns == Approx(truth.negotiate_fast).epsilon(1e-3));
  CHECK(m.callback.per_unit_ns == Approx(truth.callback_per_response).epsilon(1e-3));
  CHECK(m.copy_in_ns(1 << 20, 4) ==
        Approx(truth.copy_alpha + truth.copy_ns_per_byte * (1 << 20)).epsilon(1e-2));
  for (const RecordedRank& r : run.ranks)
    for (int64_t gap : r.mark_gap_ns) CHECK(gap == truth.gap);
}

TEST_CASE("replay at the recorded settings reproduces the recorded score", "[whatif]") {
  TempDir dir;
  write_modelled_run(dir.file("m.sqlite"), Truth{}, 12);
  WhatIfReport report;
  ReplayOptions options;
  REQUIRE(what_if({dir.file("m.sqlite")}, {TuneSettings{0, 1.0, true}}, options, &report).ok());
  CHECK(report.run.settings == TuneSettings{});
  const double recorded = report.run.score.median_bytes_per_second;
  CHECK(report.at_recorded.score.median_bytes_per_second == Approx(recorded).epsilon(0.01));
  CHECK(report.anchor == Approx(1.0).epsilon(0.01));
  CHECK(report.at_recorded.score.median_step_ms ==
        Approx(report.run.score.median_step_ms).epsilon(0.01));
  // Fusion off: 2-8 ring allreduces per step instead of one; each pays the
  // fixed costs, so the prediction is slower.
  REQUIRE(report.predictions.size() == 1);
  CHECK(report.predictions[0].vs_recorded < 0.95);
  CHECK(report.predictions[0].replay.collectives > report.at_recorded.collectives);
}

TEST_CASE("a trace without ENQUEUE events is a clear error", "[whatif]") {
  TempDir dir;
  GeneratedRun generated;  // ALLREDUCE spans and STEP marks only
  write_generated_run(dir.file("g.sqlite"), generated);
  RecordedRun run;
  Status s = load_recorded_run_files({dir.file("g.sqlite")}, ScoreOptions{}, &run);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(), Catch::Contains("no ENQUEUE events on rank 0"));
  CHECK_THAT(s.message(), Catch::Contains("g.sqlite"));

  std::string output;
  const int code = run_command(
      std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("g.sqlite") + " --what-if", &output);
  CHECK(code == 1);
  CHECK_THAT(output, Catch::Contains("no ENQUEUE events"));
}

TEST_CASE("tune --what-if prints and writes predictions", "[whatif][cli]") {
  TempDir dir;
  write_modelled_run(dir.file("m.sqlite"), Truth{}, 12);
  std::string output;
  const std::string json = dir.file("w.json");
  int code = run_command(std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("m.sqlite") +
                             " --what-if --threshold-mb 0,1,128 --cycle-ms 1,50 --cache on "
                             "--explain --json " +
                             json,
                         &output);
  INFO(output);
  REQUIRE(code == 0);
  CHECK_THAT(output, Catch::Contains("what-if replay of"));
  CHECK_THAT(output, Catch::Contains("ring step: alpha 40.0 us"));
  std::ifstream in(json);
  const nlohmann::json j = nlohmann::json::parse(in);
  CHECK(j["predictions"].size() == 6);
  CHECK(j["anchor"].get<double>() == Approx(1.0).epsilon(0.01));

  code = run_command(
      std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("m.sqlite") + " --threshold-mb 8", &output);
  CHECK(code == 2);  // the what-if lists need --what-if
  code = run_command(std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("m.sqlite") +
                         " --what-if --write " + dir.file("s.json"),
                     &output);
  CHECK(code == 2);  // --what-if writes no settings file
  code = run_command(std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("m.sqlite") +
                         " --with-replay --json " + json,
                     &output);
  CHECK(code == 0);
  CHECK_THAT(output, Catch::Contains("48 predictions"));
  CHECK_THAT(output, Catch::Contains("what-if replay prediction(s) informed the model"));
}

TEST_CASE("predicted observations inform the model but are never the best observed", "[whatif]") {
  std::vector<Observation> obs;
  obs.push_back({TuneSettings{0, 50.0, true}, std::log(1e9), 1e-4, false});
  std::vector<Observation> only_predicted = {
      {TuneSettings{8 << 20, 1.0, true}, std::log(3e9), 0.02, true}};
  Suggestion s;
  CHECK(suggest_next(only_predicted, TunerOptions{}, &s).code() == StatusCode::kInvalidArgument);
  obs.push_back(only_predicted[0]);
  REQUIRE(suggest_next(obs, TunerOptions{}, &s).ok());
  CHECK(s.best_observed == TuneSettings{0, 50.0, true});
  CHECK(s.distinct_settings == 1);
  // The model leans towards the predicted better region.
  CHECK(s.next.fusion_threshold_bytes > 0);
}
