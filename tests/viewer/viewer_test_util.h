// Shared setup for the viewer tests: the synthetic four-rank run (rank 2 the
// straggler, clocks aligned) that the model and search/flow tests load.
#pragma once

#include "trace_test_util.h"

namespace ringscope::test {

inline SyntheticRun four_ranks() {
  SyntheticRun run;
  run.world_size = 4;
  run.cycles = 12;
  run.straggler_rank = 2;
  run.offset_start_per_rank_ns = 0;
  run.offset_end_per_rank_ns = 0;
  return run;
}

}  // namespace ringscope::test
