// Running a program without a shell: look it up on PATH, fork/exec it with an
// exact argument vector, forward SIGINT/SIGTERM to it and return its exit code.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ringscope {

// The first executable file named `program` in the directories of
// `path_variable` (a PATH value); `program` containing '/' is returned as is
// when executable. nullopt when none is found.
std::optional<std::string> find_executable(const std::string& program,
                                           const std::string& path_variable);

// The current process environment as a map.
std::map<std::string, std::string> current_environment();

// Runs `executable` with `argv` (argv[0] included) in this process's
// environment and waits for it. While it runs, a SIGINT or SIGTERM sent to
// this process with kill() is forwarded to the child; one typed at the
// terminal already reached the child through the process group and is not
// sent twice. A child still running RINGSCOPE_RUN_KILL_AFTER_SECONDS (default
// 30) after such a signal is killed (SIGKILL), saying so on stderr. Returns
// the child's exit code, 128 + signal if it was killed, or 127 (with a
// message on stderr) if it could not be started.
int run_and_wait(const std::string& executable, const std::vector<std::string>& argv);

}  // namespace ringscope
