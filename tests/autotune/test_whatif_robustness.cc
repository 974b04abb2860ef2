// What-if replay robustness: long traces replayed step by step (and the same
// results as before on a small fixed case), a repeated tensor name waiting
// for its earlier op as the runtime makes the framework do, failed candidates
// reported per row instead of aborting the what-if (API and CLI), and the
// fast-negotiation fit taking empty cycles when no fast-path cycle was recorded.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "autotune_test_util.h"
#include "ringscope/autotune/whatif.h"

using namespace ringscope;
using namespace ringscope::autotune;
using namespace ringscope::autotune::test;

namespace {

constexpr int64_t kUs = 1000, kMs = 1000 * 1000;

// A recorded run built in memory: `steps` steps per rank; step k submits up
// to `per_step` tensors g0, g1, ... 2 us apart, 300 us after the previous
// mark (every 7th step submits none; counts vary by k % 3); rank 1 submits
// its last tensor 400 us late in odd steps; every 5th step doubles the
// sizes (cache conflicts). Marks come 2 ms after a step's last submission;
// gaps are 50 us (+10 us on rank 1), unknown (-1) in every 4th step. Two
// tensors follow the last mark.
RecordedRun synthetic_run(int ranks, int steps, int per_step) {
  RecordedRun run;
  run.source = "synthetic";
  run.world_size = ranks;
  run.settings = TuneSettings{};
  run.cache_capacity = 1024;
  for (int r = 0; r < ranks; ++r) {
    RecordedRank rank;
    rank.rank = r;
    int64_t begin = kMs;
    auto submit = [&](int step, int i, int64_t t, int64_t scale) {
      RecordedTensor tensor;
      tensor.enqueue_ns = t;
      tensor.name = "g" + std::to_string(i);
      tensor.bytes = 4096 * (i + 1) * scale;
      tensor.step = step;
      rank.tensors.push_back(tensor);
    };
    for (int k = 0; k < steps; ++k) {
      const int count = k % 7 == 3 ? 0 : per_step - k % 3;
      int64_t last = begin + 300 * kUs;
      for (int i = 0; i < count; ++i) {
        const int64_t late = (r == 1 && i == count - 1 && k % 2 == 1) ? 400 * kUs : 0;
        last = begin + 300 * kUs + i * 2 * kUs + late;
        submit(k, i, last, k % 5 == 4 ? 2 : 1);
      }
      rank.marks.push_back(last + 2 * kMs);
      rank.mark_gap_ns.push_back(k % 4 == 1 ? -1 : 50 * kUs + r * 10 * kUs);
      begin = rank.marks.back();
    }
    for (int i = 0; i < 2; ++i) submit(steps, i, begin + 300 * kUs + i * kUs, 1);
    run.ranks.push_back(std::move(rank));
  }
  return run;
}

CostModel simple_model(int world_size) {
  CostModel m;
  m.world_size = world_size;
  m.ring_step = {20 * kUs, 0.5, 10};  // 2 GB/s
  m.negotiate_fast_ns = 20 * kUs;
  m.negotiate_slow = {200 * kUs, 1 * kUs, 10};
  m.callback = {2 * kUs, 1 * kUs, 10};
  m.copy_in_alpha_ns = m.copy_out_alpha_ns = 3 * kUs;
  m.copy_in_per_byte_ns = m.copy_out_per_byte_ns = 0.1;
  return m;
}

// Order-sensitive digest of predicted marks and collective ends.
uint64_t digest(const ReplayResult& r) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  for (int64_t m : r.marks) mix(static_cast<uint64_t>(m));
  for (const CollectiveEnd& e : r.ends) {
    mix(static_cast<uint64_t>(e.end_ns));
    mix(static_cast<uint64_t>(e.bytes));
  }
  return h;
}

ReplayResult replay_ok(const RecordedRun& run, const TuneSettings& s) {
  ReplayResult r;
  const Status st = replay_run(run, simple_model(run.world_size), s, ReplayOptions{}, &r);
  INFO(st.to_string());
  REQUIRE(st.ok());
  return r;
}

}  // namespace

