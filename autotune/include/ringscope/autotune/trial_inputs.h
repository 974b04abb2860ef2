// From command-line inputs to scored trials: resolve each input (merged file,
// per-rank files, trace base path, or a directory of runs) into one file set
// per run, score every run, and drop duplicate runs (same run_id).
#pragma once

#include <string>
#include <vector>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/trace_score.h"
#include "ringscope/status.h"

namespace ringscope::autotune {

// The files of one recorded run, as TraceReader::open takes them.
struct TraceGroup {
  std::string label;               // merged file or base path ("runs/a.sqlite")
  std::vector<std::string> files;  // one merged file, per-rank files, or the base path
};

// Directories are scanned (not recursively) for *.sqlite files; per-rank
// files <base>.rank<N>.sqlite are grouped by base; a merged <base>.sqlite next
// to its per-rank files replaces them. Per-rank files named on the command
// line are grouped the same way. Errors: an input that is no file, no
// directory and no base path of per-rank files; no trace at all.
Status collect_trace_groups(const std::vector<std::string>& inputs,
                            std::vector<TraceGroup>* groups);

struct LoadedTrials {
  std::vector<TraceScore> trials;     // in input order
  std::vector<std::string> warnings;  // skipped traces and duplicates
};

// Scores every group. A trace that cannot be read or scored is an error
// naming it, unless skip_bad (then a warning). Runs whose run_id was already
// loaded are dropped with a warning. No trial left: an error.
Status load_trials(const std::vector<TraceGroup>& groups, const ScoreOptions& options,
                   bool skip_bad, LoadedTrials* out);

// Observations for the tuner, one per trial.
std::vector<Observation> observations_of(const std::vector<TraceScore>& trials);

}  // namespace ringscope::autotune
