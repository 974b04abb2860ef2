// fork/exec/wait with signal forwarding for `ringscope run` (see process_runner.h).
#include "process_runner.h"

#include "launch_plan.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

extern char** environ;

namespace ringscope {
namespace {

volatile sig_atomic_t g_child_pid = 0;
volatile sig_atomic_t g_stop_requested = 0;

// Forwards signals sent by a process (kill, timeout, a scheduler); signals the
// kernel raised for the terminal (Ctrl+C) went to the whole foreground
// process group, mpirun included, and a second copy would make mpirun abort
// without cleaning up. Either way the run has been asked to stop.
void forward_signal(int signo, siginfo_t* info, void*) {
  pid_t child = g_child_pid;
  if (child <= 0) return;
  g_stop_requested = 1;
  bool from_terminal = info != nullptr && info->si_code == SI_KERNEL;
  if (!from_terminal) kill(child, signo);
}

// How long mpirun may take to stop after the signal before it is killed:
// RINGSCOPE_RUN_KILL_AFTER_SECONDS, default 30.
// RINGSCOPE_RUN_KILL_AFTER_SECONDS, default 30 s; read before mpirun starts,
// so a bad value is an error then, not a silent default (or, for "inf", a
// launcher that waits forever) when the job is being stopped.
Status kill_after_seconds(double* out) {
  *out = 30.0;
  const char* v = std::getenv("RINGSCOPE_RUN_KILL_AFTER_SECONDS");
  if (v == nullptr || *v == 0) return Status::OK();
  return parse_flag_number("RINGSCOPE_RUN_KILL_AFTER_SECONDS", v, 0, 86400, out);
}

// Waits for `pid`. Once a stop was requested, mpirun gets kill_after_seconds()
// to end the job; one that is still running then (its daemon on a host it can
// no longer reach waits forever, and it ignores the signal) is killed.
pid_t wait_for_child(pid_t pid, int* status, double limit) {
  pid_t done;
  // Polled, not a blocking waitpid: a signal landing between a check of the
  // flag and a blocking wait would leave that wait uninterrupted and the
  // kill-after timer never started. 20 ms is nothing next to a training run.
  while (!g_stop_requested) {
    done = waitpid(pid, status, WNOHANG);
    if (done > 0 || (done < 0 && errno != EINTR)) return done;
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    done = waitpid(pid, status, WNOHANG);
    if (done != 0) {
      if (done < 0 && errno == EINTR) continue;
      return done;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >= limit)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::cerr << "ringscope run: mpirun did not stop within " << limit
            << " s of the signal (a host may be unreachable); killing it "
               "(RINGSCOPE_RUN_KILL_AFTER_SECONDS sets the wait)\n";
  kill(pid, SIGKILL);
  do {
    done = waitpid(pid, status, 0);
  } while (done < 0 && errno == EINTR);
  return done;
}

bool is_executable_file(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

}  // namespace

std::optional<std::string> find_executable(const std::string& program,
                                           const std::string& path_variable) {
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program)) return program;
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= path_variable.size()) {
    size_t colon = path_variable.find(':', start);
    std::filesystem::path dir =
        path_variable.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (dir.empty()) dir = ".";  // an empty PATH entry means the current directory
    std::string candidate = (dir / program).string();
    if (is_executable_file(candidate)) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return std::nullopt;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const char* eq = std::strchr(*entry, '=');
    if (eq == nullptr) continue;
    env.emplace(std::string(*entry, static_cast<size_t>(eq - *entry)), std::string(eq + 1));
  }
  return env;
}

int run_and_wait(const std::string& executable, const std::vector<std::string>& argv) {
  double kill_after = 0;
  if (Status s = kill_after_seconds(&kill_after); !s.ok()) {
    std::cerr << "ringscope run: " << s.message() << "\n";
    return 2;
  }
  std::vector<char*> cargv;
  for (const std::string& arg : argv) cargv.push_back(const_cast<char*>(arg.c_str()));
  cargv.push_back(nullptr);

  // Block the signals until the child's pid is known, so none is lost.
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  sigaddset(&forwarded, SIGINT);
  sigaddset(&forwarded, SIGTERM);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);

  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    std::cerr << "ringscope run: cannot fork: " << std::strerror(e) << "\n";
    return 127;
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    execv(executable.c_str(), cargv.data());
    int e = errno;
    std::cerr << "ringscope run: cannot run " << executable << ": " << std::strerror(e) << "\n";
    _exit(127);
  }

  g_child_pid = pid;
  struct sigaction action, old_int, old_term;
  std::memset(&action, 0, sizeof(action));
  action.sa_sigaction = forward_signal;
  // No SA_RESTART: the signal must interrupt waitpid, so the wait can give
  // mpirun a deadline (wait_for_child).
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &old_int);
  sigaction(SIGTERM, &action, &old_term);
  sigprocmask(SIG_SETMASK, &previous, nullptr);

  int status = 0;
  const pid_t done = wait_for_child(pid, &status, kill_after);

  g_child_pid = 0;
  g_stop_requested = 0;
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (done < 0) {
    std::cerr << "ringscope run: waiting for mpirun failed: " << std::strerror(errno) << "\n";
    return 127;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 127;
}

}  // namespace ringscope
