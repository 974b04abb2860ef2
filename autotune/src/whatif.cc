// What-if predictions (whatif.h): load and calibrate once, replay the
// recorded settings (the anchor) and every asked setting (a setting that
// fails keeps its row and reason), and present the predictions as a table,
// JSON, or lower-confidence observations for the tuner.
#include "ringscope/autotune/whatif.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "ringscope/autotune/tune_report.h"

namespace ringscope::autotune {
namespace {

nlohmann::json settings_json(const TuneSettings& s) {
  return {{"fusion_threshold_bytes", s.fusion_threshold_bytes},
          {"cycle_time_ms", s.cycle_time_ms},
          {"cache_enabled", s.cache_enabled}};
}

}  // namespace

size_t WhatIfReport::predicted() const {
  return static_cast<size_t>(
      std::count_if(predictions.begin(), predictions.end(),
                    [](const WhatIfPrediction& p) { return p.status.ok(); }));
}

std::vector<TuneSettings> what_if_grid() {
  std::vector<TuneSettings> grid;
  for (bool cache : {true, false})
    for (int64_t mib : {0, 1, 8, 32, 128, 512})
      for (double cycle : {0.1, 1.0, 5.0, 50.0}) grid.push_back({mib << 20, cycle, cache});
  return grid;
}

Status what_if(const std::vector<std::string>& inputs, const std::vector<TuneSettings>& settings,
               const ReplayOptions& options, WhatIfReport* out) {
  RecordedRun run;
  Status s = load_recorded_run_files(inputs, options.score, &run);
  if (!s.ok()) return s;
  return what_if_loaded(std::move(run), settings, options, out);
}

Status what_if_loaded(RecordedRun run, const std::vector<TuneSettings>& settings,
                      const ReplayOptions& options, WhatIfReport* out) {
  *out = WhatIfReport{};
  out->run = std::move(run);
  Status s =
      fit_cost_model(out->run.samples, out->run.world_size, out->run.mpi_allreduce, &out->model);
  if (!s.ok()) return Status(s.code(), "trace '" + out->run.source + "': " + s.message());
  out->model.ring_only = out->run.ring_only;
  s = replay_run(out->run, out->model, out->run.settings, options, &out->at_recorded);
  if (!s.ok()) return s;
  const double raw = out->at_recorded.score.median_bytes_per_second;
  out->anchor = raw > 0 ? out->run.score.median_bytes_per_second / raw : 1.0;
  for (const TuneSettings& candidate : settings) {
    WhatIfPrediction p;
    p.settings = candidate;
    p.status = replay_run(out->run, out->model, candidate, options, &p.replay);
    if (!p.status.ok()) {
      p.replay = ReplayResult{};
      p.replay.settings = candidate;
      out->predictions.push_back(std::move(p));
      continue;
    }
    p.raw_bytes_per_second = p.replay.score.median_bytes_per_second;
    p.anchored_bytes_per_second = p.raw_bytes_per_second * out->anchor;
    p.vs_recorded = p.anchored_bytes_per_second / out->run.score.median_bytes_per_second;
    out->predictions.push_back(std::move(p));
  }
  return Status::OK();
}

std::vector<Observation> what_if_observations(const WhatIfReport& report,
                                              double model_log_variance) {
  std::vector<Observation> out;
  for (const WhatIfPrediction& p : report.predictions) {
    if (!p.status.ok() || p.anchored_bytes_per_second <= 0) continue;
    Observation o;
    o.settings = p.settings;
    o.log_score = std::log(p.anchored_bytes_per_second);
    o.log_score_variance = model_log_variance + report.run.score.log_score_variance;
    o.predicted = true;
    out.push_back(o);
  }
  return out;
}

void print_what_if(const WhatIfReport& report, bool explain, std::ostream& out) {
  const RecordedRun& run = report.run;
  char line[256];
  out << "what-if replay of " << run.source << " (" << run.world_size << " ranks, "
      << run.score.windows.size() << (run.score.step_windows ? " step" : " collective")
      << " windows)\n";
  out << "recorded: " << run.settings.to_string() << ": "
      << format_rate(run.score.median_bytes_per_second) << "; replayed at the same settings: "
      << format_rate(report.at_recorded.score.median_bytes_per_second);
  std::snprintf(line, sizeof line, " (anchor x%.3f applied to every prediction)\n", report.anchor);
  out << line;
  if (explain) out << report.model.describe();
  out << "predicted score (bytes/s, anchored), step time, cycles with work / slow path, "
         "collectives:\n";
  std::vector<const WhatIfPrediction*> order, failed;
  for (const WhatIfPrediction& p : report.predictions)
    (p.status.ok() ? order : failed).push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->anchored_bytes_per_second > b->anchored_bytes_per_second;
  });
  for (const WhatIfPrediction* p : order) {
    std::snprintf(line, sizeof line,
                  "  %-40s %12s  x%5.2f  step %7.2f ms  cycles %6lld / %5lld  %6lld\n",
                  p->settings.to_string().c_str(),
                  format_rate(p->anchored_bytes_per_second).c_str(), p->vs_recorded,
                  p->replay.score.median_step_ms, static_cast<long long>(p->replay.work_cycles),
                  static_cast<long long>(p->replay.slow_cycles),
                  static_cast<long long>(p->replay.collectives));
    out << line;
  }
  for (const WhatIfPrediction* p : failed) {
    std::snprintf(line, sizeof line, "  %-40s not predicted: ", p->settings.to_string().c_str());
    out << line << p->status.message() << "\n";
  }
  if (!failed.empty())
    out << "note: " << failed.size() << " of " << report.predictions.size()
        << " setting(s) could not be predicted and are left out (\"not predicted\" above)\n";
  for (const std::string& n : run.notes) out << "note: " << n << "\n";
  out << "note: predictions come from a model calibrated on one run; expect errors of 10-20% "
         "(docs/autotune.md, \"What-if replay\")\n";
}

