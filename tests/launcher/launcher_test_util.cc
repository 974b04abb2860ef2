// Implementation of the launcher test helpers (fork/execve with the output
// redirected to files, so no pipe can fill up and block the child).
#include "launcher_test_util.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace ringscope::test {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

RunningProgram::RunningProgram(const std::vector<std::string>& argv, const EnvChanges& env) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) merged[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  for (const auto& [name, value] : env) {
    if (value)
      merged[name] = *value;
    else
      merged.erase(name);
  }
  std::vector<std::string> env_text;
  for (const auto& [name, value] : merged) env_text.push_back(name + "=" + value);
  std::vector<char*> cenv, cargv;
  for (std::string& e : env_text) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  std::vector<std::string> args = argv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::string out_path = dir_.file("stdout"), err_path = dir_.file("stderr");

  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int err_fd = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int null_fd = open("/dev/null", O_RDONLY);
    if (out_fd < 0 || err_fd < 0 || null_fd < 0) _exit(126);
    dup2(null_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    execve(cargv[0], cargv.data(), cenv.data());
    _exit(127);
  }
}

std::string RunningProgram::stdout_so_far() const { return read_all(dir_.file("stdout")); }

ProgramResult RunningProgram::wait() {
  ProgramResult result;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error("waitpid failed");
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.exit_code = 128 + WTERMSIG(status);
  result.out = read_all(dir_.file("stdout"));
  result.err = read_all(dir_.file("stderr"));
  return result;
}

EnvChanges launcher_neutral_env(const std::string& path) {
  EnvChanges changes;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("RINGSCOPE_", 0) == 0 || name.rfind("HOROVOD_", 0) == 0 ||
        name == "LD_LIBRARY_PATH" || name == "PYTHONPATH" || name == "VIRTUAL_ENV")
      changes[name] = std::nullopt;
  }
  changes["PATH"] = path;
  return changes;
}

ProgramResult run_program(const std::vector<std::string>& argv, const EnvChanges& env) {
  return RunningProgram(argv, env).wait();
}

std::vector<std::string> lines_with(const std::string& text, const std::string& needle) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  return lines;
}

}  // namespace ringscope::test
