// ringscope-tune (`ringscope tune`): reads recorded runs, scores each one,
// fits the Gaussian-process model and suggests the next settings; --write
// saves them as a settings file for `ringscope run --settings`. --what-if
// predicts other settings from one recorded run (replay, no new runs).
// Exit codes: 0 success, 1 a trace or the model failed (or nothing could be
// predicted for --what-if / --with-replay), 2 bad usage.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/trial_inputs.h"
#include "ringscope/autotune/tune_report.h"
#include "ringscope/autotune/whatif.h"
#include "ringscope/file_output.h"
#include "ringscope/planning/settings_file.h"

using namespace ringscope;
using namespace ringscope::autotune;

namespace {

int fail(const Status& s) {
  std::cerr << "ringscope tune: " << s.to_string() << "\n";
  return 1;
}

// Settings to predict: the cross product of the given lists, a missing list
// taking the recorded value; no list at all: the default grid.
std::vector<TuneSettings> what_if_settings(const RecordedRun& run,
                                           const std::vector<double>& threshold_mb,
                                           const std::vector<double>& cycle_ms,
                                           const std::vector<std::string>& cache) {
  if (threshold_mb.empty() && cycle_ms.empty() && cache.empty()) return what_if_grid();
  std::vector<int64_t> thresholds;
  for (double mb : threshold_mb) thresholds.push_back(std::llround(mb * 1048576.0));
  if (thresholds.empty()) thresholds.push_back(run.settings.fusion_threshold_bytes);
  std::vector<double> cycles = cycle_ms;
  if (cycles.empty()) cycles.push_back(run.settings.cycle_time_ms);
  std::vector<bool> caches;
  for (const std::string& c : cache) caches.push_back(c == "on");
  if (caches.empty()) caches.push_back(run.settings.cache_enabled);
  std::vector<TuneSettings> out;
  for (bool c : caches)
    for (int64_t t : thresholds)
      for (double cy : cycles) out.push_back({t, cy, c});
  return out;
}

int run_what_if(const std::vector<TraceGroup>& groups, const std::vector<double>& threshold_mb,
                const std::vector<double>& cycle_ms, const std::vector<std::string>& cache,
                const ScoreOptions& score_options, bool explain, const std::string& json_path) {
  if (groups.size() != 1)
    return fail(
        Status(StatusCode::kInvalidArgument,
               "--what-if takes exactly one recorded run; got " + std::to_string(groups.size())));
  ReplayOptions options;
  options.score = score_options;
  RecordedRun run;
  Status s = load_recorded_run_files(groups[0].files, score_options, &run);
  if (!s.ok()) return fail(s);
  const std::vector<TuneSettings> settings = what_if_settings(run, threshold_mb, cycle_ms, cache);
  WhatIfReport report;
  s = what_if_loaded(std::move(run), settings, options, &report);
  if (!s.ok()) return fail(s);
  print_what_if(report, explain, std::cout);
  if (!json_path.empty())
    if (Status w = write_file_atomically(json_path, what_if_json(report) + "\n",
                                         "--json file '" + json_path + "'");
        !w.ok())
      return fail(w);
  if (report.predicted() == 0)
    return fail(Status(StatusCode::kInvalidArgument, "none of the " +
                                                         std::to_string(report.predictions.size()) +
                                                         " setting(s) could be predicted from '" +
                                                         report.run.source + "' (reasons above)"));
  return 0;
}

// Replay predictions from the best-scoring trial, as extra observations.
// Error: the user asked for them and none could be made (the replay of that
// trial failed, or every setting of the grid did); a partial failure is
// reported on stdout.
Status add_replay_observations(const std::vector<TraceGroup>& groups, const LoadedTrials& loaded,
                               const ScoreOptions& score_options, double sigma,
                               std::vector<Observation>* observations) {
  if (loaded.trials.empty())
    return Status(StatusCode::kInvalidArgument, "--with-replay: no trial to replay");
  size_t best = 0;
  for (size_t i = 1; i < loaded.trials.size(); ++i)
    if (loaded.trials[i].median_bytes_per_second > loaded.trials[best].median_bytes_per_second)
      best = i;
  const std::string& source = loaded.trials[best].source;
  auto it = std::find_if(groups.begin(), groups.end(),
                         [&](const TraceGroup& g) { return g.label == source; });
  if (it == groups.end())
    return Status(StatusCode::kInvalidArgument,
                  "--with-replay: cannot find the files of the best trial '" + source + "'");
  ReplayOptions options;
  options.score = score_options;
  WhatIfReport report;
  Status s = what_if(it->files, what_if_grid(), options, &report);
  if (!s.ok())
    return Status(s.code(),
                  "--with-replay: no what-if prediction could be made from the best "
                  "trial: " +
                      s.message());
  const auto extra = what_if_observations(report, sigma * sigma);
  const WhatIfPrediction* first_failure = nullptr;
  for (const WhatIfPrediction& p : report.predictions)
    if (!p.status.ok() && !first_failure) first_failure = &p;
  if (extra.empty())
    return Status(StatusCode::kInvalidArgument,
                  "--with-replay: none of the " + std::to_string(report.predictions.size()) +
                      " what-if settings could be predicted from '" + source + "'" +
                      (first_failure ? "; e.g. " + first_failure->settings.to_string() + ": " +
                                           first_failure->status.message()
                                     : std::string()));
  observations->insert(observations->end(), extra.begin(), extra.end());
  std::cout << "replay: " << extra.size() << " predictions from " << source
            << " added as observations (model sigma " << sigma << " in ln units)\n";
  if (first_failure)
    std::cout << "replay: " << report.predictions.size() - report.predicted()
              << " setting(s) could not be predicted and were left out; e.g. "
              << first_failure->settings.to_string() << ": " << first_failure->status.message()
              << "\n";
  return Status::OK();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "ringscope tune: learn fusion threshold, cycle time and response cache from recorded runs.\n"
      "Each input is a merged trace, per-rank files, a trace base path or a directory of runs;\n"
      "every run is one trial. Prints the trials, the model's suggestion with expected gain and\n"
      "uncertainty, and writes it as a settings file (docs/autotune.md).",
      "ringscope tune"};
  std::vector<std::string> inputs;
  std::string write_path, json_path, pick_name = "next";
  bool explain = false, skip_bad = false;
  ScoreOptions score_options;
  TunerOptions tuner_options;
  app.add_option("traces", inputs, "traces or directories of runs")->required();
  app.add_option("--write", write_path, "write the picked settings to this settings file");
  app.add_option("--pick", pick_name,
                 "next: the next trial to run (max expected improvement); best: the best "
                 "predicted observed-or-default settings")
      ->check(CLI::IsMember({"next", "best"}));
  app.add_flag("--explain", explain, "print the model's hyperparameters and why");
  app.add_option("--json", json_path, "write a JSON summary of trials and suggestion");
  app.add_flag("--skip-bad", skip_bad, "skip unreadable or too-short traces instead of failing");
  app.add_option("--skip-windows", score_options.skip_windows, "warm-up windows to drop")
      ->check(CLI::Range(0, 1000000));
  app.add_option("--steps-per-window", score_options.steps_per_window,
                 "STEP marks per scoring window")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--min-windows", score_options.min_windows, "fewest windows a trial needs")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--xi", tuner_options.xi, "expected-improvement margin (ln units)")
      ->check(CLI::Range(0.0, 1.0));
  bool what_if_mode = false, with_replay = false;
  double replay_sigma = 0.15;
  std::vector<double> threshold_mb, cycle_ms;
  std::vector<std::string> cache;
  app.add_flag("--what-if", what_if_mode,
               "predict scores of other settings by replaying ONE recorded run (no new runs); "
               "without --threshold-mb/--cycle-ms/--cache: a 48-point grid");
  app.add_option("--threshold-mb", threshold_mb, "--what-if: fusion thresholds in MiB (0 = off)")
      ->delimiter(',')
      ->check(CLI::Range(0.0, 1048576.0));
  app.add_option("--cycle-ms", cycle_ms, "--what-if: cycle times in ms")
      ->delimiter(',')
      ->check(CLI::Range(0.001, 10000.0));
  app.add_option("--cache", cache, "--what-if: response cache on and/or off")
      ->delimiter(',')
      ->check(CLI::IsMember({"on", "off"}));
  app.add_flag("--with-replay", with_replay,
               "add what-if predictions from the best trial to the model as lower-confidence "
               "observations (exit 1 if none can be made)");
  app.add_option("--replay-sigma", replay_sigma,
                 "--with-replay: the model error trusted for predictions (ln units, 0.15 ~ 15%)")
      ->check(CLI::Range(0.01, 5.0));
  app.footer(
      "Example loop:\n"
      "  ringscope run -np 2 --trace runs/tune/trial0.sqlite -- ./train\n"
      "  ringscope tune runs/tune --write runs/tune/next.json\n"
      "  ringscope run -np 2 --settings runs/tune/next.json --trace runs/tune/trial1.sqlite -- "
      "./train\n"
      "What-if (predict without running):\n"
      "  ringscope tune runs/tune/trial0.sqlite --what-if --threshold-mb 0,8,128 --cycle-ms 1,5");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the usage error
    return code == 0 ? 0 : 2;
  }

  std::vector<TraceGroup> groups;
  Status s = collect_trace_groups(inputs, &groups);
  if (!s.ok()) return fail(s);
  // Neither output may be one of the traces read.
  {
    std::vector<std::string> files;
    for (const TraceGroup& g : groups) files.insert(files.end(), g.files.begin(), g.files.end());
    for (const auto& [path, flag] : {std::pair{json_path, "--json"}, {write_path, "--write"}})
      if (!path.empty())
        if (Status o = refuse_output_over_inputs(path, files, flag); !o.ok()) return fail(o);
  }
  if (what_if_mode && (!write_path.empty() || with_replay)) {
    std::cerr << "ringscope tune: --what-if only predicts; --write and --with-replay belong to "
                 "the tuner (run without --what-if)\n";
    return 2;
  }
  if (what_if_mode)
    return run_what_if(groups, threshold_mb, cycle_ms, cache, score_options, explain, json_path);
  if (!threshold_mb.empty() || !cycle_ms.empty() || !cache.empty()) {
    std::cerr << "ringscope tune: --threshold-mb, --cycle-ms and --cache need --what-if\n";
    return 2;
  }
  LoadedTrials loaded;
  s = load_trials(groups, score_options, skip_bad, &loaded);
  for (const std::string& w : loaded.warnings) std::cerr << "ringscope tune: " << w << "\n";
  if (!s.ok()) return fail(s);

  std::cout << loaded.trials.size() << " trial(s); score = allreduced bytes per second of wall "
            << "time, median over windows\n";
  print_trials(loaded.trials, std::cout);
  Suggestion suggestion;
  std::vector<Observation> observations = observations_of(loaded.trials);
  if (with_replay) {
    s = add_replay_observations(groups, loaded, score_options, replay_sigma, &observations);
    if (!s.ok()) return fail(s);
  }
  s = suggest_next(observations, tuner_options, &suggestion);
  if (!s.ok()) return fail(s);
  if (suggestion.distinct_settings == 1 && loaded.trials.size() > 1)
    std::cout << "note: all " << loaded.trials.size()
              << " trials ran the same settings; they count as repeats of one point\n";
  print_suggestion(suggestion, std::cout);
  if (explain) print_explanation(suggestion, std::cout);

  if (!json_path.empty())
    if (Status w =
            write_file_atomically(json_path, tune_summary_json(loaded.trials, suggestion) + "\n",
                                  "--json file '" + json_path + "'");
        !w.ok())
      return fail(w);
  if (!write_path.empty()) {
    SettingsFile file;
    const Pick pick = pick_name == "best" ? Pick::kBest : Pick::kNext;
    s = make_settings_file(loaded.trials, suggestion, pick, &file);
    if (s.ok()) s = write_settings_file(write_path, file);
    if (!s.ok()) return fail(s);
    std::cout << "wrote " << write_path << " ("
              << (pick == Pick::kBest ? suggestion.recommended : suggestion.next).to_string()
              << "); use it with: ringscope run --settings " << write_path << " ...\n";
  }
  return 0;
}
