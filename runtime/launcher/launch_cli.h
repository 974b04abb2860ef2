// The command line of `ringscope run` (CLI11): flags up to the training
// command, which follows `--` or starts at the first word that is not a flag.
// Horovod's single-dash `-np` is accepted next to `--np`.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "launch_plan.h"

namespace ringscope {

struct CliOutcome {
  bool proceed = false;  // options parsed; go on and launch
  int exit_code = 0;     // when !proceed: 0 after --help, 2 after a usage error
};

// Parses `args` (argv without argv[0]) into `options`. Help goes to `out`,
// usage errors to `err`.
CliOutcome parse_launch_command_line(const std::vector<std::string>& args, LaunchOptions* options,
                                     std::ostream& out, std::ostream& err);

// `args` with horovodrun's single-dash `-np` / `-hostfile` among the
// launcher's own flags written as `--np` / `--hostfile`, and `--flag=` (an
// empty value) as `--flag ""`; words of the training command are never
// touched. `value_flags` are the flags that take a value word.
std::vector<std::string> normalize_np_flag(const std::vector<std::string>& args,
                                           const std::vector<std::string>& value_flags);

}  // namespace ringscope
