// The Tune panel's data side without a window: the trial set built from
// several traces (duplicates and bad traces become messages), online
// autotuning trials read from AUTOTUNE_TRIAL events, the GP heat map and
// settings files, and "Run next trial" end to end with a fake command that
// writes a trace. The subprocess runner and the command template:
// test_trial_command.cc.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "autotune_test_util.h"
#include "online_trials.h"
#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"
#include "ringscope/planning/settings_file.h"
#include "subprocess.h"
#include "tune_session.h"
#include "tune_test_util.h"

using namespace ringscope;
using namespace ringscope::view;
using autotune::test::GeneratedRun;
using autotune::test::TempDir;
using ringscope::view::test::poll_until;
using ringscope::view::test::trial_run;

namespace {

bool wait_trial(TuneSession& session) {
  return poll_until([&] {
    session.poll();
    const TrialRunState s = session.trial_run().state;
    return s != TrialRunState::kRunning && s != TrialRunState::kScoring;
  });
}

const TuneTrial* find_trial(const TuneModel& model, const std::string& part) {
  for (const TuneTrial& t : model.trials)
    if (t.score.source.find(part) != std::string::npos) return &t;
  return nullptr;
}

// Rank 0 of an online-tuning run: SETTINGS before each trial, then its
// AUTOTUNE_TRIAL windows (value = bytes/s, bytes in the window).
struct OnlineTrial {
  int64_t threshold;
  double cycle_ms;
  int windows;
  int64_t bytes_per_window;  // every window lasts 100 ms
};

void write_online_run(const std::string& base, const std::vector<OnlineTrial>& trials,
                      const std::string& cache_capacity = "1024") {
  TraceWriter writer;
  REQUIRE(writer
              .open(per_rank_trace_path(base, 0), 0, 1,
                    {{"run_id", "online-run"}, {"cache_capacity", cache_capacity}})
              .ok());
  writer.set_clock_offset_start(0, 1000, 0);
  int64_t t = 1'000'000;
  for (size_t id = 0; id < trials.size(); ++id) {
    const OnlineTrial& trial = trials[id];
    const std::pair<SettingKey, int64_t> values[] = {
        {SettingKey::kFusionThresholdBytes, trial.threshold},
        {SettingKey::kCycleTimeNs, static_cast<int64_t>(trial.cycle_ms * 1e6)}};
    for (const auto& [key, value] : values) {
      TraceEvent e;
      e.kind = static_cast<uint16_t>(EventKind::kSettings);
      e.start_ns = e.end_ns = t;
      e.peer_send = static_cast<int32_t>(key);
      e.value = value;
      writer.record(e);
    }
    t += 1'000'000;
    for (int w = 0; w < trial.windows; ++w) {
      TraceEvent e;
      e.kind = static_cast<uint16_t>(EventKind::kAutotuneTrial);
      e.start_ns = t;
      e.end_ns = t + 100'000'000;
      e.step = w;
      e.aux = static_cast<int32_t>(id);
      // Windows at 99%, 100%, 103%, 108% ... of the nominal rate: a spread.
      e.bytes = trial.bytes_per_window * (99 + w * w) / 100;
      e.value = e.bytes * 10;
      writer.record(e);
      t = e.end_ns;
    }
  }
  writer.set_clock_offset_end(0, 1000, t);
  REQUIRE(writer.close().ok());
}

}  // namespace

