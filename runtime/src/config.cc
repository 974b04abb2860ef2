// Environment configuration. Our RINGSCOPE_* variables win; Horovod's
// (HOROVOD_FUSION_THRESHOLD, _CYCLE_TIME, _CACHE_CAPACITY, _TIMELINE,
// _STALL_*, _LOG_LEVEL, _AUTOTUNE, _HIERARCHICAL_ALLREDUCE) are honoured when
// ours are unset, so existing job scripts keep working.
#include "config.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "ringscope/trace_schema.h"
#include "ringscope/planning/settings_file.h"
#include "ringscope/text_format.h"

namespace ringscope {

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Status parse_int(const std::string& var, const std::string& text, int64_t lo, int64_t hi,
                 int64_t* out) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi)
    return Status(StatusCode::kInvalidArgument,
                  var + "='" + text + "' is invalid: expected an integer in [" +
                      std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *out = v;
  return Status::OK();
}

Status parse_double(const std::string& var, const std::string& text, double lo, double hi,
                    double* out) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  // ERANGE also marks an underflow ("1e-320"): a tiny number, not an error.
  const bool underflow = errno == ERANGE && std::fabs(v) <= DBL_MIN;
  if (text.empty() || (errno != 0 && !underflow) || *end != '\0' || !std::isfinite(v) || v < lo ||
      v > hi) {
    return Status(StatusCode::kInvalidArgument,
                  var + "='" + text + "' is invalid: expected a number in [" + format_number(lo) +
                      ", " + format_number(hi) + "]");
  }
  *out = v;
  return Status::OK();
}

Status parse_bool(const std::string& var, const std::string& text, bool* out) {
  if (text == "1" || text == "true") {
    *out = true;
  } else if (text == "0" || text == "false" || text.empty()) {
    *out = false;
  } else {
    return Status(StatusCode::kInvalidArgument,
                  var + "='" + text + "' is invalid: expected 1/true or 0/false");
  }
  return Status::OK();
}

static Status parse_horovod_log_level(const std::string& text, int* out) {
  if (std::optional<int> level = horovod_log_level(text)) {
    *out = *level;
    return Status::OK();
  }
  return Status(StatusCode::kInvalidArgument,
                "HOROVOD_LOG_LEVEL='" + text +
                    "' is invalid: expected trace, debug, info, warning, error or fatal");
}

