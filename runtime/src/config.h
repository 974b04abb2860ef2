// Parsing of RINGSCOPE_* / HOROVOD_* environment variables into Options.
// Each parser names the variable and the accepted range in its error.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ringscope/ringscope.h"

namespace ringscope {

// Looks a variable up; injectable so tests need not touch the real env.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_env();

Status options_from_env(const EnvLookup& env, Options* out);

// HOROVOD_TIMELINE names Horovod's JSON file; ringscope writes its SQLite
// trace at trace_base_for_horovod_timeline (settings_file.h) instead.
// What rank 0 says at init when HOROVOD_TIMELINE chose the trace (ours unset).
std::optional<std::string> horovod_timeline_note(const EnvLookup& env);

// For each RINGSCOPE_* name among `names` (the environment's) that nothing in
// ringscope reads, a warning naming it and the closest known name
// ("RINGSCOPE_CYCLE_TIME_MS is not a ringscope variable; did you mean
// RINGSCOPE_CYCLE_TIME?"): a misspelt variable is otherwise ignored silently.
std::vector<std::string> unknown_variable_warnings(const std::vector<std::string>& names);
// The names of the process's environment variables.
std::vector<std::string> environment_names();

// Strict number parsing: the whole string must be a number within range.
Status parse_int(const std::string& var, const std::string& text, int64_t lo, int64_t hi,
                 int64_t* out);
Status parse_double(const std::string& var, const std::string& text, double lo, double hi,
                    double* out);
// 1/true or 0/false (empty = false).
Status parse_bool(const std::string& var, const std::string& text, bool* out);

}  // namespace ringscope
