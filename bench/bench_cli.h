// Command lines of the benchmarks, parsed with CLI11: every bench has
// --help, and a bad value or an unknown option is a clear error instead of
// being ignored. Under mpirun only rank 0 prints, and every rank exits with
// the same code.
#pragma once

#include <CLI/CLI.hpp>

namespace ringscope::bench {

// Parses argv into `app`. Returns -1 to go on, or the exit code: 0 after
// --help, non-zero after an error (printed only when `print`).
inline int parse_command_line(CLI::App& app, int argc, char** argv, bool print = true) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (print) return app.exit(e);
    return e.get_exit_code();
  }
}

}  // namespace ringscope::bench
