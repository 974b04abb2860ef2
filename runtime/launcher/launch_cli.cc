// CLI11 definition of `ringscope run`'s flags and their mapping onto
// LaunchOptions; values stay text here and are validated by plan_launch.
#include "launch_cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace ringscope {
namespace {

constexpr const char* kDescription =
    "ringscope run: launch a training command on N ranks through Open MPI's mpirun.\n"
    "Flags set RINGSCOPE_* variables for every rank (flags override --settings);\n"
    "PATH, LD_LIBRARY_PATH, PYTHONPATH, VIRTUAL_ENV and any RINGSCOPE_*/HOROVOD_*\n"
    "variables already set are passed on. mpirun's exit code is returned.";

constexpr const char* kFooter =
    "Examples:\n"
    "  ringscope run -np 2 -- python train.py --epochs 3\n"
    "  ringscope run -np 8 -H node1:4,node2:4 --trace runs/a.sqlite python train.py\n"
    "  ringscope run -np 4 --hostfile hosts.txt --settings tuned.json --dry-run ./bench\n"
    "Docs: docs/launcher.md, docs/settings-file.md.";

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// CLI11's usage line cannot show the trailing command; this one does.
class LauncherFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: ringscope run -np N [OPTIONS] [--] COMMAND [ARGS...]\n";
  }
};

// The flags of `app` that take a value word (not boolean flags).
std::vector<std::string> value_flags_of(const CLI::App& app) {
  std::vector<std::string> names = {"-np"};
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_expected_min() <= 0) continue;  // a flag: no value word
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

// Every flag word of `app`, value flags and boolean flags alike.
std::vector<std::string> all_flags_of(const CLI::App& app) {
  std::vector<std::string> names = {"-np", "-hostfile"};
  for (const CLI::Option* opt : app.get_options()) {
    for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
    for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
  }
  return names;
}

bool contains(const std::vector<std::string>& list, const std::string& word) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

// "--trace --verbose python t.py": a value flag followed by another of our
// flags almost always lost its value; CLI11 would take `--verbose` as the
// trace path. Returns the message, or "" when every value word is a value.
// `--mpi-args` is exempt (its value is mpirun flags); `--trace=--x` passes.
std::string flag_taken_as_value(const std::vector<std::string>& words,
                                const std::vector<std::string>& value_flags,
                                const std::vector<std::string>& all_flags) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word == "--" || !starts_with(word, "-")) break;  // the command starts here
    if (!contains(value_flags, word)) continue;          // a boolean flag or --flag=value
    if (i + 1 < words.size() && word != "--mpi-args" && contains(all_flags, words[i + 1]))
      return "ringscope run: " + word + " needs a value, but the next word is the flag '" +
             words[i + 1] + "' (write " + word + "=" + words[i + 1] + " if that is the value)";
    ++i;  // skip the value word
  }
  return "";
}

}  // namespace

