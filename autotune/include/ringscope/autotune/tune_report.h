// What ringscope-tune shows and writes: the trials table, the suggestion with
// its expected gain and uncertainty, the model explanation (--explain), the
// settings file (format v1) with provenance, and a JSON summary (--json).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/autotune/trace_score.h"
#include "ringscope/planning/settings_file.h"

namespace ringscope::autotune {

enum class Pick { kNext, kBest };  // EI's next trial, or the best predicted setting

void print_trials(const std::vector<TraceScore>& trials, std::ostream& out);
void print_suggestion(const Suggestion& suggestion, std::ostream& out);
void print_explanation(const Suggestion& suggestion, std::ostream& out);

// "1.23 GB/s" for bytes per second.
std::string format_rate(double bytes_per_second);

// The settings file for `pick`, with provenance: tool, created (UTC), the
// input traces with their settings and scores, the pick, its predicted score
// and expected gain (vs best observed and vs defaults) with uncertainties,
// and the model's hyperparameters.
Status make_settings_file(const std::vector<TraceScore>& trials, const Suggestion& suggestion,
                          Pick pick, SettingsFile* out);

// Machine-readable summary of the trials and the suggestion (one JSON object).
std::string tune_summary_json(const std::vector<TraceScore>& trials, const Suggestion& suggestion);

}  // namespace ringscope::autotune