TEST_CASE("replay of a small fixed run matches the per-step scan it replaced", "[whatif]") {
  // Values recorded with the replay that scanned every submission of a rank
  // per released step (before step ranges were precomputed); digests of the
  // three settings where a rank with pending work joins a doorbell cycle
  // re-recorded when its faster doorbell poll (doorbell_poll) was modelled.
  struct Expected {
    TuneSettings settings;
    int64_t cycles, work_cycles, slow_cycles, collectives, marks;
    uint64_t digest;
  };
  const RecordedRun run = synthetic_run(3, 24, 6);
  const std::vector<Expected> expected = {
      {{128 << 20, 1.0, true}, 38, 32, 16, 32, 24, 3411291588469321431ull},
      {{0, 0.1, false}, 46, 32, 32, 107, 24, 10374161417319211618ull},
      {{32 << 10, 5.0, true}, 32, 32, 16, 61, 24, 4694409106721839694ull},
      {{8 << 20, 50.0, false}, 32, 32, 32, 32, 24, 9308636608168749231ull},
  };
  for (const Expected& e : expected) {
    const ReplayResult r = replay_ok(run, e.settings);
    INFO(e.settings.to_string());
    CHECK(r.unfinished == 0);
    CHECK(r.cycles == e.cycles);
    CHECK(r.work_cycles == e.work_cycles);
    CHECK(r.slow_cycles == e.slow_cycles);
    CHECK(r.collectives == e.collectives);
    CHECK(static_cast<int64_t>(r.marks.size()) == e.marks);
    CHECK(digest(r) == e.digest);
  }
}

TEST_CASE("replay over messages: a doorbell cycle starts kDoorbellDelay later", "[whatif]") {
  // The runtime rings at once when it negotiates in shared memory and only
  // kDoorbellDelay into a cycle a peer has not joined when it negotiates
  // over messages (meta negotiation = messages). In the settings where a
  // rank with pending work joins a doorbell cycle (the three whose digests
  // were re-recorded above), that cycle, and what follows it, comes later;
  // the cycle counts stay.
  RecordedRun run = synthetic_run(3, 24, 6);
  for (const TuneSettings& s :
       {TuneSettings{128 << 20, 1.0, true}, TuneSettings{32 << 10, 5.0, true},
        TuneSettings{8 << 20, 50.0, false}}) {
    run.negotiation_messages = false;
    const ReplayResult shared = replay_ok(run, s);
    run.negotiation_messages = true;
    const ReplayResult messages = replay_ok(run, s);
    INFO(s.to_string());
    CHECK(messages.cycles == shared.cycles);
    REQUIRE(messages.marks.size() == shared.marks.size());
    bool later = false;
    for (size_t i = 0; i < shared.marks.size(); ++i) {
      CHECK(messages.marks[i] >= shared.marks[i]);
      later = later || messages.marks[i] > shared.marks[i];
    }
    CHECK(later);
  }
}

TEST_CASE("a replay of 2000 steps x 50 tensors predicts every step", "[whatif]") {
  const TuneSettings settings{128 << 20, 1.0, true};
  const RecordedRun big = synthetic_run(2, 2000, 50);
  const ReplayResult r = replay_ok(big, settings);
  CHECK(r.unfinished == 0);
  CHECK(r.notes.empty());
  REQUIRE(r.marks.size() == 2000);
  CHECK(std::is_sorted(r.marks.begin(), r.marks.end()));
  // One response per submission of a rank (every name is submitted on both).
  CHECK(r.responses == static_cast<int64_t>(big.ranks[0].tensors.size()));
  // Closed loop and causal: the first 100 steps are predicted as for a run
  // of 100 steps (releasing a step must not touch another step's submissions).
  const ReplayResult prefix = replay_ok(synthetic_run(2, 100, 50), settings);
  REQUIRE(prefix.marks.size() == 100);
  CHECK(std::equal(prefix.marks.begin(), prefix.marks.end(), r.marks.begin()));
}

TEST_CASE("replay rejects submissions out of step order", "[whatif]") {
  RecordedRun run = synthetic_run(2, 6, 3);
  std::swap(run.ranks[1].tensors[1].step, run.ranks[1].tensors.back().step);
  ReplayResult r;
  const Status s = replay_run(run, simple_model(2), TuneSettings{}, ReplayOptions{}, &r);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK_THAT(s.message(),
             Catch::Contains("rank 1") && Catch::Contains("out of enqueue or step order"));
}

