// Options for the runtimes of the MPI tests, shared by their files.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringscope/ringscope.h"

namespace ringscope::testing {

// The tests' defaults (a short cycle, quiet, a 120 s op timeout) with the
// environment read on top, as init() reads it: ctest runs the same tests
// again with RINGSCOPE_SHARED_MEMORY=0 (the ring, recursive doubling and
// halving-doubling over MPI instead of the shared-memory allreduce),
// RINGSCOPE_CPU_ALLREDUCE=ring or =mpi, and RINGSCOPE_DATA_THREADS=3.
inline Options test_options() {
  Options o;
  o.settings.cycle_time_ms = 0.5;
  o.op_timeout_seconds = 120;
  o.log_level = 0;
  if (Status s = Options::from_env(&o); !s.ok()) {
    std::fprintf(stderr, "test_options: %s\n", s.to_string().c_str());
    std::abort();
  }
  return o;
}

}  // namespace ringscope::testing
