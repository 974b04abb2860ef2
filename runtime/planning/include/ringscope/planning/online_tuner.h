// The online tuner as the runtime sees it: fed after every cycle on rank 0
// with the bytes allreduced and the time, it answers with settings to
// propose and records for the trace, and at the end names the best trial.
// The autotune library implements it (ParameterManager: windows, trials,
// GP + EI); the public API wires that implementation into the runtime
// (runtime/api/api.cc), so neither library includes the other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ringscope/types.h"

namespace ringscope {

// What the tuner reports for the trace (the runtime turns each into one
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

class OnlineTuner {
 public:
  virtual ~OnlineTuner() = default;
  // After every cycle: bytes allreduced by the cycle and the time it ended
  // (ns, any monotonic clock). Returns settings to propose when a new trial
  // (or the final choice) starts; appends what happened to `records`.
  virtual std::optional<Settings> on_cycle(int64_t bytes, int64_t now_ns,
                                           std::vector<AutotuneRecord>* records) = 0;
  virtual bool done() const = 0;
  virtual const std::vector<AutotuneTrial>& trials() const = 0;
  // The chosen trial once done(), before that the best so far; -1 while no
  // trial has finished.
  virtual int best_trial() const = 0;
  // The provenance object of the settings file written at the end (JSON).
  virtual std::string provenance_json() const = 0;
};

// Makes the tuner for a run: its options, the settings in force at start
// (trial 0), and whether the run has a response cache (capacity > 0).
using OnlineTunerFactory = std::function<std::unique_ptr<OnlineTuner>(
    const AutotuneOptions& options, const Settings& initial, bool cache_available)>;

}  // namespace ringscope
