// ParameterManager: the online autotuner's brain on rank 0, the autotune
// library's OnlineTuner. Fed after every cycle with (bytes allreduced,
// time), it measures allreduced bytes/s over sampling windows, runs trials
// chosen by the GP + EI (bayes_tuner.h), and settles on the best setting.
// No MPI, no clock of its own (tests fake time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringscope/autotune/search_space.h"
#include "ringscope/planning/online_tuner.h"

namespace ringscope {

class ParameterManager final : public OnlineTuner {
 public:
  // `initial`: the settings in force at start (trial 0). `cache_available`:
  // false when the run has no response cache (capacity 0): cache-on
  // suggestions then run (and are recorded) with the cache off.
  ParameterManager(const AutotuneOptions& options, const Settings& initial, bool cache_available);

  // After every cycle: bytes allreduced by the cycle and the time it ended
  // (ns, any monotonic clock). Returns settings to propose when a new trial
  // (or the final choice) starts; appends what happened to `records`.
  std::optional<Settings> on_cycle(int64_t bytes, int64_t now_ns,
                                   std::vector<AutotuneRecord>* records) override;

  bool done() const override { return phase_ == Phase::kDone; }
  const std::vector<AutotuneTrial>& trials() const override { return trials_; }
  // The chosen trial once done(), before that the best so far (highest
  // median); -1 while no trial has finished.
  int best_trial() const override;
  // Why the search stopped ("converged: ..." or "trial limit ...").
  const std::string& stop_reason() const { return stop_reason_; }
  // The provenance object of the settings file written at shutdown (JSON).
  std::string provenance_json() const override;

 private:
  enum class Phase { kWarmup, kSettle, kMeasure, kDone };
  void close_window(int64_t now_ns, std::vector<AutotuneRecord>* records,
                    std::optional<Settings>* propose);
  void finish_trial(int64_t now_ns, std::vector<AutotuneRecord>* records,
                    std::optional<Settings>* propose);
  Settings choose_next(std::string* why);
  void start_trial(const Settings& settings, std::optional<Settings>* propose);

  const AutotuneOptions options_;
  const Settings initial_;
  const bool cache_available_;
  Phase phase_ = Phase::kWarmup;
  int warmup_left_;
  Settings current_;  // settings of the trial being measured
  std::vector<double> current_windows_;
  std::vector<int64_t> current_window_bytes_;
  int64_t trial_start_ns_ = -1;
  int64_t tuning_start_ns_ = -1;  // start of trial 0's first measured window
  int64_t trial_bytes_ = 0;
  // The open window: starts at the end of a cycle; closes at the end of the
  // first cycle with work once window_ms passed and kMinWorkCycles ran.
  int64_t window_start_ns_ = -1;
  int64_t window_bytes_ = 0;
  int window_work_cycles_ = 0;
  std::vector<AutotuneTrial> trials_;
  std::vector<Settings> queued_;  // trials chosen before the model runs
  int chosen_trial_ = -1;
  std::string stop_reason_;
};

// Makes a ParameterManager: what the public API hands the runtime.
OnlineTunerFactory parameter_manager_factory();

// Conversions between the runtime's and the autotune library's settings.
autotune::TuneSettings to_tune_settings(const Settings& settings);
Settings from_tune_settings(const autotune::TuneSettings& settings);

}  // namespace ringscope