TEST_CASE("tune session: trials from several traces, duplicates skipped, model fitted", "[tune]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("runs"));
  const std::string a = dir.file("runs/a.sqlite"), b = dir.file("runs/b.sqlite"),
                    c = dir.file("runs/c.sqlite");
  // Settings on the heat map's grid points (quarter octaves x 0.05 decades).
  const GeneratedRun ra = trial_run("run-a", 1 << 20, 1.0, 10'000'000);
  const GeneratedRun rb = trial_run("run-b", 16 << 20, 10.0, 8'000'000);
  const GeneratedRun rc = trial_run("run-c", 256 << 20, 100.0, 12'500'000);
  autotune::test::write_generated_run(a, ra);
  autotune::test::write_generated_run(b, rb);
  autotune::test::write_generated_run(c, rc);

  TuneSession session;
  session.add_traces({a});                    // the loaded trace, as a base path
  session.add_traces({dir.file("runs")});     // a directory holding it again
  session.add_traces({dir.file("nothing")});  // no such trace
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  const TuneModel& model = session.model();
  REQUIRE(model.trials.size() == 3);
  CHECK(model.trials[0].score.source == a);
  CHECK(model.trials[0].origin == "trace");
  for (const auto& [run, path] : {std::pair{ra, a}, {rb, b}, {rc, c}}) {
    const TuneTrial* t = find_trial(model, path);
    REQUIRE(t != nullptr);
    CHECK(t->score.settings == run.settings);
    CHECK(t->score.median_bytes_per_second ==
          Approx(autotune::test::expected_bytes_per_second(run)).epsilon(1e-6));
    CHECK(t->steps() == run.steps - 2);  // 11 step windows, the first dropped as warm-up
  }
  // The duplicate and the missing path are messages, not trials or crashes.
  bool duplicate = false, missing = false;
  for (const std::string& m : session.messages()) {
    duplicate |= m.find("already loaded") != std::string::npos;
    missing |= m.find("nothing") != std::string::npos;
  }
  CHECK(duplicate);
  CHECK(missing);

  // The model: a suggestion, and the heat map of the same GP's mean: at the
  // best observed setting it equals the suggestion's prediction there; at
  // each trial it is near the trial's ln score; it varies over the grid.
  REQUIRE(model.fitted);
  const TuneHeatMap& heat = model.heat[1];
  CHECK(heat.cache_enabled);
  REQUIRE(heat.mean.size() == TuneHeatMap::kThresholdSteps * TuneHeatMap::kCycleSteps);
  CHECK(heat.max > heat.min);
  auto cell = [&](const autotune::TuneSettings& s) {
    const int col =
        static_cast<int>(std::lround((std::log2(double(s.fusion_threshold_bytes)) - 16) * 4));
    const int row = static_cast<int>(std::lround((std::log10(s.cycle_time_ms) + 1) * 20));
    return heat.at(row, col);
  };
  CHECK(TuneHeatMap::log2_threshold(16) == 20);           // 1 MiB
  CHECK(TuneHeatMap::log10_cycle_ms(40) == Approx(1.0));  // 10 ms
  CHECK(model.suggestion.best_observed == rb.settings);   // the fastest trial
  CHECK(cell(rb.settings) == Approx(model.suggestion.best_observed_prediction.mean).epsilon(1e-9));
  for (const GeneratedRun& r : {ra, rb, rc})
    CHECK(cell(r.settings) ==
          Approx(std::log(autotune::test::expected_bytes_per_second(r))).margin(0.2));
  CHECK(heat.max >= cell(rb.settings));

  // Settings files as `ringscope tune --write` writes them.
  const std::string next = dir.file("next.json"), best = dir.file("best.json");
  REQUIRE(session.write_settings(next, autotune::Pick::kNext).ok());
  REQUIRE(session.write_settings(best, autotune::Pick::kBest).ok());
  SettingsFile f;
  REQUIRE(read_settings_file(next, &f).ok());
  CHECK(f.fusion_threshold_bytes == model.suggestion.next.fusion_threshold_bytes);
  CHECK(f.cycle_time_ms == Approx(model.suggestion.next.cycle_time_ms));
  CHECK(f.provenance_json.find("run-b") != std::string::npos);  // the traces it learned from
  REQUIRE(read_settings_file(best, &f).ok());
  CHECK(f.fusion_threshold_bytes == model.suggestion.recommended.fusion_threshold_bytes);
  CHECK_FALSE(session.write_settings(dir.file("no/such/dir/x.json"), autotune::Pick::kNext).ok());
}

