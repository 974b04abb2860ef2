// What-if predictions: a recorded run under other settings. Loads and
// calibrates the run once, replays the recorded settings (the anchor) and
// every asked setting through the replay (whatif_replay.h), and presents the
// predictions as a table, JSON, or lower-confidence observations for the
// tuner (`ringscope tune --what-if`, `--with-replay`).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/whatif_replay.h"

namespace ringscope::autotune {

// One what-if prediction. `anchored` scales the raw prediction by
// recorded score / raw prediction at the recorded settings, so the model's
// bias at the point it was calibrated on cancels. A setting whose replay
// failed keeps its row with the error in `status` and no numbers.
struct WhatIfPrediction {
  TuneSettings settings;
  Status status;  // not OK: this setting could not be predicted
  ReplayResult replay;
  double raw_bytes_per_second = 0;
  double anchored_bytes_per_second = 0;
  double vs_recorded = 0;  // anchored / recorded score
};

struct WhatIfReport {
  RecordedRun run;
  CostModel model;
  ReplayResult at_recorded;                   // replay at the recorded settings
  double anchor = 1;                          // recorded / raw prediction at the recorded settings
  std::vector<WhatIfPrediction> predictions;  // in the order asked, best marked by the caller
  size_t predicted() const;                   // predictions whose status is OK
};

// The default grid of `ringscope tune --what-if`: fusion {off, 1, 8, 32, 128,
// 512} MiB x cycle {0.1, 1, 5, 50} ms x cache {on, off} (48 settings).
std::vector<TuneSettings> what_if_grid();

// Loads `inputs`, calibrates, replays the recorded settings and each of
// `settings`. Errors name the trace: loading, calibration, or the replay at
// the recorded settings (the anchor) failed. A failed candidate is not an
// error: its prediction carries the status (see WhatIfPrediction).
Status what_if(const std::vector<std::string>& inputs, const std::vector<TuneSettings>& settings,
               const ReplayOptions& options, WhatIfReport* out);
// The same for a run already loaded (with the same score options).
Status what_if_loaded(RecordedRun run, const std::vector<TuneSettings>& settings,
                      const ReplayOptions& options, WhatIfReport* out);

// The successful predictions as observations for suggest_next (flagged predicted);
// the variance of each is the model error the caller trusts, in ln units
// (e.g. 0.15^2 for 15%), plus the recorded run's own noise.
std::vector<Observation> what_if_observations(const WhatIfReport& report,
                                              double model_log_variance);

// The table `ringscope tune --what-if` prints (with the cost model when
// `explain`), and the same as one JSON object; failed settings are listed
// after the predicted ones as "not predicted: <reason>" (JSON: "error").
void print_what_if(const WhatIfReport& report, bool explain, std::ostream& out);
std::string what_if_json(const WhatIfReport& report);

}  // namespace ringscope::autotune
