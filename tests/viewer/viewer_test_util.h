// Shared setup for the viewer tests: synthetic runs with aligned clocks, and
// the four-rank one (rank 2 the straggler) that the model and search/flow
// tests load.
#pragma once

#include "trace_test_util.h"

namespace ringscope::test {

// A synthetic run of `world_size` ranks whose clocks agree (no offsets).
inline SyntheticRun aligned_run(int world_size, int cycles) {
  SyntheticRun run;
  run.world_size = world_size;
  run.cycles = cycles;
  run.offset_start_per_rank_ns = 0;
  run.offset_end_per_rank_ns = 0;
  return run;
}

inline SyntheticRun four_ranks() {
  SyntheticRun run = aligned_run(4, 12);
  run.straggler_rank = 2;
  return run;
}

}  // namespace ringscope::test
