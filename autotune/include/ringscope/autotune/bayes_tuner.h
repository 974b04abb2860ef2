// One step of Bayesian optimisation over the search space: fit the GP to the
// observed trials (ln bytes/s with measured noise), maximise expected
// improvement over the candidate grid, and compare the suggestion with the
// best observed trial and with the runtime defaults (always scored).
#pragma once

#include <string>
#include <vector>

#include "ringscope/autotune/gaussian_process.h"
#include "ringscope/autotune/search_space.h"
#include "ringscope/status.h"

namespace ringscope::autotune {

struct Observation {
  TuneSettings settings;
  double log_score = 0;           // ln(bytes per second)
  double log_score_variance = 0;  // measured noise of log_score
  // A what-if replay prediction, not a measurement: it informs the model but
  // is never the "best observed" trial nor counts the defaults as tried.
  bool predicted = false;
};

// Posterior of ln(bytes/s) at one setting.
struct Prediction {
  double mean = 0, stddev = 0;
};

// A log-space difference between two predictions and its uncertainty
// (correlation through the GP included). ratio() = exp(log_gain).
struct Gain {
  double log_gain = 0, stddev = 0;
  double percent() const;         // 100 (exp(log_gain) - 1)
  double percent_stddev() const;  // 100 (exp(stddev) - 1)
};

struct TunerOptions {
  double xi = 0.01;  // EI margin in ln units (1%)
  // The defaults are suggested while untried if their EI is at least this
  // fraction of the maximum: known-good settings first when EI cannot tell.
  double default_preference = 0.85;
  double converged_below = 0.003;  // max EI under this (ln units, ~0.3%): converged
  bool fit_hyperparameters = true;
  // False where the run has no response cache (capacity 0): the knob does
  // nothing, so every setting, candidate and the defaults count with the
  // cache off, and settings differing only there are one point.
  bool cache_tunable = true;
};

struct Suggestion {
  TuneSettings next;  // the next trial: argmax EI (or the defaults, see above)
  Prediction next_prediction;
  double expected_improvement = 0;  // ln units
  TuneSettings best_observed;       // observed setting with the highest posterior mean
  Prediction best_observed_prediction;
  Prediction default_prediction;
  Gain gain_vs_best, gain_vs_default;  // of `next`
  // Exploitation: the highest posterior mean among observed settings and the defaults.
  TuneSettings recommended;
  Prediction recommended_prediction;
  Gain recommended_vs_default, recommended_vs_best;
  bool default_observed = false;
  bool exploratory = false;  // few trials, or chosen for uncertainty not for mean
  bool converged = false;    // max EI below converged_below: next == recommended
  int distinct_settings = 0;
  std::string why;                 // one line: why `next`
  std::vector<std::string> notes;  // warnings (e.g. predicted worse than the defaults)
  GpFitReport model;
};

// Needs at least one observation; errors are kInvalidArgument.
Status suggest_next(const std::vector<Observation>& observations, const TunerOptions& options,
                    Suggestion* out);

}  // namespace ringscope::autotune
