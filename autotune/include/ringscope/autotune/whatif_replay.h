// What-if replay: runs one recorded run's submissions through the runtime's
// own negotiation (Coordinator, ResponseCache) and fusion planning
// (plan_fusion) under other settings, with a calibrated cost model standing
// in for the wire, and scores the predicted allreduces and STEP marks with
// the tuner's scorer. No MPI: one process simulates every rank.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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

}  // namespace ringscope::autotune