namespace {

// Every RINGSCOPE_* variable something in ringscope reads: the runtime (this
// file), the launcher, the Python package, the viewer, the benches and
// tests, the build.
constexpr const char* kKnownVariables[] = {
    "RINGSCOPE_FUSION_THRESHOLD", "RINGSCOPE_CYCLE_TIME", "RINGSCOPE_CACHE_CAPACITY",
    "RINGSCOPE_STALL_CHECK_SECONDS", "RINGSCOPE_STALL_SHUTDOWN_SECONDS",
    "RINGSCOPE_OP_TIMEOUT_SECONDS", "RINGSCOPE_STRAGGLER_WINDOW_SECONDS",
    "RINGSCOPE_STRAGGLER_DOMINANCE", "RINGSCOPE_STRAGGLER_MIN_SHARE", "RINGSCOPE_CPU_ALLREDUCE", "RINGSCOPE_SHARED_MEMORY",
    "RINGSCOPE_DATA_THREADS", "RINGSCOPE_HIERARCHICAL_ALLREDUCE", "RINGSCOPE_LOG_LEVEL",
    "RINGSCOPE_TRACE", "RINGSCOPE_TRACE_MAX_MB", "RINGSCOPE_FLIGHT_RECORDER",
    "RINGSCOPE_FLIGHT_RECORDER_DIR", "RINGSCOPE_ABORT_ON_FAILURE", "RINGSCOPE_AUTOTUNE", "RINGSCOPE_AUTOTUNE_OUTPUT",
    "RINGSCOPE_AUTOTUNE_WINDOW_MS", "RINGSCOPE_AUTOTUNE_WARMUP_WINDOWS",
    "RINGSCOPE_AUTOTUNE_WINDOWS_PER_TRIAL", "RINGSCOPE_AUTOTUNE_MAX_TRIALS",
    // launcher, Python, viewer
    "RINGSCOPE_SETTINGS", "RINGSCOPE_RUN_KILL_AFTER_SECONDS", "RINGSCOPE_TF_OPS_LIBRARY",
    "RINGSCOPE_COLLECTIVE_GRADIENTS",
    "RINGSCOPE_PYTHON", "RINGSCOPE_VIEW_CONFIG_DIR", "RINGSCOPE_VIEW_BIN", "RINGSCOPE_TRIAL_TRACE",
    "RINGSCOPE_TRIAL_SETTINGS", "RINGSCOPE_TRIAL_DIR", "RINGSCOPE_TRIAL_BIN",
    "RINGSCOPE_TOPOLOGY_GETTER", "RINGSCOPE_TOPOLOGY_OP", "RINGSCOPE_CUDA_PROBLEM",
    // benches, tests, build
    "RINGSCOPE_BENCH_MPIRUN", "RINGSCOPE_TYPES", "RINGSCOPE_PY_OUT", "RINGSCOPE_FUZZ",
    "RINGSCOPE_VIEWER_TEST_SHOTS", "RINGSCOPE_TWO_HOSTS_LOCK", "RINGSCOPE_TEST_HOSTS",
    "RINGSCOPE_TEST_AGREE",
    "RINGSCOPE_TRACE_TOOL", "RINGSCOPE_WITH_CUDA", "RINGSCOPE_CUDA_ARCHITECTURES",
    "RINGSCOPE_BUILD_VIEWER", "RINGSCOPE_BUILD_TESTS", "RINGSCOPE_BUILD_BENCH"};

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> unknown_variable_warnings(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    if (name.rfind("RINGSCOPE_", 0) != 0) continue;
    const std::string* closest = nullptr;
    size_t best = SIZE_MAX;
    std::string known_name;
    bool known = false;
    for (const char* k : kKnownVariables) {
      if (name == k) {
        known = true;
        break;
      }
      const size_t d = edit_distance(name, k);
      if (d < best) best = d, known_name = k, closest = &known_name;
    }
    if (known) continue;
    std::string warning = name + " is set but is not a ringscope variable (it is ignored)";
    if (closest && best <= 6) warning += "; did you mean " + *closest + "?";
    out.push_back(warning + " See docs/configuration.md.");
  }
  return out;
}

std::vector<std::string> environment_names() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) names.emplace_back(*e, static_cast<size_t>(eq - *e));
  }
  return names;
}

std::optional<std::string> horovod_timeline_note(const EnvLookup& env) {
  auto timeline = env("HOROVOD_TIMELINE");
  if (env("RINGSCOPE_TRACE") || !timeline || timeline->empty()) return std::nullopt;
  const std::string base = trace_base_for_horovod_timeline(*timeline);
  return "HOROVOD_TIMELINE=" + *timeline + ": ringscope writes its SQLite trace, " +
         per_rank_trace_path(base, 0) + " and one per rank beside it, not Horovod's JSON; " +
         "`ringscope view " + base + "` shows it, `ringscope trace export --chrome` writes JSON";
}

