// ringscope-run (`ringscope run`): parses the flags, builds mpirun's argument
// vector (launch_plan.h) and runs mpirun without a shell. Exit code: mpirun's,
// or 2 when the launcher refuses to start (bad flags, settings, hosts, no mpirun).
#include <unistd.h>

#include <iostream>

#include "launch_cli.h"
#include "launch_plan.h"
#include "process_runner.h"
#include "shell_words.h"

int main(int argc, char** argv) {
  using namespace ringscope;
  std::vector<std::string> args(argv + 1, argv + argc);
  LaunchOptions options;
  CliOutcome outcome = parse_launch_command_line(args, &options, std::cout, std::cerr);
  if (!outcome.proceed) return outcome.exit_code;

  EnvMap env = current_environment();
  LaunchPlan plan;
  if (Status s = plan_launch(options, env, geteuid() == 0, &plan); !s.ok()) {
    std::cerr << "ringscope run: " << s.message() << "\n";
    return 2;
  }
  if (options.verbose || options.dry_run) {
    if (!plan.settings_source.empty())
      std::cerr << "ringscope run: settings from " << plan.settings_source << "\n";
    std::cout << shell_join(plan.argv) << std::endl;
  }
  if (options.dry_run) return 0;

  auto path = env.find("PATH");
  std::optional<std::string> mpirun =
      find_executable("mpirun", path == env.end() ? std::string() : path->second);
  if (!mpirun) {
    std::cerr << "ringscope run: mpirun not found on PATH; install Open MPI "
                 "(apt-get install openmpi-bin) or add its bin directory to PATH\n";
    return 2;
  }
  return run_and_wait(*mpirun, plan.argv);
}
