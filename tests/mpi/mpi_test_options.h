// Options for the runtimes of the MPI tests, shared by their files.
#pragma once

#include <cstdlib>
#include <string>

#include "ringscope/ringscope.h"

namespace ringscope::testing {

// RINGSCOPE_SHARED_MEMORY=0 (ctest runs every size both ways) exercises the
// ring, recursive doubling and halving-doubling over MPI instead of the
// shared-memory allreduce; RINGSCOPE_CPU_ALLREDUCE=ring the pipelined ring
// for every size.
inline Options test_options() {
  Options o;
  o.settings.cycle_time_ms = 0.5;
  o.op_timeout_seconds = 120;
  o.log_level = 0;
  if (const char* v = std::getenv("RINGSCOPE_SHARED_MEMORY"))
    o.shared_memory = std::string(v) != "0";
  if (const char* v = std::getenv("RINGSCOPE_CPU_ALLREDUCE"); v && std::string(v) == "ring")
    o.cpu_allreduce = CpuAllreduce::kRing;
  return o;
}

}  // namespace ringscope::testing