TEST_CASE("a name submitted again while still pending waits for the earlier op", "[whatif]") {
  // Each step submits loss, g0, loss 10 us apart on both ranks: the second
  // loss arrives while the first is still being negotiated. The runtime
  // would reject it (kDuplicateName), so the replay holds it, and what
  // follows it on that rank, until the first completes.
  const int steps = 8;
  RecordedRun run;
  run.source = "dup";
  run.world_size = 2;
  for (int r = 0; r < 2; ++r) {
    RecordedRank rank;
    rank.rank = r;
    int64_t begin = kMs;
    for (int k = 0; k <= steps; ++k) {
      int i = 0;
      for (const char* name : {"loss", "g0", "loss"}) {
        RecordedTensor t;
        t.enqueue_ns = begin + 100 * kUs + 10 * kUs * i++;
        t.name = name;
        t.bytes = 4096;
        t.step = k;
        rank.tensors.push_back(t);
      }
      if (k == steps) break;
      rank.marks.push_back(begin + 2 * kMs);
      rank.mark_gap_ns.push_back(50 * kUs);
      begin = rank.marks.back();
    }
    run.ranks.push_back(std::move(rank));
  }
  ReplayOptions options;
  options.keep_groups = true;
  ReplayResult r;
  const Status s = replay_run(run, simple_model(2), TuneSettings{}, options, &r);
  INFO(s.to_string());
  REQUIRE(s.ok());
  CHECK(r.unfinished == 0);
  CHECK(r.marks.size() == steps);
  CHECK(r.responses == 3 * (steps + 1));
  std::vector<int64_t> loss_cycles;
  for (const ReplayGroup& g : r.groups)
    for (const std::string& m : g.members)
      if (m == "loss") loss_cycles.push_back(g.cycle);
  REQUIRE(loss_cycles.size() == 2 * (steps + 1));
  for (size_t i = 0; i + 1 < loss_cycles.size(); i += 2)
    CHECK(loss_cycles[i] < loss_cycles[i + 1]);  // never both in one cycle
  REQUIRE_FALSE(r.notes.empty());
  CHECK_THAT(r.notes.back(), Catch::Contains("18 submission(s) waited for an earlier op"));
}

namespace {

// synthetic_run with calibration samples, so what_if_loaded can fit a model.
RecordedRun calibrated_synthetic_run() {
  RecordedRun run = synthetic_run(3, 24, 6);
  for (int64_t bytes : {int64_t{4096}, int64_t{65536}, int64_t{1} << 20})
    for (int k = 0; k < 3; ++k) {
      run.samples.ring_steps.push_back({bytes, 20 * kUs + bytes / 2});
      run.samples.rd_steps.push_back({bytes, 20 * kUs + bytes / 2});
    }
  run.samples.negotiations = {{false, 3, 20 * kUs}, {true, 3, 200 * kUs}, {true, 6, 230 * kUs}};
  run.samples.callbacks = {{1, 3 * kUs}, {4, 6 * kUs}};
  run.score.median_bytes_per_second = 1e9;
  return run;
}

}  // namespace

