// Validation of `ringscope run` options and construction of the ranks'
// environment and of mpirun's argument vector (see launch_plan.h).
#include "launch_plan.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <tuple>

#include "ringscope/planning/settings_file.h"
#include "shell_words.h"

namespace ringscope {
namespace {

constexpr int64_t kMaxRanks = int64_t{1} << 20;
constexpr double kMaxFusionThresholdMb = double(kMaxFusionThresholdBytes) / (1024.0 * 1024.0);

Status invalid_flag(const std::string& flag, const std::string& text, const std::string& want) {
  return Status(StatusCode::kInvalidArgument,
                flag + " '" + text + "' is invalid: expected " + want);
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// Overwrites NAME's value in `assignments` or appends NAME=VALUE.
void assign(std::vector<EnvAssignment>* assignments, const std::string& name,
            const std::string& value) {
  for (EnvAssignment& a : *assignments) {
    if (a.first == name) {
      a.second = value;
      return;
    }
  }
  assignments->emplace_back(name, value);
}

bool binds_itself(const std::vector<std::string>& mpi_args) {
  for (const std::string& arg : mpi_args)
    if (arg == "--bind-to" || arg == "-bind-to" || starts_with(arg, "--bind-to=")) return true;
  return false;
}

// --log-level: 0..3, or horovodrun's names (any case).
Status parse_log_level(const std::string& text, int* out) {
  int64_t level = 0;
  if (parse_flag_int("--log-level", text, 0, 3, &level).ok()) {
    *out = static_cast<int>(level);
    return Status::OK();
  }
  if (std::optional<int> named = horovod_log_level(text)) {
    *out = *named;
    return Status::OK();
  }
  return invalid_flag("--log-level", text,
                      "an integer in [0, 3] or trace, debug, info, warning, error, fatal");
}

// A comma-separated list of names without blanks (interfaces).
bool is_name_list(const std::string& text) {
  if (text.empty() || text.front() == ',' || text.back() == ',' ||
      text.find(",,") != std::string::npos)
    return false;
  return std::none_of(text.begin(), text.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == '\'' || c == '"';
  });
}

}  // namespace

Status horovodrun_mpirun_words(const LaunchOptions& options, std::vector<std::string>* words) {
  std::vector<std::string> out;
  if (options.output_filename) {
    if (options.output_filename->empty())
      return Status(StatusCode::kInvalidArgument, "--output-filename needs a directory");
    out.insert(out.end(), {"--output-filename", *options.output_filename});
  }
  if (options.network_interfaces) {
    const std::string& nics = *options.network_interfaces;
    if (!is_name_list(nics))
      return invalid_flag("--network-interfaces", nics,
                          "interface names separated by commas, e.g. eth0 or eth0,ib0");
    out.insert(out.end(),
               {"--mca", "btl_tcp_if_include", nics, "--mca", "oob_tcp_if_include", nics});
  }
  std::string rsh_args;
  if (options.ssh_port) {
    int64_t port = 0;
    Status s = parse_flag_int("--ssh-port", *options.ssh_port, 1, 65535, &port);
    if (!s.ok()) return s;
    rsh_args = "-p " + std::to_string(port);
  }
  if (options.ssh_identity_file) {
    const std::string& file = *options.ssh_identity_file;
    // Open MPI splits plm_rsh_args at blanks, without quotes.
    if (!is_name_list(file) || file.find(',') != std::string::npos)
      return invalid_flag("--ssh-identity-file", file, "a path without blanks or quotes");
    std::ifstream in(file);
    if (!in || std::filesystem::is_directory(file))
      return Status(StatusCode::kIoError, "--ssh-identity-file '" + file + "' cannot be read");
    // Absolute: Open MPI's daemons may start further daemons from other
    // nodes (tree spawn), whose ssh would look for a relative key there.
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
    const std::string full = absolute.lexically_normal().string();
    // (A folder with blanks keeps the path as given: Open MPI splits at them.)
    rsh_args += (rsh_args.empty() ? "" : " ") + std::string("-i ") +
                (ec || full.find(' ') != std::string::npos ? file : full);
  }
  if (!rsh_args.empty()) out.insert(out.end(), {"--mca", "plm_rsh_args", rsh_args});
  *words = std::move(out);
  return Status::OK();
}

Status parse_flag_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi,
                      int64_t* out) {
  std::string want = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0' || v < lo || v > hi)
    return invalid_flag(flag, text, want);
  *out = v;
  return Status::OK();
}