// RINGSCOPE_AUTOTUNE and its knobs (docs/configuration.md). The knobs are
// checked even when autotuning is off, so a typo fails at once.
static Status autotune_options_from_env(const EnvLookup& env, AutotuneOptions* out) {
  AutotuneOptions a = *out;
  Status s;
  if (auto v = env("RINGSCOPE_AUTOTUNE")) {
    s = parse_bool("RINGSCOPE_AUTOTUNE", *v, &a.enabled);
  } else if (auto h = env("HOROVOD_AUTOTUNE")) {
    s = parse_bool("HOROVOD_AUTOTUNE", *h, &a.enabled);
  }
  if (!s.ok()) return s;
  if (auto v = env("RINGSCOPE_AUTOTUNE_WINDOW_MS")) {
    s = parse_double("RINGSCOPE_AUTOTUNE_WINDOW_MS", *v, 1.0, 600000.0, &a.window_ms);
    if (!s.ok()) return s;
  }
  int64_t n = 0;
  struct IntKnob {
    const char* var;
    int64_t lo, hi;
    int* field;
  };
  for (IntKnob k : {IntKnob{"RINGSCOPE_AUTOTUNE_WARMUP_WINDOWS", 0, 1000, &a.warmup_windows},
                    IntKnob{"RINGSCOPE_AUTOTUNE_WINDOWS_PER_TRIAL", 2, 100, &a.windows_per_trial},
                    IntKnob{"RINGSCOPE_AUTOTUNE_MAX_TRIALS", 2, 1000, &a.max_trials}}) {
    if (auto v = env(k.var)) {
      s = parse_int(k.var, *v, k.lo, k.hi, &n);
      if (!s.ok()) return s;
      *k.field = static_cast<int>(n);
    }
  }
  if (auto v = env("RINGSCOPE_AUTOTUNE_OUTPUT")) a.output_path = *v;
  *out = a;
  return Status::OK();
}

