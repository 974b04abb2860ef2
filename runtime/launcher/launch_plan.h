// `ringscope run` without side effects: the parsed options, their validation,
// the environment the ranks get and the exact mpirun argument vector. Pure
// functions of their inputs (apart from reading the settings file and checking
// the hostfile), so the tests check everything short of exec.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ringscope/status.h"

namespace ringscope {

// What the user asked for; numeric values stay text until validated, so the
// error can quote what was typed.
struct LaunchOptions {
  std::optional<std::string> np;
  std::optional<std::string> hosts;     // -H host[:slots],...
  std::optional<std::string> hostfile;  // --hostfile FILE
  std::optional<std::string> trace_path;
  std::optional<std::string> trace_max_mb;  // --trace-max-mb: each file's size cap
  std::optional<std::string> flight_recorder_mb;   // --flight-recorder MB (0: off)
  std::optional<std::string> flight_recorder_dir;  // --flight-recorder-dir DIR
  std::optional<std::string> settings_path;
  std::optional<std::string> fusion_threshold_mb;
  std::optional<std::string> cycle_time_ms;
  std::optional<std::string> cache_capacity;
  std::optional<std::string> log_level;
  std::optional<std::string> mpi_args;
  // horovodrun's flags, for job scripts written for it (docs/launcher.md).
  std::optional<std::string> timeline_path;           // --timeline-filename: the trace
  std::optional<std::string> stall_check_seconds;     // --stall-check-warning-time-seconds
  std::optional<std::string> stall_shutdown_seconds;  // --stall-check-shutdown-time-seconds
  std::optional<std::string> output_filename;         // --output-filename DIR (mpirun's)
  std::optional<std::string> network_interfaces;      // --network-interfaces eth0,ib0
  std::optional<std::string> ssh_port;                // -p, --ssh-port
  std::optional<std::string> ssh_identity_file;       // -i, --ssh-identity-file
  bool disable_cache = false;                         // --disable-cache
  bool hierarchical_allreduce = false;                // --hierarchical-allreduce
  bool no_stall_check = false;                        // --no-stall-check
  bool autotune = false;
  bool verbose = false;
  bool dry_run = false;
  std::vector<std::string> command;  // the training command and its arguments
};

using EnvMap = std::map<std::string, std::string>;
using EnvAssignment = std::pair<std::string, std::string>;  // NAME, VALUE

// Variables forwarded by name (`-x NAME`) when set in the launcher's
// environment, besides every RINGSCOPE_* and HOROVOD_* variable.
inline constexpr const char* kForwardedVariables[] = {"LD_LIBRARY_PATH", "PATH", "PYTHONPATH",
                                                      "VIRTUAL_ENV"};

// A validated launch: the variables set for the ranks (flags over settings
// file), the variables forwarded from the environment, and mpirun's argv
// (argv[0] is "mpirun").
struct LaunchPlan {
  int np = 0;
  std::vector<EnvAssignment> assignments;
  std::vector<std::string> forwarded;
  std::vector<std::string> argv;
  std::string settings_source;  // the settings file used, "" if none
};

// Number parsers for flag values; the error names the flag and the range.
Status parse_flag_int(const std::string& flag, const std::string& text, int64_t lo, int64_t hi,
                      int64_t* out);
Status parse_flag_number(const std::string& flag, const std::string& text, double lo, double hi,
                         double* out);

// MiB (fractional allowed) to bytes, rounded to the nearest byte.
int64_t mebibytes_to_bytes(double mebibytes);

// Shortest decimal text that reads back as `value` (1.5 -> "1.5", 2 -> "2").
std::string format_number(double value);

// Checks -H's "host[:slots],..." (non-empty names without blanks, slots >= 1).
Status validate_hosts(const std::string& hosts);

// Checks that the hostfile can be opened for reading.
Status check_hostfile_readable(const std::string& path);

// The RINGSCOPE_* assignments for the ranks: the settings file (from
// --settings, else $RINGSCOPE_SETTINGS in `env`) first, explicit flags over it.
// Validates every value. `settings_source` receives the file used ("" if none).
Status rank_assignments(const LaunchOptions& options, const EnvMap& env,
                        std::vector<EnvAssignment>* assignments, std::string* settings_source);

// Names to forward with `-x NAME`, minus those in `assignments`; sorted. On
// one host: kForwardedVariables and RINGSCOPE_* / HOROVOD_* that are set in
// `env` (the ranks inherit the rest from mpirun). With other hosts
// (`every_variable`): every variable, as horovodrun does, except those that
// describe this machine or session (kNotForwarded) and names -x cannot carry.
std::vector<std::string> forwarded_variables(const EnvMap& env,
                                             const std::vector<EnvAssignment>& assignments,
                                             bool every_variable = false);

// Not forwarded to other hosts: this machine's or this login's own.
inline constexpr const char* kNotForwarded[] = {
    "HOSTNAME", "HOST", "PWD",   "OLDPWD", "SHLVL",   "_",          "HOME",   "USER",
    "LOGNAME",  "MAIL", "SHELL", "TERM",   "DISPLAY", "XAUTHORITY", "TMPDIR", "LS_COLORS"};
// Nor variables with these prefixes (Open MPI's own, ssh's, bash functions).
inline constexpr const char* kNotForwardedPrefixes[] = {"OMPI_", "PMIX_",      "PRTE_", "OPAL_",
                                                        "SSH_",  "BASH_FUNC_", "XDG_"};

// The mpirun words for horovodrun's transport flags: --output-filename,
// --network-interfaces (TCP and Open MPI's own channel), -p / -i (ssh).
// Validates them.
Status horovodrun_mpirun_words(const LaunchOptions& options, std::vector<std::string>* words);

// mpirun's argument vector:
//   mpirun [--allow-run-as-root] [--oversubscribe] [--bind-to none] --tag-output
//          -np N [-H hosts | --hostfile FILE] [mpi args...]
//          -x NAME=VALUE... -x NAME... command...
// (mpi args: the horovodrun_mpirun_words, then --mpi-args.)
// --allow-run-as-root when `as_root`; --oversubscribe when no hosts or
// hostfile are given (a local run); --bind-to none unless `mpi_args` bind.
std::vector<std::string> build_mpirun_argv(int np, const LaunchOptions& options,
                                           const std::vector<std::string>& mpi_args,
                                           const std::vector<EnvAssignment>& assignments,
                                           const std::vector<std::string>& forwarded, bool as_root);

// Everything above: validates `options`, reads the settings file, checks
// hosts / hostfile and builds the plan. `env` is the launcher's environment.
Status plan_launch(const LaunchOptions& options, const EnvMap& env, bool as_root, LaunchPlan* plan);

}  // namespace ringscope