TEST_CASE("a failing what-if setting is reported in its row, not fatal", "[whatif]") {
  const std::vector<TuneSettings> candidates = {
      {0, 0.1, false}, {32 << 10, 5.0, true}, {8 << 20, 50.0, false}, {1 << 20, 0.1, true}};
  // Cycle counts without a limit, then a limit just above the recorded
  // settings' count: the settings that need more cycles fail.
  WhatIfReport unlimited;
  REQUIRE(what_if_loaded(calibrated_synthetic_run(), candidates, ReplayOptions{}, &unlimited).ok());
  REQUIRE(unlimited.predicted() == candidates.size());
  ReplayOptions limited;
  limited.max_cycles = unlimited.at_recorded.cycles;
  std::vector<bool> should_fail;
  for (const WhatIfPrediction& p : unlimited.predictions)
    should_fail.push_back(p.replay.cycles > limited.max_cycles);
  const auto failing = std::count(should_fail.begin(), should_fail.end(), true);
  REQUIRE(failing > 0);
  REQUIRE(failing < static_cast<long>(candidates.size()));

  WhatIfReport report;
  REQUIRE(what_if_loaded(calibrated_synthetic_run(), candidates, limited, &report).ok());
  REQUIRE(report.predictions.size() == candidates.size());
  CHECK(report.predicted() == candidates.size() - static_cast<size_t>(failing));
  CHECK(what_if_observations(report, 0.02).size() == report.predicted());
  std::ostringstream table;
  print_what_if(report, false, table);
  const nlohmann::json j = nlohmann::json::parse(what_if_json(report));
  CHECK(j["not_predicted"].get<int>() == failing);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const WhatIfPrediction& p = report.predictions[i];
    INFO(p.settings.to_string());
    CHECK(p.settings == candidates[i]);
    CHECK(p.status.ok() == !should_fail[i]);
    CHECK((j["predictions"][i].count("error") == 1) == should_fail[i]);
    if (!should_fail[i]) {
      CHECK(p.anchored_bytes_per_second > 0);
      continue;
    }
    CHECK_THAT(p.status.message(), Catch::Contains("exceeded"));
    CHECK_THAT(table.str(), Catch::Contains(p.settings.to_string()) &&
                                Catch::Contains("not predicted: " + p.status.message()));
    CHECK(j["predictions"][i]["error"] == p.status.message());
  }
  CHECK_THAT(table.str(), Catch::Contains(std::to_string(failing) + " of 4 setting(s) could not "
                                                                    "be predicted"));

  // Every candidate failing is no error of what_if itself; the caller decides.
  std::vector<TuneSettings> bad;
  for (size_t i = 0; i < candidates.size(); ++i)
    if (should_fail[i]) bad.push_back(candidates[i]);
  REQUIRE(what_if_loaded(calibrated_synthetic_run(), bad, limited, &report).ok());
  CHECK(report.predicted() == 0);
  CHECK(what_if_observations(report, 0.02).empty());
}

TEST_CASE("tune --with-replay fails when no prediction can be made", "[whatif][cli]") {
  TempDir dir;
  GeneratedRun generated;  // scores fine, but has no ENQUEUE events to replay
  write_generated_run(dir.file("g.sqlite"), generated);
  std::string output;
  int code = run_command(std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("g.sqlite"), &output);
  INFO(output);
  REQUIRE(code == 0);
  code = run_command(std::string(RINGSCOPE_TUNE_BIN) + " " + dir.file("g.sqlite") +
                         " --with-replay --write " + dir.file("next.json"),
                     &output);
  INFO(output);
  CHECK(code == 1);
  CHECK_THAT(output, Catch::Contains("--with-replay: no what-if prediction could be made") &&
                         Catch::Contains("no ENQUEUE events"));
  CHECK_FALSE(std::ifstream(dir.file("next.json")).good());  // nothing written
}

TEST_CASE("fast negotiation falls back to empty cycles, then to half the slow path", "[whatif]") {
  CalibrationSamples s;
  s.ring_steps = {{4096, 30 * kUs}, {65536, 60 * kUs}};
  // Cache off: slow work cycles and empty cycles (no path, no responses).
  s.negotiations = {{true, 4, 400 * kUs},
                    {true, 8, 480 * kUs},
                    {false, 0, 30 * kUs},
                    {false, 0, 34 * kUs},
                    {false, 0, 32 * kUs}};
  CostModel m;
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.negotiate_fast_ns == Approx(32 * kUs));
  CHECK(m.negotiate_slow.alpha_ns == Approx(320 * kUs).epsilon(1e-6));
  REQUIRE_FALSE(m.notes.empty());
  CHECK_THAT(m.describe(), Catch::Contains("median of 3 empty cycle(s)"));

  // Fast-path cycles present: they alone set the fast cost.
  s.negotiations.push_back({false, 3, 20 * kUs});
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.negotiate_fast_ns == Approx(20 * kUs));
  CHECK_THAT(m.describe(), !Catch::Contains("empty cycle"));

  // Neither: half the slow path's fixed cost.
  s.negotiations = {{true, 4, 400 * kUs}, {true, 8, 480 * kUs}};
  REQUIRE(fit_cost_model(s, 2, false, &m).ok());
  CHECK(m.negotiate_fast_ns == Approx(160 * kUs).epsilon(1e-6));
  CHECK_THAT(m.describe(), Catch::Contains("half the slow path"));
}
