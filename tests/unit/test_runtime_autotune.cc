// Whole runtimes (ranks as threads) with online autotuning and a short
// window: allreduce results stay exact while rank 0 changes the settings many
// times, every rank applies each change at the same cycle, and the trials
// appear as kAutotuneTrial events on rank 0 only; rank 0 writes the chosen
// settings file at shutdown. The ranks train until the tuner has decided (it
// measures wall-clock windows, so a fixed number of steps would be too few on
// a fast machine), deciding together through one more allreduce.
#include <catch2/catch.hpp>

#include <future>
#include <map>
#include <tuple>

#include <stdlib.h>

#include <filesystem>

#include "capture_recorder.h"
#include "local_world.h"
#include "ringscope/autotune/parameter_manager.h"
#include "ringscope/planning/settings_file.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("online autotuning keeps allreduce exact and switches every rank at one cycle",
          "[runtime][autotune]") {
  const int n = 3, max_steps = 50000;
  const std::vector<int64_t> sizes = {16, 3000, 20000, 7, 40000, 512, 9000, 100};
  Options options;
  options.settings.cycle_time_ms = 0.5;
  options.op_timeout_seconds = 30;
  options.log_level = 0;
  options.autotune.enabled = true;
  options.autotune.window_ms = 15;
  options.autotune.warmup_windows = 1;
  options.autotune.windows_per_trial = 2;
  options.autotune.max_trials = 8;
  char dir[] = "/tmp/ringscope-autotune-XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  options.autotune.output_path = std::string(dir) + "/online.json";
  std::vector<CaptureRecorder> recorders(n);
  std::vector<Recorder*> recorder_ptrs;
  for (auto& r : recorders) recorder_ptrs.push_back(&r);
  // Rank 0's tuner has recorded its decision (a kAutotuneTrial at step -2).
  auto decided = [](const CaptureRecorder& rec) {
    for (const TraceEvent& e : rec.events(EventKind::kAutotuneTrial))
      if (e.step == -2) return true;
    return false;
  };
  ThreadChecks checks;
  run_runtimes(
      n, options,
      [&](int r, Runtime& rt) {
        std::vector<std::vector<float>> bufs(sizes.size());
        for (int step = 0; step < max_steps; ++step) {
          if (step % 20 == 19) {  // go on while rank 0's tuner has not decided
            int32_t more = r == 0 && !decided(recorders[0]) ? 1 : 0;
            Status s = run_op(rt, allreduce_entry("more", DataType::kInt32, {1}, &more, &more));
            checks.expect(s.ok(), s.to_string());
            if (!s.ok() || more == 0) break;
          }
          std::vector<std::promise<Status>> done(sizes.size());
          for (size_t i = 0; i < sizes.size(); ++i) {
            bufs[i].resize(sizes[i]);
            for (int64_t x = 0; x < sizes[i]; ++x)
              bufs[i][x] = static_cast<float>(r * 1000 + step + x % 7);
            TensorEntry e = allreduce_entry("grad" + std::to_string(i), DataType::kFloat32,
                                            {sizes[i]}, bufs[i].data(), bufs[i].data());
            e.done = [&done, i](const Status& s) { done[i].set_value(s); };
            Status s = rt.submit(std::move(e));
            if (!s.ok()) done[i].set_value(s);
          }
          for (size_t i = 0; i < sizes.size(); ++i) {
            Status s = done[i].get_future().get();
            checks.expect(s.ok(), s.to_string());
            for (int64_t x = 0; x < sizes[i]; ++x) {
              // Sum over ranks of (rank*1000 + step + x%7): small integers, exact.
              const float want = static_cast<float>(1000 * n * (n - 1) / 2 + n * (step + x % 7));
              if (bufs[i][x] != want) {
                checks.expect(false, "rank " + std::to_string(r) + " step " + std::to_string(step) +
                                         " tensor " + std::to_string(i) + " elem " +
                                         std::to_string(x));
                break;
              }
            }
          }
        }
        // The file is there once the tuner has decided, before shutdown.
        if (r == 0)
          checks.expect(std::filesystem::exists(options.autotune.output_path),
                        "settings file written when tuning ended");
      },
      nullptr, recorder_ptrs, parameter_manager_factory());
  INFO(checks.summary());
  REQUIRE(checks.ok());

  // Every rank saw the same changes, each at the same cycle.
  using Change = std::tuple<int64_t, int32_t, int64_t>;  // cycle, SettingKey, value
  std::vector<std::vector<Change>> changes(n);
  for (int r = 0; r < n; ++r)
    for (const TraceEvent& e : recorders[r].events(EventKind::kSettings))
      changes[r].emplace_back(e.cycle, e.peer_send, e.value);
  INFO("rank 0 applied " << changes[0].size() << " setting changes");
  CHECK(changes[0].size() >= 4);
  for (int r = 1; r < n; ++r) CHECK(changes[r] == changes[0]);

  // Trials (step -1) and their windows (step >= 0) on rank 0 only.
  const auto trials = recorders[0].events(EventKind::kAutotuneTrial);
  int summaries = 0;
  for (const TraceEvent& e : trials) {
    if (e.step != -1) continue;
    ++summaries;
    CHECK(e.value > 0);  // median bytes/s
    CHECK(recorders[0].text(e.name_id).find("trial " + std::to_string(e.aux)) == 0);
  }
  CHECK(summaries >= 3);
  for (int r = 1; r < n; ++r) CHECK(recorders[r].events(EventKind::kAutotuneTrial).empty());

  // Rank 0 wrote the chosen settings at shutdown, as a valid settings file.
  SettingsFile saved;
  Status read = read_settings_file(options.autotune.output_path, &saved);
  INFO(read.to_string());
  REQUIRE(read.ok());
  // The settings written are the ones the decision names.
  REQUIRE(decided(recorders[0]));
  std::string decision;
  for (const TraceEvent& e : trials)
    if (e.step == -2) decision = recorders[0].text(e.name_id);
  Settings chosen;
  chosen.fusion_threshold_bytes = saved.fusion_threshold_bytes;
  chosen.cycle_time_ms = saved.cycle_time_ms;
  chosen.cache_enabled = saved.cache_enabled;
  INFO(decision);
  CHECK(decision.find("(" + describe_settings(chosen) + ",") != std::string::npos);
  CHECK(saved.provenance_json.find("online") != std::string::npos);
  std::filesystem::remove_all(dir);
}
