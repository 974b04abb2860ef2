// ringscope-tune end to end on generated traces: the table, the suggestion,
// --explain, --json, the settings file with provenance (and its round trip
// through the settings-file parser), and the CLI's errors.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "autotune_test_util.h"
#include "ringscope/autotune/trial_inputs.h"
#include "ringscope/autotune/tune_report.h"
#include "ringscope/trace_tools.h"
#include "ringscope/planning/settings_file.h"

using namespace ringscope;
using namespace ringscope::autotune;
using namespace ringscope::autotune::test;

namespace {

const std::string kTune = RINGSCOPE_TUNE_BIN;

// Three runs whose throughput grows with the fusion threshold.
void write_three_runs(const TempDir& dir, int64_t cache_capacity = 1024,
                      const std::string& subdir = "") {
  const TuneSettings settings[] = {{0, 50, true}, {1 << 20, 5, true}, {32 << 20, 1, true}};
  const int64_t step_ns[] = {40'000'000, 20'000'000, 12'000'000};
  for (int i = 0; i < 3; ++i) {
    GeneratedRun run;
    run.settings = settings[i];
    run.step_ns = step_ns[i];
    run.jitter_fraction = 0.05;
    run.seed = i + 1;
    run.run_id = "run-" + std::to_string(i);
    run.cache_capacity = cache_capacity;
    write_generated_run(dir.file(subdir + "trial" + std::to_string(i) + ".sqlite"), run);
  }
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("tune CLI end to end: table, suggestion, settings file", "[cli]") {
  TempDir dir;
  write_three_runs(dir);
  const std::string out_file = dir.file("next.json"), json_file = dir.file("summary.json");
  std::string output;
  REQUIRE(run_command(
              kTune + " " + dir.path() + " --write " + out_file + " --explain --json " + json_file,
              &output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains("3 trial(s)"));
  CHECK_THAT(output, Catch::Contains("trial2.sqlite"));
  CHECK_THAT(output, Catch::Contains("suggested next trial"));
  CHECK_THAT(output, Catch::Contains("vs best observed"));
  CHECK_THAT(output, Catch::Contains("vs defaults"));
  CHECK_THAT(output, Catch::Contains("length scales"));
  CHECK_THAT(output, Catch::Contains("wrote " + out_file));

  SettingsFile file;
  REQUIRE(read_settings_file(out_file, &file).ok());
  const auto provenance = nlohmann::json::parse(file.provenance_json);
  CHECK(provenance["tool"] == "ringscope tune");
  CHECK(provenance["traces"].size() == 3);
  CHECK(provenance["traces"][0]["median_bytes_per_second"].get<double>() > 0);
  CHECK(provenance["expected_gain_vs_best_observed"].contains("percent_stddev"));
  CHECK(provenance.contains("created"));

  const auto summary = nlohmann::json::parse(read_text(json_file));
  CHECK(summary["trials"].size() == 3);
  CHECK(summary["suggestion"]["next"]["fusion_threshold_bytes"] == file.fusion_threshold_bytes);
}

TEST_CASE("tune CLI through the dispatcher, one trial, --pick best", "[cli]") {
  TempDir dir;
  GeneratedRun run;
  run.settings = TuneSettings{0, 50, true};
  write_generated_run(dir.file("only.sqlite"), run);
  const std::string out_file = dir.file("best.json");
  std::string output;
  REQUIRE(run_command(std::string(RINGSCOPE_DISPATCHER_BIN) + " tune " + dir.file("only.sqlite") +
                          " --write " + out_file,
                      &output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains("EXPLORATORY"));
  CHECK_THAT(output, Catch::Contains("1 distinct setting"));
  REQUIRE(run_command(kTune + " " + dir.file("only.sqlite") + " --pick best --write " + out_file,
                      &output) == 0);
  SettingsFile file;
  REQUIRE(read_settings_file(out_file, &file).ok());
  CHECK(nlohmann::json::parse(file.provenance_json)["pick"] == "best predicted");
}

TEST_CASE("tune CLI: a merged trace replaces its per-rank files, repeats are noted", "[cli]") {
  TempDir dir;
  GeneratedRun run;
  run.run_id = "same-settings-1";
  write_generated_run(dir.file("a.sqlite"), run);
  REQUIRE(merge_traces({dir.file("a.sqlite")}, dir.file("a.sqlite")).ok());
  run.run_id = "same-settings-2";
  run.seed = 9;
  run.jitter_fraction = 0.1;
  write_generated_run(dir.file("b.sqlite"), run);
  std::string output;
  REQUIRE(run_command(kTune + " " + dir.path(), &output) == 0);
  INFO(output);
  CHECK_THAT(output, Catch::Contains("2 trial(s)"));
  CHECK_THAT(output, Catch::Contains("same settings"));
}

TEST_CASE("tune CLI errors are clear", "[cli]") {
  TempDir dir;
  std::string output;
  CHECK(run_command(kTune, &output) == 2);  // no inputs: usage
  CHECK_THAT(output, Catch::Contains("traces"));

  CHECK(run_command(kTune + " " + dir.file("nothing.sqlite"), &output) == 1);
  CHECK_THAT(output, Catch::Contains("no trace at"));

  CHECK(run_command(kTune + " " + dir.path(), &output) == 1);
  CHECK_THAT(output, Catch::Contains("no traces (*.sqlite) in directory"));

  { std::ofstream(dir.file("bad.sqlite")) << "this is not a trace"; }
  CHECK(run_command(kTune + " " + dir.file("bad.sqlite"), &output) == 1);
  CHECK_THAT(output, Catch::Contains("bad.sqlite"));

  GeneratedRun good;
  const std::string good_rank0 = write_generated_run(dir.file("good.sqlite"), good).at(0);
  CHECK(run_command(kTune + " " + dir.path(), &output) == 1);  // the bad file stops it
  CHECK(run_command(kTune + " --skip-bad " + dir.path(), &output) == 0);
  CHECK_THAT(output, Catch::Contains("skipped"));
  CHECK_THAT(output, Catch::Contains("1 trial(s)"));

  CHECK(run_command(kTune + " " + dir.file("good.sqlite") + " --pick worst", &output) == 2);
  CHECK(run_command(kTune + " " + dir.file("good.sqlite") + " --write /nonexistent/dir/x.json",
                    &output) == 1);
  // An output that is one of the traces read is refused, the trace kept.
  const auto size = std::filesystem::file_size(good_rank0);
  for (const char* flag : {"--json", "--write"}) {
    CHECK(run_command(kTune + " " + dir.file("good.sqlite") + " " + flag + " " + good_rank0,
                      &output) == 1);
    CHECK_THAT(output, Catch::Contains("is one of the input traces"));
  }
  CHECK(std::filesystem::file_size(good_rank0) == size);
}

TEST_CASE("settings file round trip keeps the pick and its provenance", "[settings]") {
  TraceScore trial;
  trial.source = "runs/a.sqlite";
  trial.settings = TuneSettings{0, 50, true};
  trial.median_bytes_per_second = 5e8;
  trial.log_score = std::log(5e8);
  Suggestion suggestion;
  REQUIRE(suggest_next(observations_of({trial}), TunerOptions{}, &suggestion).ok());
  SettingsFile file;
  REQUIRE(make_settings_file({trial}, suggestion, Pick::kNext, &file).ok());
  CHECK(file.fusion_threshold_bytes == suggestion.next.fusion_threshold_bytes);
  CHECK(file.cycle_time_ms == suggestion.next.cycle_time_ms);
  std::string text;
  REQUIRE(format_settings_json(file, &text).ok());
  SettingsFile back;
  REQUIRE(parse_settings_json(text, "round-trip", &back).ok());
  CHECK(back.fusion_threshold_bytes == file.fusion_threshold_bytes);
  CHECK(back.cycle_time_ms == file.cycle_time_ms);
  CHECK(back.cache_enabled == file.cache_enabled);
  const auto provenance = nlohmann::json::parse(back.provenance_json);
  CHECK(provenance["traces"][0]["trace"] == "runs/a.sqlite");
  CHECK(provenance["exploratory"] == true);
  CHECK(provenance["expected_gain_vs_default"].contains("percent"));
}

TEST_CASE("tune --write keeps the trials' cache capacity and survives non-UTF-8 paths", "[cli]") {
  TempDir dir;
  const std::string sub = "caf\xe4/";  // Latin-1: not valid UTF-8
  REQUIRE(run_command("mkdir '" + dir.file(sub) + "'", nullptr) == 0);
  write_three_runs(dir, 4096, sub);
  const std::string out_file = dir.file("next.json");
  std::string output;
  REQUIRE(run_command(kTune + " '" + dir.file(sub) + "' --pick best --write " + out_file +
                          " --json " + dir.file("summary.json"),
                      &output) == 0);
  INFO(output);
  SettingsFile file;
  REQUIRE(read_settings_file(out_file, &file).ok());
  REQUIRE(file.cache_enabled);
  CHECK(file.cache_capacity == 4096);
  CHECK(file.effective_cache_capacity() == 4096);
}
