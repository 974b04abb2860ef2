// Tests of mpirun argv construction without exec: fixed flags (root,
// oversubscribe, binding), hosts and hostfile, -x assignments and forwarded
// variables, fractional MB, bad values, and flags overriding the settings file.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>

#include "launch_plan.h"
#include "launcher_test_util.h"

using ringscope::EnvMap;
using ringscope::LaunchOptions;
using ringscope::LaunchPlan;
using ringscope::Status;
using Words = std::vector<std::string>;

namespace {

LaunchOptions basic(const std::string& np = "2") {
  LaunchOptions o;
  o.np = np;
  o.command = {"python", "train.py"};
  return o;
}

LaunchPlan plan_ok(const LaunchOptions& o, const EnvMap& env = {}, bool as_root = false) {
  LaunchPlan plan;
  Status s = ringscope::plan_launch(o, env, as_root, &plan);
  INFO(s.to_string());
  REQUIRE(s.ok());
  return plan;
}

std::string plan_error(const LaunchOptions& o, const EnvMap& env = {}) {
  LaunchPlan plan;
  Status s = ringscope::plan_launch(o, env, false, &plan);
  REQUIRE_FALSE(s.ok());
  return s.message();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool has_pair(const Words& argv, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == a && argv[i + 1] == b) return true;
  return false;
}

const char* kSettings =
    R"({"format":"ringscope-settings","version":1,"settings":{"fusion_threshold_bytes":1000,)"
    R"("cycle_time_ms":3.5,"cache_enabled":false},"provenance":{}})";

}  // namespace