TEST_CASE("tune session: a removed trial leaves the set and the model, it can come back",
          "[tune]") {
  TempDir dir;
  std::filesystem::create_directories(dir.file("runs"));
  const GeneratedRun ra = trial_run("run-a", 1 << 20, 1.0, 10'000'000);
  const GeneratedRun rb = trial_run("run-b", 16 << 20, 10.0, 8'000'000);
  const GeneratedRun rc = trial_run("run-c", 256 << 20, 100.0, 12'500'000);
  for (const GeneratedRun& r : {ra, rb, rc})
    autotune::test::write_generated_run(dir.file("runs/" + r.run_id + ".sqlite"), r);
  TuneSession session;
  session.add_traces({dir.file("runs")});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  REQUIRE(session.model().trials.size() == 3);
  const int64_t before = session.model().version;
  REQUIRE(session.model().suggestion.best_observed == rb.settings);  // b is the fastest
  const std::string key_b = find_trial(session.model(), dir.file("runs/run-b.sqlite"))->key;

  session.remove_trial(key_b);
  session.remove_trial("run:no-such-run");
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  const TuneModel& without = session.model();
  CHECK(without.version > before);  // refitted
  REQUIRE(without.trials.size() == 2);
  CHECK(find_trial(without, dir.file("runs/run-b.sqlite")) == nullptr);
  REQUIRE(without.fitted);
  CHECK_FALSE(without.suggestion.best_observed == rb.settings);
  bool said = false;
  for (const std::string& m : session.messages())
    said |= m.find("no trial run:no-such-run to remove") != std::string::npos;
  CHECK(said);

  session.add_traces({dir.file("runs/run-b.sqlite")});  // not "already loaded" any more
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  CHECK(session.model().trials.size() == 3);
  CHECK(session.model().suggestion.best_observed == rb.settings);
}

TEST_CASE("tune session: no usable trace leaves no model and says why", "[tune]") {
  TempDir dir;
  std::ofstream(dir.file("garbage.sqlite"), std::ios::binary) << std::string(4096, 'x');
  TuneSession session;
  session.add_traces({dir.file("garbage.sqlite")});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  CHECK(session.model().trials.empty());
  CHECK_FALSE(session.model().fitted);
  REQUIRE_FALSE(session.messages().empty());
  CHECK(session.messages().front().find("garbage.sqlite") != std::string::npos);
  CHECK_FALSE(session.write_settings(dir.file("x.json"), autotune::Pick::kNext).ok());
}

TEST_CASE("tune session: online autotuning trials come from AUTOTUNE_TRIAL windows", "[tune]") {
  TempDir dir;
  const std::string base = dir.file("online.sqlite");
  write_online_run(base, {{4 << 20, 2.0, 3, 100'000'000},
                          {64 << 20, 0.5, 3, 150'000'000},
                          {1 << 20, 10.0, 1, 50'000'000}});  // cut short: 1 window
  TuneSession session;
  session.add_traces({base});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  const TuneModel& model = session.model();
  REQUIRE(model.trials.size() == 2);
  CHECK(model.trials[0].origin == "online");
  CHECK(model.trials[0].score.source == base + " (online trial 0)");
  CHECK(model.trials[0].score.settings.fusion_threshold_bytes == 4 << 20);
  CHECK(model.trials[0].score.settings.cycle_time_ms == Approx(2.0));
  CHECK(model.trials[0].score.median_bytes_per_second == Approx(1.0e9));  // 0.99, 1.00, 1.03 GB/s
  CHECK(model.trials[1].score.settings.fusion_threshold_bytes == 64 << 20);
  CHECK(model.trials[1].score.settings.cycle_time_ms == Approx(0.5));
  CHECK(model.trials[1].score.median_bytes_per_second == Approx(1.5e9));
  CHECK(model.trials[1].score.mad_bytes_per_second == Approx(1.4826 * 0.015e9));
  CHECK(model.trials[1].score.log_score_variance > 0);
  CHECK(model.fitted);
  bool skipped = false;
  for (const std::string& m : session.messages())
    skipped |= m.find("online trial 2") != std::string::npos;
  CHECK(skipped);
}

TEST_CASE("tune session: the settings file from online trials keeps the run's cache capacity",
          "[tune]") {
  TempDir dir;
  const std::string base = dir.file("online4096.sqlite");
  write_online_run(base, {{4 << 20, 2.0, 3, 100'000'000}, {64 << 20, 0.5, 3, 150'000'000}}, "4096");
  TuneSession session;
  session.add_traces({base});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  REQUIRE(session.model().trials.size() == 2);
  const std::string path = dir.file("next.json");
  REQUIRE(session.write_settings(path, autotune::Pick::kBest).ok());
  SettingsFile file;
  REQUIRE(read_settings_file(path, &file).ok());
  REQUIRE(file.cache_enabled);
  CHECK(file.cache_capacity == 4096);
}