Status parse_flag_number(const std::string& flag, const std::string& text, double lo, double hi,
                         double* out) {
  std::string want = "a number in [" + format_number(lo) + ", " + format_number(hi) + "]";
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || errno != 0 || *end != '\0' || !std::isfinite(v) || v < lo || v > hi)
    return invalid_flag(flag, text, want);
  *out = v;
  return Status::OK();
}

int64_t mebibytes_to_bytes(double mebibytes) {
  return static_cast<int64_t>(std::llround(mebibytes * 1024.0 * 1024.0));
}

std::string format_number(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

Status validate_hosts(const std::string& hosts) {
  auto bad = [&](const std::string& why) {
    return Status(StatusCode::kInvalidArgument,
                  "-H '" + hosts + "' is invalid: " + why +
                      " (expected host[:slots],... with slots >= 1, e.g. node1:4,node2:4)");
  };
  if (hosts.empty()) return bad("empty host list");
  size_t start = 0;
  while (start <= hosts.size()) {
    size_t comma = hosts.find(',', start);
    std::string entry =
        hosts.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (entry.empty()) return bad("empty entry");
    size_t colon = entry.find(':');
    std::string name = entry.substr(0, colon);
    if (name.empty()) return bad("empty host name in '" + entry + "'");
    for (char c : name)
      if (c == ' ' || c == '\t' || c == '\n' || c == '=')
        return bad("host name '" + name + "' contains a blank or '='");
    if (colon != std::string::npos) {
      int64_t slots = 0;
      if (!parse_flag_int("slots", entry.substr(colon + 1), 1, kMaxRanks, &slots).ok())
        return bad("slots in '" + entry + "' must be an integer >= 1");
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return Status::OK();
}

Status check_hostfile_readable(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status(StatusCode::kIoError,
                  "--hostfile '" + path + "' cannot be read: " + std::strerror(errno));
  if (std::filesystem::is_directory(path))
    return Status(StatusCode::kIoError, "--hostfile '" + path + "' is a directory");
  return Status::OK();
}

Status rank_assignments(const LaunchOptions& options, const EnvMap& env,
                        std::vector<EnvAssignment>* assignments, std::string* settings_source) {
  std::vector<EnvAssignment> out;
  settings_source->clear();
  std::optional<std::string> settings_path = options.settings_path;
  bool from_env = false;
  if (!settings_path) {
    auto it = env.find("RINGSCOPE_SETTINGS");
    if (it != env.end() && !it->second.empty()) settings_path = it->second, from_env = true;
  }
  if (settings_path) {
    SettingsFile file;
    Status s = read_settings_file(*settings_path, &file);
    if (!s.ok() && from_env)  // say where a path the user did not type came from
      return Status(s.code(), "RINGSCOPE_SETTINGS names " + s.message());
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_FUSION_THRESHOLD", std::to_string(file.fusion_threshold_bytes));
    assign(&out, "RINGSCOPE_CYCLE_TIME", format_number(file.cycle_time_ms));
    assign(&out, "RINGSCOPE_CACHE_CAPACITY", std::to_string(file.effective_cache_capacity()));
    *settings_source = *settings_path;
  }

  Status s;
  if (options.fusion_threshold_mb) {
    double mb = 0;
    s = parse_flag_number("--fusion-threshold-mb", *options.fusion_threshold_mb, 0.0,
                          kMaxFusionThresholdMb, &mb);
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_FUSION_THRESHOLD", std::to_string(mebibytes_to_bytes(mb)));
  }
  if (options.cycle_time_ms) {
    double ms = 0;
    s = parse_flag_number("--cycle-time-ms", *options.cycle_time_ms, 0.0, kMaxCycleTimeMs, &ms);
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_CYCLE_TIME", format_number(ms));
  }
  if (options.cache_capacity) {
    int64_t capacity = 0;
    s = parse_flag_int("--cache-capacity", *options.cache_capacity, 0, kMaxCacheCapacity,
                       &capacity);
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_CACHE_CAPACITY", std::to_string(capacity));
  }
  if (options.log_level) {
    int level = 0;
    s = parse_log_level(*options.log_level, &level);
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_LOG_LEVEL", std::to_string(level));
  }
  if (options.trace_path && options.timeline_path)
    return Status(StatusCode::kInvalidArgument,
                  "--trace and --timeline-filename exclude each other (both name the trace)");
  if (options.trace_path || options.timeline_path) {
    const bool timeline = options.timeline_path.has_value();
    std::string path = timeline ? *options.timeline_path : *options.trace_path;
    if (path.empty())
      return Status(StatusCode::kInvalidArgument,
                    std::string(timeline ? "--timeline-filename" : "--trace") +
                        " needs a path, e.g. runs/a.sqlite");
    if (timeline) path = trace_base_for_horovod_timeline(path);
    std::error_code ec;
    const std::filesystem::path full = std::filesystem::absolute(path, ec);
    if (ec)  // the working folder was deleted, say
      return Status(StatusCode::kInvalidArgument,
                    std::string(timeline ? "--timeline-filename" : "--trace") + " '" + path +
                        "': cannot make it absolute (" + ec.message() + ")");
    assign(&out, "RINGSCOPE_TRACE", full.string());
  }
  if (options.trace_max_mb) {
    int64_t mib = 0;
    s = parse_flag_int("--trace-max-mb", *options.trace_max_mb, 0, int64_t{1} << 24, &mib);
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_TRACE_MAX_MB", std::to_string(mib));
  }
  if (options.flight_recorder_mb) {
    int64_t mib = 0;
    s = parse_flag_int("--flight-recorder", *options.flight_recorder_mb, 0, int64_t{1} << 16,
                       &mib);
    if (!s.ok()) return s;
    assign(&out, "RINGSCOPE_FLIGHT_RECORDER", std::to_string(mib));
  }
  if (options.flight_recorder_dir) {
    std::error_code ec;
    const std::filesystem::path full =
        std::filesystem::absolute(*options.flight_recorder_dir, ec);
    if (ec || options.flight_recorder_dir->empty())
      return Status(StatusCode::kInvalidArgument,
                    "--flight-recorder-dir '" + *options.flight_recorder_dir +
                        "': cannot make it absolute" + (ec ? " (" + ec.message() + ")" : ""));
    assign(&out, "RINGSCOPE_FLIGHT_RECORDER_DIR", full.string());
  }
  if (options.disable_cache) {
    if (options.cache_capacity)
      return Status(StatusCode::kInvalidArgument,
                    "--disable-cache and --cache-capacity exclude each other");
    assign(&out, "RINGSCOPE_CACHE_CAPACITY", "0");
  }
  if (options.hierarchical_allreduce) assign(&out, "RINGSCOPE_HIERARCHICAL_ALLREDUCE", "1");
  if (options.no_stall_check && options.stall_check_seconds)
    return Status(StatusCode::kInvalidArgument,
                  "--no-stall-check and --stall-check-warning-time-seconds exclude each other");
  if (options.no_stall_check) assign(&out, "RINGSCOPE_STALL_CHECK_SECONDS", "0");
  for (const auto& [flag, text, variable] :
       {std::tuple{"--stall-check-warning-time-seconds", &options.stall_check_seconds,
                   "RINGSCOPE_STALL_CHECK_SECONDS"},
        std::tuple{"--stall-check-shutdown-time-seconds", &options.stall_shutdown_seconds,
                   "RINGSCOPE_STALL_SHUTDOWN_SECONDS"}}) {
    if (!*text) continue;
    double seconds = 0;
    s = parse_flag_number(flag, **text, 0.0, 1e6, &seconds);
    if (!s.ok()) return s;
    assign(&out, variable, format_number(seconds));
  }
  if (options.autotune) assign(&out, "RINGSCOPE_AUTOTUNE", "1");
  *assignments = std::move(out);
  return Status::OK();
}

namespace {
// A name `-x NAME` carries: letters, digits and underscores.
bool plain_name(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool machine_variable(const std::string& name) {
  for (const char* own : kNotForwarded)
    if (name == own) return true;
  for (const char* prefix : kNotForwardedPrefixes)
    if (starts_with(name, prefix)) return true;
  return false;
}
}  // namespace

std::vector<std::string> forwarded_variables(const EnvMap& env,
                                             const std::vector<EnvAssignment>& assignments,
                                             bool every_variable) {
  std::vector<std::string> names;
  for (const auto& [name, value] : env) {
    bool wanted = starts_with(name, "RINGSCOPE_") || starts_with(name, "HOROVOD_");
    for (const char* fixed : kForwardedVariables) wanted = wanted || name == fixed;
    if (every_variable) wanted = wanted || (plain_name(name) && !machine_variable(name));
    bool assigned = std::any_of(assignments.begin(), assignments.end(),
                                [&](const EnvAssignment& a) { return a.first == name; });
    if (wanted && !assigned) names.push_back(name);
  }
  return names;  // std::map iterates in sorted order
}

std::vector<std::string> build_mpirun_argv(int np, const LaunchOptions& options,
                                           const std::vector<std::string>& mpi_args,
                                           const std::vector<EnvAssignment>& assignments,
                                           const std::vector<std::string>& forwarded,
                                           bool as_root) {
  std::vector<std::string> argv = {"mpirun"};
  if (as_root) argv.push_back("--allow-run-as-root");
  bool local_run = !options.hosts && !options.hostfile;
  if (local_run) argv.push_back("--oversubscribe");
  if (!binds_itself(mpi_args)) argv.insert(argv.end(), {"--bind-to", "none"});
  argv.push_back("--tag-output");
  argv.insert(argv.end(), {"-np", std::to_string(np)});
  if (options.hosts) argv.insert(argv.end(), {"-H", *options.hosts});
  if (options.hostfile) argv.insert(argv.end(), {"--hostfile", *options.hostfile});
  argv.insert(argv.end(), mpi_args.begin(), mpi_args.end());
  for (const auto& [name, value] : assignments) argv.insert(argv.end(), {"-x", name + "=" + value});
  for (const std::string& name : forwarded) argv.insert(argv.end(), {"-x", name});
  argv.insert(argv.end(), options.command.begin(), options.command.end());
  return argv;
}

Status plan_launch(const LaunchOptions& options, const EnvMap& env, bool as_root,
                   LaunchPlan* plan) {
  if (!options.np)
    return Status(StatusCode::kInvalidArgument, "-np N is required (the number of ranks, >= 1)");
  int64_t np = 0;
  Status s = parse_flag_int("-np", *options.np, 1, kMaxRanks, &np);
  if (!s.ok()) return s;
  if (options.hosts && options.hostfile)
    return Status(StatusCode::kInvalidArgument, "-H and --hostfile exclude each other");
  if (options.hosts) {
    s = validate_hosts(*options.hosts);
    if (!s.ok()) return s;
  }
  if (options.hostfile) {
    s = check_hostfile_readable(*options.hostfile);
    if (!s.ok()) return s;
  }
  if (options.command.empty())
    return Status(StatusCode::kInvalidArgument,
                  "no training command given (e.g. ringscope run -np 2 -- python train.py)");
  // mpirun reads a bare ':' as the start of another program (MPMD), with no
  // way to escape it: the command would be cut there and its rest run as a
  // second program.
  if (std::find(options.command.begin() + 1, options.command.end(), ":") != options.command.end())
    return Status(StatusCode::kInvalidArgument,
                  "the training command has a bare ':' word, which mpirun takes as the start of "
                  "another program; write it differently (e.g. --sep=: or ':' inside a longer "
                  "word)");
  std::vector<std::string> mpi_args;
  s = horovodrun_mpirun_words(options, &mpi_args);
  if (!s.ok()) return s;
  if (options.mpi_args) {
    std::vector<std::string> extra;
    s = split_shell_words(*options.mpi_args, &extra);
    if (!s.ok()) return Status(StatusCode::kInvalidArgument, "--mpi-args: " + s.message());
    // mpirun refuses an MCA parameter given twice ("can only be listed
    // once"): one the user sets in --mpi-args replaces the launcher's.
    std::set<std::string> user_mca;
    for (size_t i = 0; i + 1 < extra.size(); ++i)
      if (extra[i] == "--mca" || extra[i] == "-mca") user_mca.insert(extra[i + 1]);
    std::vector<std::string> kept;
    for (size_t i = 0; i < mpi_args.size(); ++i) {
      if (mpi_args[i] == "--mca" && i + 2 < mpi_args.size() && user_mca.count(mpi_args[i + 1])) {
        i += 2;  // the launcher's --mca NAME VALUE
        continue;
      }
      kept.push_back(mpi_args[i]);
    }
    mpi_args = std::move(kept);
    mpi_args.insert(mpi_args.end(), extra.begin(), extra.end());
  }
  LaunchPlan result;
  result.np = static_cast<int>(np);
  s = rank_assignments(options, env, &result.assignments, &result.settings_source);
  if (!s.ok()) return s;
  // Ranks on other hosts start from a fresh environment (ssh): they get this
  // one's, as with horovodrun (NCCL_*, CUDA_VISIBLE_DEVICES, a DATA_DIR...).
  const bool other_hosts = options.hosts.has_value() || options.hostfile.has_value();
  result.forwarded = forwarded_variables(env, result.assignments, other_hosts);
  result.argv = build_mpirun_argv(result.np, options, mpi_args, result.assignments,
                                  result.forwarded, as_root);
  *plan = std::move(result);
  return Status::OK();
}

}  // namespace ringscope
