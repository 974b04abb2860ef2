// Trials of online autotuning read back from a trace: rank 0's AUTOTUNE_TRIAL
// window spans (step >= 0, aux = trial id) grouped per trial, with the
// settings in force at each trial's first window, summarised like the
// offline scorer summarises step windows (median, MAD, ln-score noise).
#pragma once

#include <string>
#include <vector>

#include "ringscope/autotune/trace_score.h"
#include "ringscope/status.h"
#include "ringscope/trace_reader.h"

namespace ringscope::view {

// One TraceScore per online trial with at least options.min_windows measured
// windows (source "<source> (online trial N)"); trials with fewer windows
// (the run ended during them) are skipped with a note in *notes. No
// AUTOTUNE_TRIAL windows: *out stays empty. kShutdown: options.cancel was set
// during the scan.
Status read_online_trials(const TraceReader& reader, const std::string& source,
                          const autotune::ScoreOptions& options,
                          std::vector<autotune::TraceScore>* out, std::vector<std::string>* notes);

}  // namespace ringscope::view
