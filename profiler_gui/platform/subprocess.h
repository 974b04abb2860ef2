// Subprocess: one shell command run without blocking the UI (posix_spawn of
// `/bin/sh -c COMMAND` in its own process group), its stdout and stderr
// captured through one pipe into a log, polled once per frame; cancel()
// kills the whole group (mpirun and its ranks included). No ImGui.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "ringscope/status.h"

namespace ringscope::view {

// States: kIdle -(start)-> kRunning -(poll sees the exit)-> kExited;
// kRunning -(cancel, then poll sees the exit)-> kCancelled. start() fails
// without leaving kIdle / the previous final state.
enum class ProcessState { kIdle, kRunning, kExited, kCancelled };

class Subprocess {
 public:
  Subprocess() = default;
  // A running command's group gets SIGTERM, then SIGKILL if it has not
  // exited within kExitWait; it is reaped if it ends within another
  // kExitWait (a process stuck in the kernel is left behind, never waited
  // for without bound).
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Runs `/bin/sh -c command` with stdin from /dev/null, in the viewer's
  // environment plus `env` (name, value; replacing variables of the same
  // name). Errors: already running; the pipe or the spawn failed.
  Status start(const std::string& command,
               const std::vector<std::pair<std::string, std::string>>& env = {});
  // Reads the output produced so far and reaps the child if it exited. Never
  // blocks. Escalates a cancel to SIGKILL when SIGTERM did not end it within
  // kKillGrace. Returns the state after the call.
  ProcessState poll();
  // SIGTERM to the process group (SIGKILL kKillGrace later, from poll()).
  void cancel();

  ProcessState state() const { return state_; }
  bool running() const { return state_ == ProcessState::kRunning; }
  const std::string& command() const { return command_; }
  // Exit status once kExited: the code, or 128 + signal if a signal ended it.
  int exit_code() const { return exit_code_; }
  int term_signal() const { return term_signal_; }  // 0: exited normally
  double elapsed_seconds() const;                   // start to exit (or to now)
  // Captured stdout + stderr; only the last kMaxLogBytes are kept.
  const std::string& log() const { return log_; }
  std::string last_line() const;  // last non-empty line of the log
  std::string log_tail(int lines) const;

  static constexpr size_t kMaxLogBytes = 1 << 20;
  static constexpr std::chrono::seconds kKillGrace{3};
  static constexpr std::chrono::milliseconds kExitWait{1500};  // each of the destructor's waits

 private:
  void read_output();
  void close_pipe();

  ProcessState state_ = ProcessState::kIdle;
  std::string command_;
  pid_t pid_ = -1;
  int pipe_fd_ = -1;
  int exit_code_ = -1, term_signal_ = 0;
  bool cancel_requested_ = false, killed_ = false;
  std::chrono::steady_clock::time_point start_time_, end_time_, cancel_time_;
  std::string log_;
};

// `value` quoted for /bin/sh: 'it'\''s' style, always quoted.
std::string shell_quote(const std::string& value);

}  // namespace ringscope::view