TEST_CASE("tune session: a trace still being written is read through a copy and rescored",
          "[tune][live]") {
  TempDir dir;
  const std::string base = dir.file("live.sqlite");
  const std::string file = per_rank_trace_path(base, 0);
  TraceWriter writer;
  REQUIRE(writer.open(file, 0, 1, {{"run_id", "live-run"}}).ok());
  const int32_t name = writer.intern("grad/live");
  auto record = [&](int first, int count) {  // allreduces of 4 KiB, one per ms
    for (int i = first; i < first + count; ++i) {
      TraceEvent e;
      e.kind = static_cast<uint16_t>(EventKind::kAllreduce);
      e.start_ns = 1'000'000 * int64_t{i + 1};
      e.end_ns = e.start_ns + 100'000;
      e.cycle = i;
      e.seq_index = 0;
      e.name_id = name;
      e.bytes = 4096;
      writer.record(e);
    }
  };
  record(0, 40);
  REQUIRE(writer.flush().ok());

  TuneSession session;
  session.add_traces({base});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  REQUIRE(session.model().trials.size() == 1);
  CHECK(session.model().trials[0].partial);
  CHECK(session.model().trials[0].score.collectives == 40);
  auto said = [&](const std::string& part) {
    return std::any_of(session.messages().begin(), session.messages().end(),
                       [&](const std::string& m) { return m.find(part) != std::string::npos; });
  };
  CHECK(said("still being written"));
  // Adding it again while it is written does not add it twice.
  session.add_traces({base});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  CHECK(session.model().trials.size() == 1);

  // The run ends: no connection of the session is left on the file, so the
  // writer's close (which needs it alone) succeeds; the session notices and
  // replaces the partial trial with the finished run's.
  record(40, 40);
  REQUIRE(writer.close().ok());
  REQUIRE(poll_until([&] {
    session.poll();
    return session.model().trials.size() == 1 && !session.model().trials[0].partial;
  }));
  CHECK(session.model().trials[0].score.collectives == 80);
  CHECK(said("rescored"));
  session.add_traces({base});  // finished and loaded: a duplicate now
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  CHECK(session.model().trials.size() == 1);
}

TEST_CASE("scoring stops when cancelled", "[tune]") {
  TempDir dir;
  autotune::test::write_generated_run(dir.file("a.sqlite"),
                                      trial_run("a", 1 << 20, 1.0, 10'000'000));
  TraceReader reader;
  REQUIRE(reader.open({dir.file("a.sqlite")}).ok());
  std::atomic<bool> cancel{false};
  autotune::ScoreOptions options;
  options.cancel = &cancel;
  autotune::TraceScore score;
  REQUIRE(autotune::score_trace(reader, "a", options, &score).ok());
  cancel = true;
  CHECK(autotune::score_trace(reader, "a", options, &score).code() == StatusCode::kShutdown);
  std::vector<autotune::TraceScore> online;
  std::vector<std::string> notes;
  CHECK(read_online_trials(reader, "a", options, &online, &notes).code() == StatusCode::kShutdown);
}