Status options_from_env(const EnvLookup& env, Options* out) {
  Options o = *out;
  // First of `names` that is set.
  auto first = [&](std::initializer_list<const char*> names)
      -> std::optional<std::pair<std::string, std::string>> {
    for (const char* n : names)
      if (auto v = env(n)) return std::make_pair(std::string(n), *v);
    return std::nullopt;
  };
  Status s;
  if (auto v = first({"RINGSCOPE_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD"})) {
    s = parse_int(v->first, v->second, 0, int64_t{1} << 40, &o.settings.fusion_threshold_bytes);
    if (!s.ok()) return s;
  }
  if (auto v = first({"RINGSCOPE_CYCLE_TIME", "HOROVOD_CYCLE_TIME"})) {
    s = parse_double(v->first, v->second, 0.0, 10000.0, &o.settings.cycle_time_ms);
    if (!s.ok()) return s;
  }
  if (auto v = first({"RINGSCOPE_CACHE_CAPACITY", "HOROVOD_CACHE_CAPACITY"})) {
    s = parse_int(v->first, v->second, 0, 1 << 20, &o.cache_capacity);
    if (!s.ok()) return s;
    o.settings.cache_enabled = o.cache_capacity > 0;
  }
  // Ours wins; among Horovod's, HOROVOD_STALL_CHECK_DISABLE=1 wins over
  // HOROVOD_STALL_CHECK_TIME_SECONDS, as in Horovod.
  bool horovod_disable = false;
  if (auto d = env("HOROVOD_STALL_CHECK_DISABLE"); d && !env("RINGSCOPE_STALL_CHECK_SECONDS")) {
    s = parse_bool("HOROVOD_STALL_CHECK_DISABLE", *d, &horovod_disable);
    if (!s.ok()) return s;
  }
  if (horovod_disable) {
    o.stall_check_seconds = 0;
  } else if (auto v =
                 first({"RINGSCOPE_STALL_CHECK_SECONDS", "HOROVOD_STALL_CHECK_TIME_SECONDS"})) {
    s = parse_double(v->first, v->second, 0.0, 1e6, &o.stall_check_seconds);
    if (!s.ok()) return s;
  }
  if (auto v = first({"RINGSCOPE_STALL_SHUTDOWN_SECONDS", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS"})) {
    s = parse_double(v->first, v->second, 0.0, 1e6, &o.stall_shutdown_seconds);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_OP_TIMEOUT_SECONDS")) {
    s = parse_double("RINGSCOPE_OP_TIMEOUT_SECONDS", *v, 0.1, 1e6, &o.op_timeout_seconds);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_STRAGGLER_WINDOW_SECONDS")) {
    s = parse_double("RINGSCOPE_STRAGGLER_WINDOW_SECONDS", *v, 0.0, 1e6,
                     &o.straggler_window_seconds);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_STRAGGLER_DOMINANCE")) {
    s = parse_double("RINGSCOPE_STRAGGLER_DOMINANCE", *v, 0.0, 1.0, &o.straggler_dominance);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_STRAGGLER_MIN_SHARE")) {
    s = parse_double("RINGSCOPE_STRAGGLER_MIN_SHARE", *v, 0.0, 1.0, &o.straggler_min_share);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_CPU_ALLREDUCE")) {
    if (*v == "auto") {
      o.cpu_allreduce = CpuAllreduce::kAuto;
    } else if (*v == "ring") {
      o.cpu_allreduce = CpuAllreduce::kRing;
    } else if (*v == "mpi") {
      o.cpu_allreduce = CpuAllreduce::kMpi;
    } else {
      return Status(
          StatusCode::kInvalidArgument,
          "RINGSCOPE_CPU_ALLREDUCE='" + *v + "' is invalid: expected 'auto', 'ring' or 'mpi'");
    }
  }
  if (auto v = env("RINGSCOPE_SHARED_MEMORY")) {
    s = parse_bool("RINGSCOPE_SHARED_MEMORY", *v, &o.shared_memory);  // "" is 0, as elsewhere
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_DATA_THREADS")) {
    int64_t threads = 0;
    s = parse_int("RINGSCOPE_DATA_THREADS", *v, 0, 64, &threads);
    if (!s.ok()) return s;
    o.data_threads = static_cast<int>(threads);
  }
  if (auto v = first({"RINGSCOPE_HIERARCHICAL_ALLREDUCE", "HOROVOD_HIERARCHICAL_ALLREDUCE"})) {
    s = parse_bool(v->first, v->second, &o.hierarchical_allreduce);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_LOG_LEVEL")) {
    // 0..3, or Horovod's names as `ringscope run --log-level` takes them.
    int64_t level = 0;
    if (std::optional<int> named = horovod_log_level(*v)) {
      o.log_level = *named;
    } else if (parse_int("RINGSCOPE_LOG_LEVEL", *v, 0, 3, &level).ok()) {
      o.log_level = static_cast<int>(level);
    } else {
      return Status(StatusCode::kInvalidArgument,
                    "RINGSCOPE_LOG_LEVEL='" + *v +
                        "' is invalid: expected an integer in [0, 3] or trace, debug, info, "
                        "warning, error, fatal");
    }
  } else if (auto h = env("HOROVOD_LOG_LEVEL")) {
    s = parse_horovod_log_level(*h, &o.log_level);
    if (!s.ok()) return s;
  }
  if (auto v = env("RINGSCOPE_TRACE")) {
    o.trace_path = *v;
  } else if (auto h = env("HOROVOD_TIMELINE"); h && !h->empty() && *h != "DYNAMIC") {
    // DYNAMIC is Horovod's "no trace at init; start_timeline() starts one".
    o.trace_path = trace_base_for_horovod_timeline(*h);
  }
  if (auto v = env("RINGSCOPE_TRACE_MAX_MB")) {
    int64_t mib = 0;
    s = parse_int("RINGSCOPE_TRACE_MAX_MB", *v, 0, int64_t{1} << 24, &mib);  // up to 16 TiB
    if (!s.ok()) return s;
    o.trace_max_bytes = mib << 20;
  }
  if (auto v = env("RINGSCOPE_FLIGHT_RECORDER")) {
    int64_t mib = 0;
    s = parse_int("RINGSCOPE_FLIGHT_RECORDER", *v, 0, int64_t{1} << 16, &mib);  // up to 64 GiB
    if (!s.ok()) return s;
    o.flight_recorder_bytes = mib << 20;
  }
  if (auto v = env("RINGSCOPE_FLIGHT_RECORDER_DIR")) o.flight_recorder_dir = *v;
  if (auto v = env("RINGSCOPE_ABORT_ON_FAILURE")) {
    int64_t on = 1;
    s = parse_int("RINGSCOPE_ABORT_ON_FAILURE", *v, 0, 1, &on);
    if (!s.ok()) return s;
    o.abort_on_failure = on != 0;
  }
  s = autotune_options_from_env(env, &o.autotune);
  if (!s.ok()) return s;
  *out = o;
  return Status::OK();
}

Status Options::from_env(Options* out) { return options_from_env(process_env(), out); }

}  // namespace ringscope