TEST_CASE("plan: local run as root gives the exact argv", "[launch_plan]") {
  LaunchPlan plan = plan_ok(basic("4"), {{"PATH", "/usr/bin"}, {"HOME", "/root"}}, true);
  CHECK(plan.argv == Words{"mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                           "--tag-output", "-np", "4", "-x", "PATH", "python", "train.py"});
  CHECK(plan.np == 4);
}

TEST_CASE("plan: hosts given and not root means no root flag and no oversubscribe",
          "[launch_plan]") {
  LaunchOptions o = basic("8");
  o.hosts = "node1:4,node2:4";
  LaunchPlan plan = plan_ok(o);
  CHECK(plan.argv == Words{"mpirun", "--bind-to", "none", "--tag-output", "-np", "8", "-H",
                           "node1:4,node2:4", "python", "train.py"});
}

TEST_CASE("plan: hostfile is checked and passed", "[launch_plan]") {
  ringscope::test::TempDir dir;
  ringscope::test::write_file(dir.file("hosts"), "node1 slots=2\nnode2 slots=2\n");
  LaunchOptions o = basic("4");
  o.hostfile = dir.file("hosts");
  LaunchPlan plan = plan_ok(o);
  CHECK(has_pair(plan.argv, "--hostfile", dir.file("hosts")));
  CHECK(std::find(plan.argv.begin(), plan.argv.end(), "--oversubscribe") == plan.argv.end());

  o.hostfile = dir.file("missing");
  CHECK(contains(plan_error(o), "--hostfile '" + dir.file("missing") + "' cannot be read"));
  o.hostfile = dir.path();
  CHECK(contains(plan_error(o), "is a directory"));
  o.hostfile = dir.file("hosts");
  o.hosts = "node1";
  CHECK(contains(plan_error(o), "exclude each other"));
}

TEST_CASE("plan: host list validation", "[launch_plan]") {
  CHECK(ringscope::validate_hosts("localhost").ok());
  CHECK(ringscope::validate_hosts("a:1,b:16,c").ok());
  CHECK(ringscope::validate_hosts("10.0.0.1:2").ok());
  for (const char* bad : {"", "a,,b", ":4", "a:0", "a:-1", "a:x", "a b:2", "a:", "a,"}) {
    Status s = ringscope::validate_hosts(bad);
    INFO(bad);
    CHECK_FALSE(s.ok());
    CHECK(contains(s.message(), "host[:slots]"));
  }
}

TEST_CASE("plan: flags become -x assignments with fractional MB", "[launch_plan]") {
  LaunchOptions o = basic();
  o.fusion_threshold_mb = "0.5";
  o.cycle_time_ms = "2.5";
  o.cache_capacity = "0";
  o.log_level = "2";
  o.autotune = true;
  o.trace_path = "runs/a.sqlite";
  o.trace_max_mb = "0";
  o.flight_recorder_mb = "64";
  o.flight_recorder_dir = "runs/flight";
  LaunchPlan plan = plan_ok(o);
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_FLIGHT_RECORDER=64"));
  CHECK(has_pair(plan.argv, "-x",
                 "RINGSCOPE_FLIGHT_RECORDER_DIR=" +
                     std::filesystem::absolute("runs/flight").string()));
  std::string trace = std::filesystem::absolute("runs/a.sqlite").string();
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_TRACE_MAX_MB=0"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_FUSION_THRESHOLD=524288"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CYCLE_TIME=2.5"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CACHE_CAPACITY=0"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_LOG_LEVEL=2"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_AUTOTUNE=1"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_TRACE=" + trace));
  CHECK(ringscope::mebibytes_to_bytes(64) == 67108864);
  CHECK(ringscope::mebibytes_to_bytes(1.25) == 1310720);
  CHECK(ringscope::mebibytes_to_bytes(0.000001) == 1);
  CHECK(ringscope::format_number(1.0) == "1");
  CHECK(ringscope::format_number(0.1) == "0.1");
}

TEST_CASE("plan: forwarded variables and ours replacing the environment's", "[launch_plan]") {
  EnvMap env = {{"PATH", "/usr/bin"},
                {"LD_LIBRARY_PATH", "/opt/lib"},
                {"PYTHONPATH", "/src"},
                {"VIRTUAL_ENV", "/venv"},
                {"HOME", "/root"},
                {"HOROVOD_FUSION_THRESHOLD", "1"},
                {"RINGSCOPE_CYCLE_TIME", "9"},
                {"RINGSCOPE_STALL_CHECK_SECONDS", "5"},
                {"OMPI_MCA_foo", "x"}};
  LaunchOptions o = basic();
  o.cycle_time_ms = "1.5";
  LaunchPlan plan = plan_ok(o, env);
  CHECK(plan.forwarded == Words{"HOROVOD_FUSION_THRESHOLD", "LD_LIBRARY_PATH", "PATH", "PYTHONPATH",
                                "RINGSCOPE_STALL_CHECK_SECONDS", "VIRTUAL_ENV"});
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CYCLE_TIME=1.5"));
  CHECK_FALSE(has_pair(plan.argv, "-x", "RINGSCOPE_CYCLE_TIME"));
  CHECK_FALSE(has_pair(plan.argv, "-x", "HOME"));
  // The command comes last, after every -x.
  CHECK(Words(plan.argv.end() - 2, plan.argv.end()) == Words{"python", "train.py"});
}

TEST_CASE("plan: with other hosts every variable but this machine's is forwarded",
          "[launch_plan]") {
  // Ranks started over ssh begin from a fresh environment (horovodrun
  // forwards everything too).
  EnvMap env = {{"PATH", "/usr/bin"},
                {"NCCL_SOCKET_IFNAME", "eth0"},
                {"CUDA_VISIBLE_DEVICES", "0,1"},
                {"DATA_DIR", "/data"},
                {"HOME", "/root"},
                {"HOSTNAME", "node1"},
                {"OMPI_MCA_foo", "x"},
                {"SSH_AUTH_SOCK", "/tmp/s"},
                {"BASH_FUNC_f%%", "() {}"},
                {"RINGSCOPE_CYCLE_TIME", "9"}};
  LaunchOptions o = basic();
  o.hosts = "a:1,b:1";
  o.cycle_time_ms = "1.5";
  LaunchPlan plan = plan_ok(o, env);
  CHECK(plan.forwarded == Words{"CUDA_VISIBLE_DEVICES", "DATA_DIR", "NCCL_SOCKET_IFNAME", "PATH"});
  CHECK(has_pair(plan.argv, "-x", "NCCL_SOCKET_IFNAME"));
  // One host: the ranks inherit mpirun's environment; only ours is named.
  o.hosts.reset();
  CHECK(plan_ok(o, env).forwarded == Words{"PATH"});
}

TEST_CASE("plan: --mpi-args are split and inserted before the -x list", "[launch_plan]") {
  LaunchOptions o = basic();
  o.mpi_args = "--mca btl tcp,self -x 'NOTE=two words'";
  LaunchPlan plan = plan_ok(o);
  CHECK(has_pair(plan.argv, "--mca", "btl"));
  CHECK(has_pair(plan.argv, "-x", "NOTE=two words"));
  CHECK(has_pair(plan.argv, "--bind-to", "none"));
  o.mpi_args = "--bind-to core --map-by core";
  plan = plan_ok(o);
  CHECK_FALSE(has_pair(plan.argv, "--bind-to", "none"));
  CHECK(has_pair(plan.argv, "--bind-to", "core"));
  o.mpi_args = "--mca 'unterminated";
  CHECK(contains(plan_error(o), "--mpi-args"));
}

TEST_CASE("plan: bad values are rejected with the flag and the range", "[launch_plan]") {
  auto with = [](auto mutate) {
    LaunchOptions o = basic();
    mutate(o);
    return plan_error(o);
  };
  CHECK(contains(with([](LaunchOptions& o) { o.np.reset(); }), "-np N is required"));
  CHECK(contains(with([](LaunchOptions& o) { o.np = "-2"; }), "-np '-2' is invalid"));
  CHECK(contains(with([](LaunchOptions& o) { o.np = "0"; }), "integer in [1,"));
  CHECK(contains(with([](LaunchOptions& o) { o.np = "two"; }), "-np 'two'"));
  CHECK(contains(with([](LaunchOptions& o) { o.np = "2.5"; }), "-np '2.5'"));
  CHECK(contains(with([](LaunchOptions& o) { o.fusion_threshold_mb = "-1"; }),
                 "--fusion-threshold-mb '-1' is invalid: expected a number in [0, 1048576]"));
  CHECK(contains(with([](LaunchOptions& o) { o.fusion_threshold_mb = "64MB"; }),
                 "--fusion-threshold-mb '64MB'"));
  CHECK(contains(with([](LaunchOptions& o) { o.fusion_threshold_mb = "nan"; }),
                 "--fusion-threshold-mb 'nan'"));
  CHECK(contains(with([](LaunchOptions& o) { o.cycle_time_ms = "20000"; }),
                 "--cycle-time-ms '20000' is invalid: expected a number in [0, 10000]"));
  CHECK(contains(with([](LaunchOptions& o) { o.cache_capacity = "1.5"; }), "--cache-capacity"));
  CHECK(contains(with([](LaunchOptions& o) { o.log_level = "4"; }),
                 "--log-level '4' is invalid: expected an integer in [0, 3]"));
  CHECK(contains(with([](LaunchOptions& o) { o.trace_path = ""; }), "--trace needs a path"));
  CHECK(contains(with([](LaunchOptions& o) { o.trace_max_mb = "1GB"; }),
                 "--trace-max-mb '1GB' is invalid: expected an integer in [0, 16777216]"));
  CHECK(contains(with([](LaunchOptions& o) { o.trace_max_mb = "-1"; }), "--trace-max-mb '-1'"));
  CHECK(contains(with([](LaunchOptions& o) { o.flight_recorder_mb = "16M"; }),
                 "--flight-recorder '16M' is invalid: expected an integer in [0, 65536]"));
  CHECK(contains(with([](LaunchOptions& o) { o.command.clear(); }), "no training command"));
}

TEST_CASE("plan: settings file and flags override it", "[launch_plan]") {
  ringscope::test::TempDir dir;
  ringscope::test::write_file(dir.file("tuned.json"), kSettings);
  LaunchOptions o = basic();
  o.settings_path = dir.file("tuned.json");
  LaunchPlan plan = plan_ok(o);
  CHECK(plan.settings_source == dir.file("tuned.json"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_FUSION_THRESHOLD=1000"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CYCLE_TIME=3.5"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CACHE_CAPACITY=0"));

  o.fusion_threshold_mb = "2";
  o.cache_capacity = "512";
  plan = plan_ok(o);
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_FUSION_THRESHOLD=2097152"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CYCLE_TIME=3.5"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CACHE_CAPACITY=512"));
  CHECK_FALSE(has_pair(plan.argv, "-x", "RINGSCOPE_FUSION_THRESHOLD=1000"));
}

TEST_CASE("plan: RINGSCOPE_SETTINGS is read when --settings is absent", "[launch_plan]") {
  ringscope::test::TempDir dir;
  ringscope::test::write_file(dir.file("tuned.json"), kSettings);
  LaunchPlan plan = plan_ok(basic(), {{"RINGSCOPE_SETTINGS", dir.file("tuned.json")}});
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CYCLE_TIME=3.5"));
  CHECK(plan.settings_source == dir.file("tuned.json"));

  ringscope::test::write_file(dir.file("bad.json"), "{not json");
  LaunchOptions o = basic();
  o.settings_path = dir.file("bad.json");  // the flag wins over the variable
  std::string m = plan_error(o, {{"RINGSCOPE_SETTINGS", dir.file("tuned.json")}});
  CHECK(contains(m, dir.file("bad.json")));
  o.settings_path = dir.file("missing.json");
  CHECK(contains(plan_error(o), "cannot open"));
}

TEST_CASE("plan: horovodrun's flags become our variables and mpirun's words", "[launch_plan]") {
  ringscope::test::TempDir dir;
  ringscope::test::write_file(dir.file("id_key"), "key");
  LaunchOptions o = basic();
  o.hosts = "a:1,b:1";
  o.timeline_path = "runs/timeline.json";
  o.disable_cache = true;
  o.hierarchical_allreduce = true;
  o.stall_check_seconds = "30";
  o.stall_shutdown_seconds = "120.5";
  o.log_level = "WARNING";
  o.output_filename = "logs";
  o.network_interfaces = "eth0,ib0";
  o.ssh_port = "2222";
  o.ssh_identity_file = dir.file("id_key");
  o.mpi_args = "--mca btl tcp,self";
  LaunchPlan plan = plan_ok(o);
  std::string trace = std::filesystem::absolute("runs/timeline.sqlite").string();
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_TRACE=" + trace));  // SQLite, so .sqlite
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_CACHE_CAPACITY=0"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_HIERARCHICAL_ALLREDUCE=1"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_STALL_CHECK_SECONDS=30"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_STALL_SHUTDOWN_SECONDS=120.5"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_LOG_LEVEL=1"));
  // horovodrun's transport words come before --mpi-args, so those can override them
  Words tail(std::find(plan.argv.begin(), plan.argv.end(), "--output-filename"), plan.argv.end());
  Words want = {"--output-filename",
                "logs",
                "--mca",
                "btl_tcp_if_include",
                "eth0,ib0",
                "--mca",
                "oob_tcp_if_include",
                "eth0,ib0",
                "--mca",
                "plm_rsh_args",
                "-p 2222 -i " + dir.file("id_key"),
                "--mca",
                "btl",
                "tcp,self"};
  REQUIRE(tail.size() > want.size());
  CHECK(Words(tail.begin(), tail.begin() + static_cast<long>(want.size())) == want);

  // A bare ':' would start a second program in mpirun.
  LaunchOptions colon = basic();
  colon.command = {"echo", "label", ":", "value"};
  CHECK(contains(plan_error(colon), "bare ':'"));
  colon.command = {"echo", "--sep=:"};
  (void)plan_ok(colon);

  // An MCA parameter set in --mpi-args replaces the launcher's (mpirun
  // refuses one listed twice).
  o.mpi_args = "--mca plm_rsh_args '-p 2200' -mca btl_tcp_if_include ib0";
  plan = plan_ok(o);
  for (const std::string& param : {"plm_rsh_args", "btl_tcp_if_include"})
    CHECK(std::count(plan.argv.begin(), plan.argv.end(), param) == 1);
  CHECK(has_pair(plan.argv, "plm_rsh_args", "-p 2200"));
  CHECK(has_pair(plan.argv, "btl_tcp_if_include", "ib0"));
  CHECK(has_pair(plan.argv, "oob_tcp_if_include", "eth0,ib0"));  // not overridden: kept

  LaunchOptions quiet = basic();
  quiet.no_stall_check = true;
  quiet.timeline_path = "tl";  // no .json: kept
  quiet.log_level = "fatal";
  plan = plan_ok(quiet);
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_STALL_CHECK_SECONDS=0"));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_TRACE=" + std::filesystem::absolute("tl").string()));
  CHECK(has_pair(plan.argv, "-x", "RINGSCOPE_LOG_LEVEL=0"));
}

TEST_CASE("plan: horovodrun's flags are checked and conflicts named", "[launch_plan]") {
  auto with = [](auto mutate) {
    LaunchOptions o = basic();
    mutate(o);
    return plan_error(o);
  };
  CHECK(contains(with([](LaunchOptions& o) {
                   o.trace_path = "a.sqlite";
                   o.timeline_path = "t.json";
                 }),
                 "--trace and --timeline-filename exclude each other"));
  CHECK(contains(with([](LaunchOptions& o) {
                   o.disable_cache = true;
                   o.cache_capacity = "8";
                 }),
                 "--disable-cache and --cache-capacity exclude each other"));
  CHECK(contains(with([](LaunchOptions& o) {
                   o.no_stall_check = true;
                   o.stall_check_seconds = "5";
                 }),
                 "exclude each other"));
  CHECK(contains(with([](LaunchOptions& o) { o.stall_check_seconds = "soon"; }),
                 "--stall-check-warning-time-seconds 'soon' is invalid: expected a number"));
  CHECK(contains(with([](LaunchOptions& o) { o.stall_shutdown_seconds = "-1"; }),
                 "--stall-check-shutdown-time-seconds '-1'"));
  CHECK(contains(with([](LaunchOptions& o) { o.log_level = "loud"; }),
                 "--log-level 'loud' is invalid: expected an integer in [0, 3] or trace"));
  CHECK(contains(with([](LaunchOptions& o) { o.timeline_path = ""; }),
                 "--timeline-filename needs a path"));
  CHECK(contains(with([](LaunchOptions& o) { o.network_interfaces = "eth0, ib0"; }),
                 "--network-interfaces 'eth0, ib0' is invalid"));
  CHECK(contains(with([](LaunchOptions& o) { o.network_interfaces = "eth0,"; }),
                 "--network-interfaces"));
  CHECK(contains(with([](LaunchOptions& o) { o.ssh_port = "70000"; }),
                 "--ssh-port '70000' is invalid: expected an integer in [1, 65535]"));
  CHECK(contains(with([](LaunchOptions& o) { o.ssh_identity_file = "/nonexistent/key"; }),
                 "--ssh-identity-file '/nonexistent/key' cannot be read"));
  CHECK(contains(with([](LaunchOptions& o) { o.ssh_identity_file = "my key"; }),
                 "a path without blanks"));
  CHECK(contains(with([](LaunchOptions& o) { o.output_filename = ""; }),
                 "--output-filename needs a directory"));
}
