// Helpers for the autotuner tests: a temporary directory, a generated traced
// run with known settings, STEP marks and allreduce bytes per step (so the
// expected bytes per second is known), and running the ringscope-tune CLI.
#pragma once

#include "temp_dir.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ringscope/autotune/search_space.h"

namespace ringscope::autotune::test {

using ringscope::test::TempDir;

struct GeneratedRun {
  int world_size = 2;
  int steps = 12;
  int allreduces_per_step = 4;
  int64_t bytes_per_allreduce = 1 << 20;
  int64_t step_ns = 10'000'000;  // nominal step time
  // Step k lasts step_ns * (1 + jitter_fraction * u_k), u_k in [-1, 1] from a
  // fixed-seed generator (0: every step exactly step_ns).
  double jitter_fraction = 0.0;
  uint64_t seed = 1;
  bool mark_steps = true;
  bool record_settings = true;  // SETTINGS events (else only meta keys)
  TuneSettings settings;
  int64_t cache_capacity = 1024;  // meta cache_capacity when the cache is on
  std::string run_id = "generated-run";
};

// Writes per-rank files <base>.rank<r>.sqlite; returns their paths.
std::vector<std::string> write_generated_run(const std::string& base, const GeneratedRun& run);

// Bytes per second every exact window of `run` has (jitter 0).
double expected_bytes_per_second(const GeneratedRun& run);

// Runs `binary args` through the shell; returns the exit code (-1: no normal
// exit) and the combined stdout+stderr in `output`.
int run_command(const std::string& command, std::string* output);

}  // namespace ringscope::autotune::test
