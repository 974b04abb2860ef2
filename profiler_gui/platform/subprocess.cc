// Subprocess (see subprocess.h): posix_spawn into a new process group, a
// non-blocking pipe for stdout + stderr, waitpid(WNOHANG) from poll(), and
// SIGTERM then SIGKILL to the group on cancel.
#include "subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

extern char** environ;

namespace ringscope::view {

std::string shell_quote(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

namespace {

// Reaps `pid` if it exits before `deadline` (polling; waitpid itself has no
// timeout). False: still running at the deadline, or not our child.
bool reap_before(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return true;
    if (r < 0 && errno != EINTR) return errno == ECHILD;  // already reaped elsewhere
    if (std::chrono::steady_clock::now() >= deadline) return false;
    ::usleep(5000);
  }
}

}  // namespace

Subprocess::~Subprocess() {
  if (state_ == ProcessState::kRunning) {
    ::kill(-pid_, SIGTERM);
    if (!reap_before(pid_, std::chrono::steady_clock::now() + kExitWait)) {
      ::kill(-pid_, SIGKILL);
      reap_before(pid_, std::chrono::steady_clock::now() + kExitWait);
    } else {
      ::kill(-pid_, SIGKILL);  // leftovers of the group that ignored SIGTERM
    }
  }
  close_pipe();
}

Status Subprocess::start(const std::string& command,
                         const std::vector<std::pair<std::string, std::string>>& env) {
  if (state_ == ProcessState::kRunning)
    return Status(StatusCode::kInvalidArgument, "a command is already running");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status(StatusCode::kIoError, std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Own process group, so cancel() reaches everything the command starts;
  // default signal dispositions and an empty mask, whatever the viewer set.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  // The environment: ours, minus the names `env` sets, plus `env`.
  std::vector<std::string> variables;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    if (std::none_of(env.begin(), env.end(), [&](const auto& v) { return v.first == name; }))
      variables.emplace_back(entry);
  }
  for (const auto& [name, value] : env) variables.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& v : variables) envp.push_back(v.data());
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, "/bin/sh", &actions, &attr, const_cast<char**>(argv), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return Status(StatusCode::kIoError, std::string("cannot start /bin/sh: ") + std::strerror(rc));
  }
  ::fcntl(fds[0], F_SETFL, ::fcntl(fds[0], F_GETFL) | O_NONBLOCK);
  close_pipe();
  pipe_fd_ = fds[0];
  pid_ = pid;
  command_ = command;
  state_ = ProcessState::kRunning;
  exit_code_ = -1;
  term_signal_ = 0;
  cancel_requested_ = killed_ = false;
  log_.clear();
  start_time_ = end_time_ = std::chrono::steady_clock::now();
  return Status::OK();
}

void Subprocess::read_output() {
  if (pipe_fd_ < 0) return;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(pipe_fd_, buffer, sizeof buffer);
    if (n > 0) {
      log_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) close_pipe();  // every writer closed it
    break;                     // EAGAIN: nothing more for now
  }
  if (log_.size() > kMaxLogBytes) log_.erase(0, log_.size() - kMaxLogBytes);
}

void Subprocess::close_pipe() {
  if (pipe_fd_ >= 0) ::close(pipe_fd_);
  pipe_fd_ = -1;
}

ProcessState Subprocess::poll() {
  if (state_ != ProcessState::kRunning) return state_;
  read_output();
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    end_time_ = std::chrono::steady_clock::now();
    // What the shell wrote before exiting; a background child still holding
    // the pipe must not keep us waiting, so the pipe closes now.
    read_output();
    close_pipe();
    if (WIFEXITED(status)) {
      exit_code_ = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      term_signal_ = WTERMSIG(status);
      exit_code_ = 128 + term_signal_;
    }
    state_ = cancel_requested_ ? ProcessState::kCancelled : ProcessState::kExited;
    if (cancel_requested_) ::kill(-pid_, SIGKILL);  // leftovers of the group
    return state_;
  }
  if (cancel_requested_ && !killed_ &&
      std::chrono::steady_clock::now() - cancel_time_ >= kKillGrace) {
    ::kill(-pid_, SIGKILL);
    killed_ = true;
  }
  return state_;
}

void Subprocess::cancel() {
  if (state_ != ProcessState::kRunning || cancel_requested_) return;
  cancel_requested_ = true;
  cancel_time_ = std::chrono::steady_clock::now();
  ::kill(-pid_, SIGTERM);
}

double Subprocess::elapsed_seconds() const {
  const auto end = state_ == ProcessState::kRunning ? std::chrono::steady_clock::now() : end_time_;
  return std::chrono::duration<double>(end - start_time_).count();
}

std::string Subprocess::last_line() const {
  size_t end = log_.size();
  while (end > 0) {
    const size_t nl = log_.find_last_of("\r\n", end - 1);
    const size_t begin = nl == std::string::npos ? 0 : nl + 1;
    if (end > begin) return log_.substr(begin, end - begin);
    if (nl == std::string::npos) break;
    end = nl;  // an empty line: look further back
  }
  return "";
}

std::string Subprocess::log_tail(int lines) const {
  size_t end = log_.size();
  if (end > 0 && log_[end - 1] == '\n') --end;
  size_t pos = end;
  for (int n = 0; n < lines; ++n) {
    const size_t nl = pos == 0 ? std::string::npos : log_.rfind('\n', pos - 1);
    if (nl == std::string::npos) return log_.substr(0, end);
    pos = nl;
  }
  return log_.substr(pos + 1, end - pos - 1);
}

}  // namespace ringscope::view
