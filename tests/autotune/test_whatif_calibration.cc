// What-if replay, the cost model: least-squares calibration, shared-memory
// pricing, a run generated from a known cost model calibrated and replayed
// back to its own score, the error for traces without ENQUEUE events, the
// CLI, and the tuner's use of predictions. Replay cycles and fusion groups:
// test_whatif_replay.cc.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "autotune_test_util.h"
#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/whatif.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"
#include "whatif_trace_builder.h"

using namespace ringscope;
using namespace ringscope::autotune;
using namespace ringscope::autotune::test;

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
  // A reducescatter always runs the ring's first phase: n-1 steps of 1/n,
  // whatever algorithm an allreduce of that size would take.
  four.ring_only = false;
  CHECK(four.reducescatter_ns(1 << 20) - four.overhead_ns(1 << 20) ==
        Approx(3 * (alpha + ns_per_byte * (1 << 18))).epsilon(1e-3));
  CHECK(four.reducescatter_ns(8192) - four.overhead_ns(8192) ==
        Approx(3 * (alpha + ns_per_byte * 2048)).epsilon(1e-3));

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
  // Below 4 KiB (kSharedMemoryMinBytes) the runtime runs message-based
  // algorithms, which this run never recorded: priced as shared memory.
  CHECK(m.allreduce_ns(2048) == Approx(alpha + ns_per_byte * 2048).epsilon(1e-3));
  CHECK(std::any_of(m.notes.begin(), m.notes.end(), [](const std::string& n) {
    return n.find("only shared-memory") != std::string::npos;
  }));
  // With ring steps recorded too, small and over-64-MiB buffers use the ring.
  for (int k = 0; k < 9; ++k) s.ring_steps.push_back({int64_t{2048} << (k % 3), 35'000});
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.allreduce_ns(2048) == Approx(m.overhead_ns(2048) + 2 * m.ring_step.at(1024)));
  // The threshold itself: 4 KiB is shared memory, one byte less is not.
  CHECK(m.allreduce_ns(4096) == Approx(alpha + ns_per_byte * 4096).epsilon(1e-3));
  CHECK(m.allreduce_ns(4095) == Approx(m.overhead_ns(4095) + 2 * m.ring_step.at(2047.5)));
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
