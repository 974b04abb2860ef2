// ParameterManager: the online autotuner's brain on rank 0. Fed after every
// cycle with (bytes allreduced, time), it measures allreduced bytes/s over
// sampling windows, runs trials chosen by the autotune library's GP + EI, and
// settles on the best setting. No MPI, no clock of its own (tests fake time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringscope/ringscope.h"

namespace ringscope::autotune {
struct TuneSettings;  // ringscope/autotune/search_space.h (linked privately)
}

namespace ringscope {

// What the manager reports for the trace (the runtime turns each into one
// kAutotuneTrial span; docs/autotune.md "Online mode" lists the fields).
struct AutotuneRecord {
  enum class Kind { kWindow, kTrial, kDecision };
  Kind kind = Kind::kWindow;
  int trial = 0;         // trial id (kDecision: the chosen trial)
  int window = -1;       // kWindow: index of the measured window in its trial
  int64_t start_ns = 0;  // on the caller's clock
  int64_t end_ns = 0;
  int64_t bytes = 0;            // bytes allreduced inside the span
  double bytes_per_second = 0;  // kWindow: the window; kTrial/kDecision: the median
  std::string text;             // kTrial/kDecision: settings, spread, why (human-readable)
};

// One finished trial: the settings and its measured windows.
struct AutotuneTrial {
  int id = 0;
  Settings settings;
  std::vector<double> window_scores;  // bytes/s of each measured window
  double median = 0;                  // bytes/s
  double mad = 0;  // median absolute deviation of the windows x 1.4826 (a sigma, as offline)
  double log_variance = 0;  // noise of ln(median) given to the GP
};

class ParameterManager {
 public:
  // `initial`: the settings in force at start (trial 0). `cache_available`:
  // false when the run has no response cache (capacity 0): cache-on
  // suggestions then run (and are recorded) with the cache off.
  ParameterManager(const AutotuneOptions& options, const Settings& initial, bool cache_available);

  // After every cycle: bytes allreduced by the cycle and the time it ended
  // (ns, any monotonic clock). Returns settings to propose when a new trial
  // (or the final choice) starts; appends what happened to `records`.
  std::optional<Settings> on_cycle(int64_t bytes, int64_t now_ns,
                                   std::vector<AutotuneRecord>* records);

  bool done() const { return phase_ == Phase::kDone; }
  const std::vector<AutotuneTrial>& trials() const { return trials_; }
  // The chosen trial once done(), before that the best so far (highest
  // median); -1 while no trial has finished.
  int best_trial() const;
  // Why the search stopped ("converged: ..." or "trial limit ...").
  const std::string& stop_reason() const { return stop_reason_; }
  // The provenance object of the settings file written at shutdown (JSON).
  std::string provenance_json() const;

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

// Conversions between the runtime's and the autotune library's settings.
autotune::TuneSettings to_tune_settings(const Settings& settings);
Settings from_tune_settings(const autotune::TuneSettings& settings);
std::string describe_settings(const Settings& settings);

}  // namespace ringscope
