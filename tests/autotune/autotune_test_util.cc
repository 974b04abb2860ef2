// Generated traces for the autotuner tests (see autotune_test_util.h).
#include "autotune_test_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>

#include <catch2/catch.hpp>

#include "ringscope/trace_schema.h"
#include "ringscope/trace_writer.h"

namespace ringscope::autotune::test {

double expected_bytes_per_second(const GeneratedRun& run) {
  return run.allreduces_per_step * static_cast<double>(run.bytes_per_allreduce) * 1e9 /
         static_cast<double>(run.step_ns);
}

std::vector<std::string> write_generated_run(const std::string& base, const GeneratedRun& run) {
  std::vector<std::string> paths;
  for (int rank = 0; rank < run.world_size; ++rank) {
    const std::string path = per_rank_trace_path(base, rank);
    TraceWriter writer;
    const TuneSettings& s = run.settings;
    REQUIRE(
        writer
            .open(path, rank, run.world_size,
                  {{"run_id", run.run_id},
                   {"fusion_threshold_bytes", std::to_string(s.fusion_threshold_bytes)},
                   {"cycle_time_ms", std::to_string(s.cycle_time_ms)},
                   {"cache_capacity", s.cache_enabled ? std::to_string(run.cache_capacity) : "0"}})
            .ok());
    writer.set_clock_offset_start(0, 1000, 0);
    if (run.record_settings) {
      const std::pair<SettingKey, int64_t> values[] = {
          {SettingKey::kFusionThresholdBytes, s.fusion_threshold_bytes},
          {SettingKey::kCycleTimeNs, static_cast<int64_t>(s.cycle_time_ms * 1e6)},
          {SettingKey::kCacheEnabled, s.cache_enabled ? 1 : 0}};
      for (const auto& [key, value] : values) {
        TraceEvent e;
        e.kind = static_cast<uint16_t>(EventKind::kSettings);
        e.start_ns = e.end_ns = 1'000'000;
        e.peer_send = static_cast<int32_t>(key);
        e.value = value;
        writer.record(e);
      }
    }
    std::mt19937_64 random(run.seed);  // same steps on every rank
    std::uniform_real_distribution<double> unit(-1.0, 1.0);
    int64_t t = 2'000'000;
    for (int step = 0; step < run.steps; ++step) {
      const int64_t length =
          static_cast<int64_t>(run.step_ns * (1.0 + run.jitter_fraction * unit(random)));
      for (int k = 0; k < run.allreduces_per_step; ++k) {  // spread over the step's second half
        TraceEvent e;
        e.kind = static_cast<uint16_t>(EventKind::kAllreduce);
        e.start_ns = t + length / 2 + k * (length / 2) / (run.allreduces_per_step + 1);
        e.end_ns = e.start_ns + (length / 2) / (run.allreduces_per_step + 2);
        e.cycle = step * run.allreduces_per_step + k;
        e.seq_index = 0;
        e.bytes = run.bytes_per_allreduce;
        writer.record(e);
      }
      t += length;
      if (run.mark_steps) {
        TraceEvent mark;
        mark.kind = static_cast<uint16_t>(EventKind::kStep);
        mark.start_ns = mark.end_ns = t;
        mark.aux = step;
        mark.value = step;
        writer.record(mark);
      }
    }
    writer.set_clock_offset_end(0, 1000, t);
    REQUIRE(writer.close().ok());
    paths.push_back(path);
  }
  return paths;
}

int run_command(const std::string& command, std::string* output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string text;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) text.append(buffer, n);
  const int status = pclose(pipe);
  if (output) *output = text;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace ringscope::autotune::test
