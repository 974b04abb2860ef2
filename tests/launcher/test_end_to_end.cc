// End-to-end tests: ringscope-run starting 2 real ranks through mpirun (the
// ranks print what they received), exit codes, signal forwarding, the
// missing-mpirun error, and the `ringscope` dispatcher.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "launcher_test_util.h"

using ringscope::test::lines_with;
using ringscope::test::ProgramResult;
using ringscope::test::run_program;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The line the probe of `rank` printed for `what` ("NAME=VALUE" or
// "arg=TEXT"), whole after mpirun's "[1,0]<stdout>:" tag: "...=524288" must
// not match a printed "...=5242880".
bool rank_printed(const ProgramResult& r, int rank, const std::string& what) {
  const std::string line = "probe rank=" + std::to_string(rank) + " " + what;
  for (const std::string& printed : lines_with(r.out, line))
    if (printed.substr(printed.find("probe rank=")) == line) return true;
  return false;
}

}  // namespace

TEST_CASE("e2e: two ranks get the settings and environment and exact arguments", "[e2e][mpirun]") {
  ringscope::test::TempDir dir;
  ringscope::test::write_file(
      dir.file("tuned.json"),
      R"({"format":"ringscope-settings","version":1,"settings":{"fusion_threshold_bytes":4096,)"
      R"("cycle_time_ms":7,"cache_enabled":true,"cache_capacity":99},"provenance":{}})");
  std::string trace = dir.file("dir with space/a.sqlite");
  std::string marker = dir.file("injected");
  std::string nasty = "x $(touch " + marker + "); 'q' \"dq\" `touch " + marker + "`";
  ProgramResult r = run_program(
      {RINGSCOPE_RUN_BIN, "-np", "2", "--settings", dir.file("tuned.json"), "--fusion-threshold-mb",
       "0.5", "--trace", trace, "--verbose", "--", LAUNCHER_ENV_PROBE_BIN,
       "env:RINGSCOPE_FUSION_THRESHOLD", "env:RINGSCOPE_CYCLE_TIME", "env:RINGSCOPE_CACHE_CAPACITY",
       "env:RINGSCOPE_TRACE", "env:RINGSCOPE_STALL_CHECK_SECONDS", "env:HOROVOD_CYCLE_TIME", nasty},
      {{"RINGSCOPE_STALL_CHECK_SECONDS", "7.5"}, {"HOROVOD_CYCLE_TIME", "3"}});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(contains(r.out, "mpirun "));  // --verbose printed the command
  for (int rank : {0, 1}) {
    CHECK(rank_printed(r, rank, "size=2"));
    CHECK(rank_printed(r, rank, "RINGSCOPE_FUSION_THRESHOLD=524288"));  // flag over file
    CHECK(rank_printed(r, rank, "RINGSCOPE_CYCLE_TIME=7"));             // from the file
    CHECK(rank_printed(r, rank, "RINGSCOPE_CACHE_CAPACITY=99"));
    CHECK(rank_printed(r, rank, "RINGSCOPE_TRACE=" + trace));
    CHECK(rank_printed(r, rank, "RINGSCOPE_STALL_CHECK_SECONDS=7.5"));  // forwarded
    CHECK(rank_printed(r, rank, "HOROVOD_CYCLE_TIME=3"));
    CHECK(rank_printed(r, rank, "arg=" + nasty));
  }
  CHECK_FALSE(std::filesystem::exists(marker));
}

TEST_CASE("e2e: the launcher returns mpirun's exit code", "[e2e][mpirun]") {
  ProgramResult r = run_program({RINGSCOPE_RUN_BIN, "-np", "2", LAUNCHER_ENV_PROBE_BIN, "exit=3"});
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code == 3);
}

TEST_CASE("e2e: an mpirun that ignores SIGTERM is killed after the wait it is given", "[e2e]") {
  // Open MPI's mpirun ignores the signal while a daemon on a host it can no
  // longer reach is waited for (tests/mpi/network_cut_test.sh); this one
  // ignores it always. The launcher kills it RINGSCOPE_RUN_KILL_AFTER_SECONDS
  // after forwarding the signal, and says so.
  ringscope::test::TempDir dir;
  const std::string fake = dir.file("mpirun");
  ringscope::test::write_file(fake,
                              "#!/bin/sh\n"
                              "trap 'echo fake mpirun ignores TERM >&2' TERM\n"
                              "i=0; while [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n");
  REQUIRE(chmod(fake.c_str(), 0755) == 0);
  ringscope::test::RunningProgram job(
      {RINGSCOPE_RUN_BIN, "-np", "2", "--", "true"},
      {{"PATH", dir.path() + ":/usr/bin:/bin"}, {"RINGSCOPE_RUN_KILL_AFTER_SECONDS", "1"}});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(kill(job.pid(), SIGTERM) == 0);
  ProgramResult r = job.wait();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err << "\nafter " << seconds << " s");
  CHECK(r.exit_code == 128 + SIGKILL);
  CHECK(contains(r.err, "mpirun did not stop within 1 s of the signal"));
  CHECK(seconds < 30.0);  // a hang guard: the fake mpirun would run 60 s
}