std::string what_if_json(const WhatIfReport& report) {
  nlohmann::json j;
  j["source"] = report.run.source;
  j["world_size"] = report.run.world_size;
  j["recorded"] = {{"settings", settings_json(report.run.settings)},
                   {"median_bytes_per_second", report.run.score.median_bytes_per_second},
                   {"median_step_ms", report.run.score.median_step_ms},
                   {"replayed_bytes_per_second", report.at_recorded.score.median_bytes_per_second}};
  j["anchor"] = report.anchor;
  const CostModel& m = report.model;
  j["model"] = {{"ring_alpha_ns", m.ring_step.alpha_ns},
                {"ring_ns_per_byte", m.ring_step.per_unit_ns},
                {"ring_samples", m.ring_step.samples},
                {"collective_overhead_ns_1k", m.overhead_ns(1 << 10)},
                {"collective_overhead_ns_64k", m.overhead_ns(64 << 10)},
                {"collective_overhead_ns_4m", m.overhead_ns(4 << 20)},
                {"collective_overhead_ns_64m", m.overhead_ns(64 << 20)},
                {"negotiate_fast_ns", m.negotiate_fast_ns},
                {"negotiate_slow_alpha_ns", m.negotiate_slow.alpha_ns},
                {"negotiate_slow_per_response_ns", m.negotiate_slow.per_unit_ns},
                {"callback_alpha_ns", m.callback.alpha_ns},
                {"callback_per_response_ns", m.callback.per_unit_ns},
                {"notes", m.notes}};
  nlohmann::json rows = nlohmann::json::array();
  for (const WhatIfPrediction& p : report.predictions) {
    if (!p.status.ok()) {
      rows.push_back({{"settings", settings_json(p.settings)}, {"error", p.status.message()}});
      continue;
    }
    rows.push_back({{"settings", settings_json(p.settings)},
                    {"raw_bytes_per_second", p.raw_bytes_per_second},
                    {"predicted_bytes_per_second", p.anchored_bytes_per_second},
                    {"vs_recorded", p.vs_recorded},
                    {"median_step_ms", p.replay.score.median_step_ms},
                    {"work_cycles", p.replay.work_cycles},
                    {"slow_cycles", p.replay.slow_cycles},
                    {"collectives", p.replay.collectives},
                    {"notes", p.replay.notes}});
  }
  j["predictions"] = rows;
  j["not_predicted"] = report.predictions.size() - report.predicted();
  j["notes"] = report.run.notes;
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // non-UTF-8 paths
}

}  // namespace ringscope::autotune
