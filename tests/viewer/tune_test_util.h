// Shared by the Tune panel's tests (test_tune_session.cc, test_trial_command.cc,
// test_render_tune.cc): a generated traced run with known settings and step
// time, for the autotuner tests' trace generator (autotune_test_util.h), and
// a bounded poll.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "autotune_test_util.h"

namespace ringscope::view::test {

// Polls until the predicate holds; a safety net against hangs (fails the
// test after a minute), not a timing requirement.
template <typename Pred>
bool poll_until(Pred done) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

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