TEST_CASE("run next trial: a command that writes a trace adds a trial", "[tune][run]") {
  TempDir dir;
  // Runs of one rank: the fake command copies only rank 0's file, and the
  // session keeps trials of one world size.
  GeneratedRun seed = trial_run("seed", 1 << 20, 0.5, 10'000'000);
  seed.world_size = 1;
  autotune::test::write_generated_run(dir.file("seed.sqlite"), seed);
  // The "trial" the fake command produces: a one-rank run, copied to where
  // `ringscope run --trace {trace}` would write rank 0's file.
  GeneratedRun fixture = trial_run("fixture", 32 << 20, 3.0, 9'000'000);
  fixture.world_size = 1;
  autotune::test::write_generated_run(dir.file("fixture.sqlite"), fixture);
  const std::string fixture_file = per_rank_trace_path(dir.file("fixture.sqlite"), 0);

  TuneSession session;
  session.add_traces({dir.file("seed.sqlite")});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  REQUIRE(session.model().trials.size() == 1);
  REQUIRE(session.model().fitted);
  const autotune::TuneSettings suggested = session.model().suggestion.next;
  const int64_t version = session.model().version;

  const std::string trials_dir = dir.file("trials");
  const std::string command = "t={trace}; cp " + shell_quote(fixture_file) +
                              " \"${t%.sqlite}.rank0.sqlite\"; echo settings {settings}";
  REQUIRE(session.start_next_trial(command, trials_dir).ok());
  const TrialRunInfo& run = session.trial_run();
  CHECK(run.trace == std::filesystem::absolute(trials_dir + "/trial0.sqlite").string());
  CHECK_FALSE(session.start_next_trial(command, trials_dir).ok());  // already running
  REQUIRE(wait_trial(session));
  INFO(run.message << "\n" << session.process().log());
  REQUIRE(run.state == TrialRunState::kDone);
  CHECK(session.process().last_line() == "settings " + run.settings_path);
  // The settings it ran with were the suggestion.
  SettingsFile f;
  REQUIRE(read_settings_file(run.settings_path, &f).ok());
  CHECK(f.fusion_threshold_bytes == suggested.fusion_threshold_bytes);
  CHECK(f.cycle_time_ms == Approx(suggested.cycle_time_ms));
  // The new trace is a trial, and the model was refitted with it.
  const TuneModel& model = session.model();
  REQUIRE(model.trials.size() == 2);
  CHECK(model.trials[1].origin == "run next trial");
  CHECK(model.trials[1].score.settings == fixture.settings);
  CHECK(model.version > version);
  CHECK(model.fitted);

  // The same trace again is a duplicate run: the trial fails, nothing is added.
  REQUIRE(session.start_next_trial(command, trials_dir).ok());
  CHECK(session.trial_run().trace.find("trial1.sqlite") != std::string::npos);
  REQUIRE(wait_trial(session));
  CHECK(session.trial_run().state == TrialRunState::kFailed);
  CHECK(session.trial_run().message.find("already loaded") != std::string::npos);
  CHECK(session.model().trials.size() == 2);
}

TEST_CASE("run next trial: failures report exit code and log, never hang", "[tune][run]") {
  TempDir dir;
  TuneSession session;
  // No trial yet: the first run gets the runtime defaults.
  REQUIRE(session.start_next_trial("echo boom >&2; exit 7 # {trace}", dir.file("t")).ok());
  SettingsFile f;
  REQUIRE(read_settings_file(session.trial_run().settings_path, &f).ok());
  CHECK(f.fusion_threshold_bytes == autotune::default_settings().fusion_threshold_bytes);
  REQUIRE(wait_trial(session));
  CHECK(session.trial_run().state == TrialRunState::kFailed);
  CHECK(session.trial_run().exit_code == 7);
  CHECK(session.trial_run().message == "exit code 7");
  CHECK(session.process().log_tail(3) == "boom");

  // Exit 0 without a trace.
  REQUIRE(session.start_next_trial("true {trace}", dir.file("t")).ok());
  REQUIRE(wait_trial(session));
  CHECK(session.trial_run().state == TrialRunState::kFailed);
  CHECK(session.trial_run().message.find("wrote no trace") != std::string::npos);

  // Cancel.
  REQUIRE(session.start_next_trial("sleep 100 {trace}", dir.file("t")).ok());
  session.cancel_trial();
  REQUIRE(wait_trial(session));
  CHECK(session.trial_run().state == TrialRunState::kCancelled);

  // A template without {trace} does not start.
  CHECK_FALSE(session.start_next_trial("sleep 1", dir.file("t")).ok());
  CHECK(session.trial_run().state == TrialRunState::kCancelled);  // unchanged
  CHECK(session.model().trials.empty());
}

TEST_CASE("tune session: a run with another number of ranks is not mixed into the trials",
          "[tune]") {
  TempDir dir;
  const std::string a = dir.file("a.sqlite"), b = dir.file("b.sqlite");
  GeneratedRun two = trial_run("run-two", 1 << 20, 1.0, 10'000'000);
  GeneratedRun four = trial_run("run-four", 16 << 20, 1.0, 10'000'000);
  four.world_size = 4;
  autotune::test::write_generated_run(a, two);
  autotune::test::write_generated_run(b, four);
  TuneSession session;
  session.add_traces({a});
  session.add_traces({b});
  REQUIRE(session.wait_idle(std::chrono::seconds(60)).ok());
  session.poll();
  REQUIRE(session.model().trials.size() == 1);
  CHECK(session.model().trials[0].world_size == 2);
  bool said = false;
  for (const std::string& m : session.messages())
    said |= m.find("ran 4 rank(s), the trials so far ran 2") != std::string::npos;
  CHECK(said);
}
