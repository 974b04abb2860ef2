// ringscope-tune (`ringscope tune`): reads recorded runs, scores each one,
// fits the Gaussian-process model and suggests the next settings; --write
// saves them as a settings file for `ringscope run --settings`.
// Exit codes: 0 success, 1 a trace or the model failed, 2 bad usage.
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/trial_inputs.h"
#include "ringscope/autotune/tune_report.h"
#include "settings_file.h"

using namespace ringscope;
using namespace ringscope::autotune;

namespace {

int fail(const Status& s) {
  std::cerr << "ringscope tune: " << s.to_string() << "\n";
  return 1;
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
  app.footer(
      "Example loop:\n"
      "  ringscope run -np 2 --trace runs/tune/trial0.sqlite -- ./train\n"
      "  ringscope tune runs/tune --write runs/tune/next.json\n"
      "  ringscope run -np 2 --settings runs/tune/next.json --trace runs/tune/trial1.sqlite -- "
      "./train");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help or the usage error
    return code == 0 ? 0 : 2;
  }

  std::vector<TraceGroup> groups;
  Status s = collect_trace_groups(inputs, &groups);
  if (!s.ok()) return fail(s);
  LoadedTrials loaded;
  s = load_trials(groups, score_options, skip_bad, &loaded);
  for (const std::string& w : loaded.warnings) std::cerr << "ringscope tune: " << w << "\n";
  if (!s.ok()) return fail(s);

  std::cout << loaded.trials.size() << " trial(s); score = allreduced bytes per second of wall "
            << "time, median over windows\n";
  print_trials(loaded.trials, std::cout);
  Suggestion suggestion;
  s = suggest_next(observations_of(loaded.trials), tuner_options, &suggestion);
  if (!s.ok()) return fail(s);
  if (suggestion.distinct_settings == 1 && loaded.trials.size() > 1)
    std::cout << "note: all " << loaded.trials.size()
              << " trials ran the same settings; they count as repeats of one point\n";
  print_suggestion(suggestion, std::cout);
  if (explain) print_explanation(suggestion, std::cout);

  if (!json_path.empty()) {
    std::ofstream json(json_path);
    json << tune_summary_json(loaded.trials, suggestion) << "\n";
    if (!json) return fail(Status(StatusCode::kIoError, "cannot write '" + json_path + "'"));
  }
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
