// How the Tune panel runs a trial: the subprocess runner (output, exit code,
// cancel of a whole process group, a destructor that reaps what it started)
// and the command template (values passed as environment variables, so a
// path is one word however the template quotes it).
#include <signal.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autotune_test_util.h"
#include "subprocess.h"
#include "tune_session.h"
#include "tune_test_util.h"

using namespace ringscope;
using namespace ringscope::view;
using autotune::test::TempDir;
using ringscope::view::test::poll_until;

namespace {
bool wait_process(Subprocess& p) {
  return poll_until([&] { return p.poll() != ProcessState::kRunning; });
}
}  // namespace

TEST_CASE("subprocess: output and exit code", "[tune][subprocess]") {
  Subprocess p;
  REQUIRE(p.start("echo hi; echo oops >&2; exit 3").ok());
  CHECK(p.running());
  CHECK_FALSE(p.start("true").ok());  // one at a time
  REQUIRE(wait_process(p));
  CHECK(p.state() == ProcessState::kExited);
  CHECK(p.exit_code() == 3);
  CHECK(p.term_signal() == 0);
  CHECK(p.log() == "hi\noops\n");
  CHECK(p.last_line() == "oops");
  CHECK(p.log_tail(1) == "oops");
  CHECK(p.log_tail(5) == "hi\noops");

  REQUIRE(p.start("printf 'a\\nb\\n\\n'; exit 0").ok());
  REQUIRE(wait_process(p));
  CHECK(p.exit_code() == 0);
  CHECK(p.last_line() == "b");
}

TEST_CASE("subprocess: cancel kills the command and its children", "[tune][subprocess]") {
  TempDir dir;
  const std::string pid_file = dir.file("child.pid");
  Subprocess p;
  // A background grandchild (like mpirun's ranks) and a foreground sleep.
  REQUIRE(
      p.start("sleep 100 & echo $! > " + shell_quote(pid_file) + "; echo started; sleep 100").ok());
  REQUIRE(poll_until([&] {
    p.poll();
    return p.log().find("started") != std::string::npos;
  }));
  pid_t child = 0;
  std::ifstream(pid_file) >> child;
  REQUIRE(child > 0);
  p.cancel();
  REQUIRE(wait_process(p));
  CHECK(p.state() == ProcessState::kCancelled);
  CHECK((p.term_signal() == SIGTERM || p.term_signal() == SIGKILL));  // killed, not finished
  // The grandchild is gone too (reaped by init once killed).
  CHECK(poll_until([&] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, name, state;
    return !(stat >> pid >> name >> state) || state == "Z";
  }));
}

TEST_CASE("command template: values are passed as environment variables", "[tune]") {
  TrialCommand cmd;
  REQUIRE(expand_command_template(
              default_trial_command(),
              {{"bin", "/opt/rs bin"}, {"settings", "/tmp/it's.json"}, {"trace", "/tmp/t.sqlite"}},
              &cmd)
              .ok());
  CHECK(cmd.command ==
        "\"${RINGSCOPE_TRIAL_BIN}\"/ringscope run -np 2 --settings \"${RINGSCOPE_TRIAL_SETTINGS}\" "
        "--trace \"${RINGSCOPE_TRIAL_TRACE}\" -- \"${RINGSCOPE_TRIAL_BIN}\"/synthetic_gradients "
        "--steps 20");
  using Env = std::vector<std::pair<std::string, std::string>>;
  CHECK(cmd.env == Env{{"RINGSCOPE_TRIAL_BIN", "/opt/rs bin"},
                       {"RINGSCOPE_TRIAL_SETTINGS", "/tmp/it's.json"},
                       {"RINGSCOPE_TRIAL_TRACE", "/tmp/t.sqlite"}});
  // Braces that are no placeholder, in quotes, stay as they are.
  REQUIRE(expand_command_template("awk '{print}' {trace}", {{"trace", "t"}}, &cmd).ok());
  CHECK(cmd.command == "awk '{print}' \"${RINGSCOPE_TRIAL_TRACE}\"");

  CHECK_FALSE(expand_command_template("run --settings {settings}", {{"settings", "s"}}, &cmd).ok());
  CHECK_FALSE(expand_command_template("run {dir} {trace}", {{"trace", "t"}}, &cmd).ok());
  CHECK_FALSE(
      expand_command_template("run '{trace}", {{"trace", "t"}}, &cmd).ok());  // unterminated
  CHECK_FALSE(expand_command_template("run \\{trace}", {{"trace", "t"}}, &cmd).ok());  // escaped
}

TEST_CASE("command template: a hostile path is one word however the template quotes it",
          "[tune][run]") {
  TempDir dir;
  const std::string marker = dir.file("expanded");
  // Spaces, both quotes, command substitution both ways, a glob, a newline.
  const std::string value =
      dir.file("a b") + "'\"$(touch " + marker + ")`touch " + marker + "`*\n;x";
  const std::pair<std::string, std::string> cases[] = {
      {"printf '%s|' {trace}", value + "|"},
      {"printf '%s|' '{trace}'", value + "|"},
      {"printf '%s|' \"{trace}\"", value + "|"},
      {"printf '%s|' x{trace}y", "x" + value + "y|"},
      {"printf '%s|' \"[{trace}]\" '<{trace}>' {dir}", "[" + value + "]|<" + value + ">|d d|"},
  };
  for (const auto& [command_template, expected] : cases) {
    INFO(command_template);
    TrialCommand cmd;
    REQUIRE(
        expand_command_template(command_template, {{"trace", value}, {"dir", "d d"}}, &cmd).ok());
    Subprocess p;
    REQUIRE(p.start(cmd.command, cmd.env).ok());
    REQUIRE(wait_process(p));
    CHECK(p.exit_code() == 0);
    CHECK(p.log() == expected);
    CHECK_FALSE(std::filesystem::exists(marker));  // nothing in the path was run
  }
}

TEST_CASE("subprocess destructor: SIGTERM first, SIGKILL if ignored, reaped either way",
          "[tune][process]") {
  TempDir dir;
  auto read_pid = [](const std::string& file) {
    pid_t pid = 0;
    std::ifstream in(file);
    in >> pid;
    return pid;
  };
  const std::string term_file = dir.file("got-term"), pid_file = dir.file("pid");
  pid_t shell = 0;
  {
    Subprocess p;
    REQUIRE(p.start("trap 'echo term > " + shell_quote(term_file) + "; exit 0' TERM; echo $$ > " +
                    shell_quote(pid_file) + "; sleep 100 & wait")
                .ok());
    REQUIRE(poll_until([&] {
      p.poll();
      return (shell = read_pid(pid_file)) > 0;
    }));
  }  // ~Subprocess: SIGTERM, which the command handles and exits
  CHECK(std::filesystem::exists(term_file));          // asked to stop before any SIGKILL
  CHECK((::kill(shell, 0) == -1 && errno == ESRCH));  // reaped: no zombie left

  const std::string pid_file2 = dir.file("pid2");
  shell = 0;
  {
    Subprocess p;
    REQUIRE(
        p.start("trap '' TERM; echo $$ > " + shell_quote(pid_file2) + "; sleep 100 & wait").ok());
    REQUIRE(poll_until([&] {
      p.poll();
      return (shell = read_pid(pid_file2)) > 0;
    }));
  }  // ~Subprocess: SIGTERM is ignored, SIGKILL after a bounded wait
  CHECK((::kill(shell, 0) == -1 && errno == ESRCH));
}