std::vector<std::string> normalize_np_flag(const std::vector<std::string>& args,
                                           const std::vector<std::string>& value_flags) {
  std::vector<std::string> result;
  result.reserve(args.size() + 1);
  size_t i = 0;
  while (i < args.size()) {
    std::string word = args[i];
    if (word == "--" || !starts_with(word, "-")) break;  // the command starts here
    // horovodrun's single-dash long flags (its docs use -np and -hostfile);
    // CLI11 would read -hostfile as -h (help) followed by more short flags.
    for (const char* single : {"-np", "-hostfile"})
      if (word == single || word.rfind(std::string(single) + "=", 0) == 0) word.insert(0, 1, '-');
    const size_t eq = word.find('=');
    const std::string flag = word.substr(0, eq);
    const bool value_flag = contains(value_flags, flag);
    if (value_flag && eq != std::string::npos && eq + 1 == word.size()) {
      // `--trace=` (an empty variable): an empty value, where CLI11 would
      // take the next word (the command, or another flag) as the value.
      result.push_back(flag);
      result.push_back("");
      ++i;
      continue;
    }
    result.push_back(word);
    ++i;
    if (value_flag && eq == std::string::npos && i < args.size()) result.push_back(args[i++]);
  }
  result.insert(result.end(), args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  return result;
}

CliOutcome parse_launch_command_line(const std::vector<std::string>& args, LaunchOptions* options,
                                     std::ostream& out, std::ostream& err) {
  LaunchOptions o;
  CLI::App app{kDescription, "ringscope run"};
  app.footer(kFooter);
  app.formatter(std::make_shared<LauncherFormatter>());
  app.prefix_command();  // the first word that is not one of ours starts the command

  std::string flight_mb, flight_dir;
  std::string np, hosts, hostfile, trace, trace_max_mb, settings, fusion_mb, cycle_ms, capacity,
      log_level, mpi_args;
  app.add_option("--np", np, "number of ranks, >= 1 (required; -np N also works)")->type_name("N");
  app.add_option("-H,--hosts", hosts, "hosts and slots: host[:slots],... (default: this host)")
      ->type_name("HOSTS");
  app.add_option("--hostfile", hostfile, "Open MPI hostfile (one 'host slots=N' per line)")
      ->type_name("FILE");
  app.add_option("--trace", trace,
                 "trace base path; rank r writes <base>.rank<r>.sqlite (sets RINGSCOPE_TRACE)")
      ->type_name("PATH");
  app.add_option("--trace-max-mb", trace_max_mb,
                 "size cap of each trace file in MiB: when a rank's file reaches it, every rank "
                 "stops tracing and the run goes on; 0 = no cap (RINGSCOPE_TRACE_MAX_MB, "
                 "default 256)")
      ->type_name("MB");
  app.add_option("--flight-recorder", flight_mb,
                 "memory of each rank's flight recorder in MiB (its recent events, dumped on a "
                 "stall, a failure or SIGUSR1); 0 = off (RINGSCOPE_FLIGHT_RECORDER, default 16)")
      ->type_name("MB");
  app.add_option("--flight-recorder-dir", flight_dir,
                 "where flight recorder dumps go (RINGSCOPE_FLIGHT_RECORDER_DIR; default: the "
                 "trace's folder, else ./ringscope-flight)")
      ->type_name("DIR");
  app.add_option("--settings", settings,
                 "settings file (docs/settings-file.md); default: $RINGSCOPE_SETTINGS")
      ->type_name("FILE");
  app.add_option("--fusion-threshold-mb", fusion_mb,
                 "fusion buffer in MiB, fractional allowed; 0 disables fusion "
                 "(sets RINGSCOPE_FUSION_THRESHOLD in bytes)")
      ->type_name("MB");
  app.add_option("--cycle-time-ms", cycle_ms,
                 "ms between negotiation cycles, fractional allowed (RINGSCOPE_CYCLE_TIME)")
      ->type_name("MS");
  app.add_option("--cache-capacity", capacity,
                 "response cache entries; 0 disables the cache (RINGSCOPE_CACHE_CAPACITY)")
      ->type_name("N");
  app.add_flag("--autotune", o.autotune,
               "online tuning (RINGSCOPE_AUTOTUNE=1): rank 0 tries fusion threshold, cycle time "
               "and cache settings during the run and keeps the best; set "
               "RINGSCOPE_AUTOTUNE_OUTPUT=FILE to save it (docs/autotune.md)");
  app.add_option("--mpi-args", mpi_args,
                 "extra mpirun arguments, split into words like a shell would (quotes "
                 "honoured, nothing expanded)")
      ->type_name("\"ARGS\"");
  app.add_option("--log-level", log_level,
                 "0 silent, 1 warnings, 2 info, 3 debug, or horovodrun's trace, debug, info, "
                 "warning, error, fatal (RINGSCOPE_LOG_LEVEL)")
      ->type_name("N");
  // horovodrun's names, so that its job scripts run unchanged (docs/launcher.md).
  std::string timeline, stall_check, stall_shutdown, output_filename, nics, ssh_port, ssh_identity;
  app.add_option("--timeline-filename", timeline,
                 "horovodrun's name for --trace; a .json ending becomes .sqlite (the trace is "
                 "SQLite)")
      ->type_name("PATH");
  app.add_flag("--disable-cache", o.disable_cache,
               "no response cache (RINGSCOPE_CACHE_CAPACITY=0), as horovodrun's");
  app.add_flag("--hierarchical-allreduce", o.hierarchical_allreduce,
               "hierarchical device allreduce (RINGSCOPE_HIERARCHICAL_ALLREDUCE=1)");
  app.add_option("--stall-check-warning-time-seconds", stall_check,
                 "warn about tensors some ranks have not submitted after this long "
                 "(RINGSCOPE_STALL_CHECK_SECONDS, default 60)")
      ->type_name("S");
  app.add_option("--stall-check-shutdown-time-seconds", stall_shutdown,
                 "fail stalled ops on every rank after this long "
                 "(RINGSCOPE_STALL_SHUTDOWN_SECONDS; default 0, never)")
      ->type_name("S");
  app.add_flag("--no-stall-check", o.no_stall_check,
               "no stall warnings (RINGSCOPE_STALL_CHECK_SECONDS=0)");
  app.add_option("--output-filename", output_filename,
                 "each rank's stdout/stderr into files under DIR (mpirun --output-filename)")
      ->type_name("DIR");
  app.add_option("--network-interfaces,--network-interface", nics,
                 "only these interfaces between hosts, e.g. eth0 or eth0,ib0 "
                 "(mpirun --mca btl_tcp_if_include and oob_tcp_if_include)")
      ->type_name("NICS");
  app.add_option("-p,--ssh-port", ssh_port, "ssh port of the other hosts (plm_rsh_args)")
      ->type_name("PORT");
  app.add_option("-i,--ssh-identity-file", ssh_identity,
                 "ssh key for the other hosts (plm_rsh_args)")
      ->type_name("FILE");
  app.add_flag("--verbose", o.verbose, "print the mpirun command (shell-quoted) before running");
  app.add_flag("--dry-run", o.dry_run, "print the mpirun command and exit 0 without running");

  const std::vector<std::string> value_flags = value_flags_of(app);
  std::vector<std::string> words = normalize_np_flag(args, value_flags);
  if (const std::string problem = flag_taken_as_value(words, value_flags, all_flags_of(app));
      !problem.empty()) {
    err << problem << "\n";
    return {false, 2};
  }
  std::vector<const char*> argv = {"ringscope run"};
  for (const std::string& w : words) argv.push_back(w.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::CallForHelp& e) {
    app.exit(e, out, err);
    return {false, 0};
  } catch (const CLI::ParseError& e) {
    app.exit(e, out, err);
    return {false, 2};
  }

  auto set = [&](const char* flag, const std::string& value, std::optional<std::string>* field) {
    if (app.count(flag) > 0) *field = value;
  };
  set("--np", np, &o.np);
  set("--hosts", hosts, &o.hosts);
  set("--hostfile", hostfile, &o.hostfile);
  set("--trace", trace, &o.trace_path);
  set("--trace-max-mb", trace_max_mb, &o.trace_max_mb);
  set("--flight-recorder", flight_mb, &o.flight_recorder_mb);
  set("--flight-recorder-dir", flight_dir, &o.flight_recorder_dir);
  set("--settings", settings, &o.settings_path);
  set("--fusion-threshold-mb", fusion_mb, &o.fusion_threshold_mb);
  set("--cycle-time-ms", cycle_ms, &o.cycle_time_ms);
  set("--cache-capacity", capacity, &o.cache_capacity);
  set("--log-level", log_level, &o.log_level);
  set("--mpi-args", mpi_args, &o.mpi_args);
  set("--timeline-filename", timeline, &o.timeline_path);
  set("--stall-check-warning-time-seconds", stall_check, &o.stall_check_seconds);
  set("--stall-check-shutdown-time-seconds", stall_shutdown, &o.stall_shutdown_seconds);
  set("--output-filename", output_filename, &o.output_filename);
  set("--network-interfaces", nics, &o.network_interfaces);
  set("--ssh-port", ssh_port, &o.ssh_port);
  set("--ssh-identity-file", ssh_identity, &o.ssh_identity_file);

  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && starts_with(rest.front(), "-")) {
    err << "ringscope run: unknown flag '" << rest.front()
        << "' (see ringscope run --help; put -- before a command that starts with '-')\n";
    return {false, 2};
  }
  o.command = std::move(rest);
  *options = std::move(o);
  return {true, 0};
}

}  // namespace ringscope
