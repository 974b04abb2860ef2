// What-if replay: runs one recorded run's submissions through the runtime's
// own negotiation (Coordinator, ResponseCache) and fusion planning
// (plan_fusion) under other settings, with a calibrated cost model standing
// in for the wire, and scores the predicted allreduces and STEP marks with
// the tuner's scorer. No MPI: one process simulates every rank.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/cost_model.h"
#include "ringscope/autotune/recorded_run.h"
#include "ringscope/autotune/search_space.h"
#include "ringscope/autotune/trace_score.h"

namespace ringscope::autotune {

struct ReplayOptions {
  // How predicted events are scored (as the recorded run). The loop's timing
  // constants (kBurstQuiet, doorbell_poll, idle_period) are the runtime's
  // own, from runtime/src/cycle_timing.h.
  ScoreOptions score;
  bool keep_groups = false;  // fill ReplayResult::groups (tests, --explain)
  int64_t max_cycles = 20'000'000;
};

// One executed collective of the replay.
struct ReplayGroup {
  int64_t cycle = 0;
  std::vector<std::string> members;  // tensor names, in buffer order
  int64_t bytes = 0;
  bool from_cache = false;  // every member came from the fast path
  int64_t end_ns = 0;       // end of the collective (rank 0's clock)
};

struct ReplayResult {
  TuneSettings settings;
  int64_t cycles = 0;       // all cycles, empty ones included
  int64_t work_cycles = 0;  // cycles that ran responses
  int64_t slow_cycles = 0;  // cycles that used the coordinator
  int64_t collectives = 0;  // executed groups
  int64_t responses = 0;
  int64_t unfinished = 0;           // submissions never answered (ranks disagree)
  std::vector<ReplayGroup> groups;  // with keep_groups
  std::vector<CollectiveEnd> ends;  // predicted allreduce ends (lowest rank)
  std::vector<int64_t> marks;       // predicted STEP marks (lowest rank)
  TraceScore score;                 // the predicted score
  std::vector<std::string> notes;
};

// Replays `run` under `settings`. Errors (kInvalidArgument): the predicted
// events give too few windows to score; the cycle limit was reached.
Status replay_run(const RecordedRun& run, const CostModel& model, const TuneSettings& settings,
                  const ReplayOptions& options, ReplayResult* out);

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
