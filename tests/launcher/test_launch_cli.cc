// Tests of `ringscope run` flag parsing: -np in Horovod's spelling, where the
// training command starts, `--`, unknown flags, help and CLI11 usage errors.
#include <catch2/catch.hpp>

#include <sstream>

#include "launch_cli.h"

using ringscope::CliOutcome;
using ringscope::LaunchOptions;
using Words = std::vector<std::string>;

namespace {

struct Parsed {
  CliOutcome outcome;
  LaunchOptions options;
  std::string out, err;
};

Parsed parse(const Words& args) {
  Parsed p;
  std::ostringstream out, err;
  p.outcome = ringscope::parse_launch_command_line(args, &p.options, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

}  // namespace

TEST_CASE("cli: flags then the command", "[launch_cli]") {
  Parsed p = parse({"-np",
                    "2",
                    "-H",
                    "a:1,b:1",
                    "--fusion-threshold-mb",
                    "0.5",
                    "--cycle-time-ms",
                    "2",
                    "--cache-capacity",
                    "64",
                    "--log-level",
                    "3",
                    "--trace",
                    "runs/x.sqlite",
                    "--trace-max-mb",
                    "512",
                    "--flight-recorder",
                    "0",
                    "--flight-recorder-dir",
                    "dumps",
                    "--settings",
                    "s.json",
                    "--mpi-args",
                    "--mca btl self",
                    "--autotune",
                    "--verbose",
                    "--dry-run",
                    "python",
                    "train.py",
                    "--lr",
                    "0.1",
                    "-np",
                    "9"});
  REQUIRE(p.outcome.proceed);
  const LaunchOptions& o = p.options;
  CHECK(o.np == "2");
  CHECK(o.hosts == "a:1,b:1");
  CHECK(o.fusion_threshold_mb == "0.5");
  CHECK(o.cycle_time_ms == "2");
  CHECK(o.cache_capacity == "64");
  CHECK(o.log_level == "3");
  CHECK(o.trace_path == "runs/x.sqlite");
  CHECK(o.trace_max_mb == "512");
  CHECK(o.flight_recorder_mb == "0");
  CHECK(o.flight_recorder_dir == "dumps");
  CHECK(o.settings_path == "s.json");
  CHECK(o.mpi_args == "--mca btl self");
  CHECK(o.autotune);
  CHECK(o.verbose);
  CHECK(o.dry_run);
  CHECK_FALSE(o.hostfile.has_value());
  CHECK(o.command == Words{"python", "train.py", "--lr", "0.1", "-np", "9"});
}

TEST_CASE("cli: horovodrun's flags", "[launch_cli]") {
  Parsed p = parse({"-np",
                    "4",
                    "--timeline-filename",
                    "t.json",
                    "--disable-cache",
                    "--hierarchical-allreduce",
                    "--stall-check-warning-time-seconds",
                    "30",
                    "--stall-check-shutdown-time-seconds",
                    "90",
                    "--no-stall-check",
                    "--output-filename",
                    "logs",
                    "--network-interface",
                    "eth0",
                    "-p",
                    "2222",
                    "-i",
                    "/root/.ssh/id",
                    "--log-level",
                    "INFO",
                    "python",
                    "train.py",
                    "-p",
                    "7"});
  REQUIRE(p.outcome.proceed);
  const LaunchOptions& o = p.options;
  CHECK(o.np == std::optional<std::string>("4"));
  CHECK(o.timeline_path == std::optional<std::string>("t.json"));
  CHECK(o.disable_cache);
  CHECK(o.hierarchical_allreduce);
  CHECK(o.stall_check_seconds == std::optional<std::string>("30"));
  CHECK(o.stall_shutdown_seconds == std::optional<std::string>("90"));
  CHECK(o.no_stall_check);
  CHECK(o.output_filename == std::optional<std::string>("logs"));
  CHECK(o.network_interfaces == std::optional<std::string>("eth0"));
  CHECK(o.ssh_port == std::optional<std::string>("2222"));
  CHECK(o.ssh_identity_file == std::optional<std::string>("/root/.ssh/id"));
  CHECK(o.log_level == std::optional<std::string>("INFO"));
  CHECK(o.command == Words{"python", "train.py", "-p", "7"});  // the command's -p is its own
}

TEST_CASE("cli: -- separates the command and unset flags stay unset", "[launch_cli]") {
  Parsed p = parse({"--np=3", "--", "./prog", "--verbose", "--", "x"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.np == "3");
  CHECK_FALSE(p.options.verbose);
  CHECK_FALSE(p.options.fusion_threshold_mb.has_value());
  CHECK_FALSE(p.options.settings_path.has_value());
  CHECK(p.options.command == Words{"./prog", "--verbose", "--", "x"});

  p = parse({"--hostfile", "h.txt", "-np=4", "--", "-weird-program"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.np == "4");
  CHECK(p.options.hostfile == "h.txt");
  CHECK(p.options.command == Words{"-weird-program"});
}

TEST_CASE("cli: -np is only rewritten among the launcher's flags", "[launch_cli]") {
  Words value_flags = {"--trace", "-H"};
  CHECK(ringscope::normalize_np_flag({"--trace", "-np", "-np", "2", "cmd", "-np"}, value_flags) ==
        Words{"--trace", "-np", "--np", "2", "cmd", "-np"});
  CHECK(ringscope::normalize_np_flag({"cmd", "-np", "2"}, value_flags) == Words{"cmd", "-np", "2"});
  CHECK(ringscope::normalize_np_flag({"--", "-np", "2"}, value_flags) == Words{"--", "-np", "2"});
}

TEST_CASE("cli: horovodrun's -hostfile is the hostfile, not a call for help", "[launch_cli]") {
  Parsed p = parse({"-np", "2", "-hostfile", "h.txt", "python", "t.py"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.hostfile == "h.txt");
  CHECK(p.options.command == Words{"python", "t.py"});
  p = parse({"-hostfile=h2.txt", "-np", "2", "python"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.hostfile == "h2.txt");
}

TEST_CASE("cli: --flag= is an empty value, never the next word", "[launch_cli]") {
  // `--trace="$TRACE"` with TRACE unset, `--mpi-args="$EXTRA"` with EXTRA empty.
  Parsed p = parse({"-np", "2", "--mpi-args=", "python", "train.py"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.mpi_args == "");
  CHECK(p.options.command == Words{"python", "train.py"});
  p = parse({"-np", "2", "--trace=", "--", "python"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.trace_path == "");  // plan_launch refuses an empty path
  CHECK(p.options.command == Words{"python"});
  p = parse({"-np", "2", "--settings=", "--verbose", "python"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.settings_path == "");
  CHECK(p.options.verbose);
}

TEST_CASE("cli: unknown flags and missing values and help", "[launch_cli]") {
  Parsed p = parse({"-np", "2", "--bogus", "python"});
  CHECK_FALSE(p.outcome.proceed);
  CHECK(p.outcome.exit_code == 2);
  CHECK(p.err.find("unknown flag '--bogus'") != std::string::npos);

  p = parse({"-np"});
  CHECK_FALSE(p.outcome.proceed);
  CHECK(p.outcome.exit_code == 2);
  CHECK_FALSE(p.err.empty());

  p = parse({"--help"});
  CHECK_FALSE(p.outcome.proceed);
  CHECK(p.outcome.exit_code == 0);
  for (const char* flag : {"--np", "--hosts", "--hostfile", "--trace", "--settings",
                           "--fusion-threshold-mb", "--cycle-time-ms", "--cache-capacity",
                           "--autotune", "--mpi-args", "--log-level", "--verbose", "--dry-run"})
    CHECK(p.out.find(flag) != std::string::npos);
  CHECK(p.out.find("RINGSCOPE_AUTOTUNE_OUTPUT") !=
        std::string::npos);  // --autotune explains itself
}

TEST_CASE("cli: a value flag followed by another flag lost its value", "[launch_cli]") {
  Parsed p = parse({"-np", "2", "--trace", "--verbose", "python", "t.py"});
  CHECK_FALSE(p.outcome.proceed);
  CHECK(p.outcome.exit_code == 2);
  CHECK(p.err.find("--trace needs a value, but the next word is the flag '--verbose'") !=
        std::string::npos);
  p = parse({"--trace", "-np", "2", "python"});  // -np is ours, in horovodrun's spelling
  CHECK_FALSE(p.outcome.proceed);
  CHECK(p.err.find("the flag '-np'") != std::string::npos);
  p = parse({"-np", "2", "-H", "-i", "key", "python"});  // short flags too
  CHECK_FALSE(p.outcome.proceed);
  CHECK(p.err.find("-H needs a value") != std::string::npos);

  // Written with '=', the value is what the user typed; --mpi-args takes mpirun flags.
  p = parse({"-np", "2", "--trace=--verbose", "--mpi-args", "--bind-to none", "python"});
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.trace_path == "--verbose");
  CHECK(p.options.mpi_args == "--bind-to none");
  CHECK_FALSE(p.options.verbose);
  p = parse({"-np", "2", "--cycle-time-ms", "-1", "python"});  // a value; plan_launch ranges it
  REQUIRE(p.outcome.proceed);
  CHECK(p.options.cycle_time_ms == "-1");
}
