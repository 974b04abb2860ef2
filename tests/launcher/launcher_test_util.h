// Helpers for the launcher tests: a temporary directory, writing files, and
// running a program (no shell) with extra environment, capturing its output.
#pragma once

#include "temp_dir.h"

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ringscope::test {

void write_file(const std::string& path, const std::string& text);

struct ProgramResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out;     // stdout
  std::string err;     // stderr
};

// Environment changes for the child: name -> value, or nullopt to unset.
using EnvChanges = std::map<std::string, std::optional<std::string>>;

// Unsets every variable the launcher forwards (RINGSCOPE_*, HOROVOD_*,
// LD_LIBRARY_PATH, PYTHONPATH, VIRTUAL_ENV) and sets PATH to `path`, so an
// expected mpirun command does not depend on the caller's environment.
EnvChanges launcher_neutral_env(const std::string& path);

// A started child whose stdout/stderr go to files in its own TempDir.
class RunningProgram {
 public:
  RunningProgram(const std::vector<std::string>& argv, const EnvChanges& env = {});
  pid_t pid() const { return pid_; }
  ProgramResult wait();               // waits for exit and reads the captured output
  std::string stdout_so_far() const;  // what it has printed until now

 private:
  TempDir dir_;
  pid_t pid_ = -1;
};

// Runs argv[0] (a path) with argv and waits.
ProgramResult run_program(const std::vector<std::string>& argv, const EnvChanges& env = {});

// The lines of `text` that contain `needle`.
std::vector<std::string> lines_with(const std::string& text, const std::string& needle);

}  // namespace ringscope::test