TEST_CASE("e2e: SIGTERM to the launcher stops the job", "[e2e][mpirun]") {
  ringscope::test::RunningProgram job(
      {RINGSCOPE_RUN_BIN, "-np", "2", LAUNCHER_ENV_PROBE_BIN, "sleep=60"});
  // Both ranks are running (they print before they sleep), so the signal
  // stops a job, not a launcher that failed to start one.
  const auto started_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (lines_with(job.stdout_so_far(), "size=2").size() < 2 &&
         std::chrono::steady_clock::now() < started_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(lines_with(job.stdout_so_far(), "size=2").size() == 2);
  auto start = std::chrono::steady_clock::now();
  REQUIRE(kill(job.pid(), SIGTERM) == 0);
  ProgramResult r = job.wait();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  CHECK(r.exit_code != 0);
  CHECK(seconds < 30.0);
}

TEST_CASE("e2e: errors before mpirun starts exit 2 with a clear message", "[e2e]") {
  ProgramResult r = run_program({RINGSCOPE_RUN_BIN, "-np", "2", "/bin/true"},
                                {{"PATH", "/nonexistent-ringscope-test"}});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "mpirun not found on PATH"));
  CHECK(contains(r.err, "openmpi-bin"));

  r = run_program({RINGSCOPE_RUN_BIN, "-np", "-1", "/bin/true"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "-np '-1' is invalid"));

  r = run_program(
      {RINGSCOPE_RUN_BIN, "-np", "2", "--settings", "/nonexistent/s.json", "/bin/true"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "settings file '/nonexistent/s.json'"));

  r = run_program({RINGSCOPE_RUN_BIN, "-np", "2", "/bin/true"},
                  {{"RINGSCOPE_SETTINGS", "/nonexistent/env.json"}});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "RINGSCOPE_SETTINGS names settings file '/nonexistent/env.json'"));

  r = run_program({RINGSCOPE_RUN_BIN, "-np", "2", "--settings", "/tmp", "/bin/true"});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "settings file '/tmp': is a directory"));

  // A bad wait before killing mpirun is found before it starts, not when a
  // stop is under way ('inf' would have waited forever).
  for (const char* bad : {"abc", "inf", "-1"}) {
    r = run_program({RINGSCOPE_RUN_BIN, "-np", "1", "/bin/true"},
                    {{"RINGSCOPE_RUN_KILL_AFTER_SECONDS", bad}});
    CHECK(r.exit_code == 2);
    CHECK(contains(r.err, "RINGSCOPE_RUN_KILL_AFTER_SECONDS '" + std::string(bad) +
                              "' is invalid: expected a number in [0, 86400]"));
  }
}

TEST_CASE("e2e: dispatcher runs ringscope-run --dry-run", "[e2e][dispatcher]") {
  ProgramResult r =
      run_program({RINGSCOPE_DISPATCHER_BIN, "run", "--dry-run", "-np", "3", "--cycle-time-ms",
                   "0.5", "--", "python", "train.py", "--name", "my run"},
                  ringscope::test::launcher_neutral_env("/usr/bin:/bin"));
  INFO("stdout:\n" << r.out << "\nstderr:\n" << r.err);
  REQUIRE(r.exit_code == 0);
  std::string expected = std::string("mpirun ") + (geteuid() == 0 ? "--allow-run-as-root " : "") +
                         "--oversubscribe --bind-to none --tag-output -np 3 "
                         "-x RINGSCOPE_CYCLE_TIME=0.5 -x PATH python train.py --name 'my run'\n";
  CHECK(r.out == expected);
}

TEST_CASE("e2e: dispatcher help and unknown commands", "[e2e][dispatcher]") {
  ProgramResult r = run_program({RINGSCOPE_DISPATCHER_BIN, "--help"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "  run "));
  std::string dir = std::filesystem::path(RINGSCOPE_DISPATCHER_BIN).parent_path();
  CHECK(contains(r.out, "  trace ") == std::filesystem::exists(dir + "/ringscope-trace"));

  r = run_program({RINGSCOPE_DISPATCHER_BIN, "frobnicate"}, {{"PATH", "/usr/bin:/bin"}});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "unknown command 'frobnicate'"));
  CHECK(contains(r.err, "run"));

  r = run_program({RINGSCOPE_DISPATCHER_BIN, "../../bin/sh"});
  CHECK(r.exit_code == 2);

  r = run_program({RINGSCOPE_DISPATCHER_BIN});
  CHECK(r.exit_code == 2);
  CHECK(contains(r.err, "Usage"));

  r = run_program({RINGSCOPE_DISPATCHER_BIN, "help", "run"});
  CHECK(r.exit_code == 0);
  CHECK(contains(r.out, "--fusion-threshold-mb"));
}
