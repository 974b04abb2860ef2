// Shared by the Tune panel's tests (test_tune_session.cc, test_render_tune.cc):
// a generated traced run with known settings and step time, for the
// autotuner tests' trace generator (autotune_test_util.h).
#pragma once

#include <cstdint>
#include <string>

#include "autotune_test_util.h"

namespace ringscope::view::test {

inline autotune::test::GeneratedRun trial_run(const std::string& id, int64_t threshold,
                                              double cycle_ms, int64_t step_ns) {
  autotune::test::GeneratedRun run;
  run.run_id = id;
  run.settings.fusion_threshold_bytes = threshold;
  run.settings.cycle_time_ms = cycle_ms;
  run.step_ns = step_ns;
  return run;
}

}  // namespace ringscope::view::test
