// Text tables, the --explain section, the settings file with provenance and
// the JSON summary of a tuning step.
#include "ringscope/autotune/tune_report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace ringscope::autotune {
namespace {

std::string printf_string(const char* format, auto... args) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer, format, args...);
  return buffer;
}

std::string format_prediction(const Prediction& p) {
  // Mean in GB/s, the stddev of ln(score) as a relative spread.
  return format_rate(std::exp(p.mean)) + printf_string(" ± %.1f%%", 100 * std::expm1(p.stddev));
}

std::string format_gain(const Gain& g) {
  return printf_string("%+.1f%% ± %.1f%%", g.percent(), g.percent_stddev());
}

nlohmann::json settings_json(const TuneSettings& s) {
  return {{"fusion_threshold_bytes", s.fusion_threshold_bytes},
          {"cycle_time_ms", s.cycle_time_ms},
          {"cache_enabled", s.cache_enabled}};
}

nlohmann::json prediction_json(const Prediction& p) {
  return {{"bytes_per_second", std::exp(p.mean)}, {"ln_mean", p.mean}, {"ln_stddev", p.stddev}};
}

nlohmann::json gain_json(const Gain& g) {
  return {{"percent", g.percent()},
          {"percent_stddev", g.percent_stddev()},
          {"ln_gain", g.log_gain},
          {"ln_stddev", g.stddev}};
}

nlohmann::json trials_json(const std::vector<TraceScore>& trials) {
  nlohmann::json list = nlohmann::json::array();
  for (const TraceScore& t : trials)
    list.push_back({{"trace", t.source},
                    {"run_id", t.run_id},
                    {"settings", settings_json(t.settings)},
                    {"median_bytes_per_second", t.median_bytes_per_second},
                    {"mad_bytes_per_second", t.mad_bytes_per_second},
                    {"iqr_bytes_per_second", t.iqr_bytes_per_second},
                    {"median_step_ms", t.median_step_ms},
                    {"windows", t.windows.size()},
                    {"window_kind", t.step_windows ? "steps" : "collectives"}});
  return list;
}

nlohmann::json suggestion_json(const Suggestion& s) {
  const GpHyperparameters& h = s.model.chosen;
  return {{"next", settings_json(s.next)},
          {"next_predicted", prediction_json(s.next_prediction)},
          {"expected_improvement_ln", s.expected_improvement},
          {"gain_vs_best_observed", gain_json(s.gain_vs_best)},
          {"gain_vs_default", gain_json(s.gain_vs_default)},
          {"best_observed", settings_json(s.best_observed)},
          {"best_observed_predicted", prediction_json(s.best_observed_prediction)},
          {"default_predicted", prediction_json(s.default_prediction)},
          {"default_observed", s.default_observed},
          {"recommended", settings_json(s.recommended)},
          {"recommended_predicted", prediction_json(s.recommended_prediction)},
          {"recommended_vs_default", gain_json(s.recommended_vs_default)},
          {"exploratory", s.exploratory},
          {"converged", s.converged},
          {"why", s.why},
          {"notes", s.notes},
          {"model",
           {{"kernel", "matern52-ard"},
            {"length_scales", std::vector<double>(h.length_scales.data(),
                                                  h.length_scales.data() + h.length_scales.size())},
            {"signal_variance", h.signal_variance},
            {"extra_noise_variance", h.extra_noise_variance},
            {"fitted", s.model.fitted}}}};
}

}  // namespace

std::string format_rate(double bytes_per_second) {
  return printf_string("%.3f GB/s", bytes_per_second / 1e9);
}

void print_trials(const std::vector<TraceScore>& trials, std::ostream& out) {
  out << printf_string("%-3s %-12s %-9s %-6s %-22s %-8s %-10s %s\n", "#", "fusion", "cycle_ms",
                       "cache", "score (median ± MAD)", "windows", "step_ms", "trace");
  for (size_t i = 0; i < trials.size(); ++i) {
    const TraceScore& t = trials[i];
    const std::string fusion =
        t.settings.fusion_threshold_bytes == 0
            ? "off"
            : printf_string("%.4g MiB", t.settings.fusion_threshold_bytes / 1048576.0);
    const std::string score = printf_string("%.3f ± %.3f GB/s", t.median_bytes_per_second / 1e9,
                                            t.mad_bytes_per_second / 1e9);
    const std::string step = t.step_windows ? printf_string("%.2f", t.median_step_ms) : "-";
    out << printf_string("%-3zu %-12s %-9.3g %-6s %-22s %-8zu %-10s %s\n", i, fusion.c_str(),
                         t.settings.cycle_time_ms, t.settings.cache_enabled ? "on" : "off",
                         score.c_str(), t.windows.size(), step.c_str(), t.source.c_str());
    for (const std::string& note : t.notes) out << "    note: " << note << "\n";
  }
}

void print_suggestion(const Suggestion& s, std::ostream& out) {
  out << "\nsuggested next trial" << (s.exploratory ? " (EXPLORATORY)" : "")
      << (s.converged ? " (converged)" : "") << ": " << s.next.to_string() << "\n"
      << "  why: " << s.why << "\n"
      << "  predicted:          " << format_prediction(s.next_prediction) << "\n"
      << "  vs best observed:   " << format_gain(s.gain_vs_best) << "  (best observed "
      << s.best_observed.to_string() << ", model " << format_prediction(s.best_observed_prediction)
      << ")\n"
      << "  vs defaults:        " << format_gain(s.gain_vs_default) << "  (defaults "
      << (s.default_observed ? "observed" : "not observed") << ", model "
      << format_prediction(s.default_prediction) << ")\n"
      << "best predicted settings (--pick best): " << s.recommended.to_string() << ", "
      << format_prediction(s.recommended_prediction) << ", vs defaults "
      << format_gain(s.recommended_vs_default) << "\n";
  for (const std::string& note : s.notes) out << "  " << note << "\n";
}

void print_explanation(const Suggestion& s, std::ostream& out) {
  const GpFitReport& m = s.model;
  const GpHyperparameters& h = m.chosen;
  out << "\nmodel: Gaussian process on ln(bytes/s), Matern 5/2 kernel with one length scale per "
         "input; inputs scaled to [0,1]: log2(fusion threshold) with 'off' below 64 KiB, "
         "log10(cycle ms), cache 0/1\n"
      << printf_string(
             "  length scales: threshold %.3g, cycle %.3g, cache %.3g (unit-cube units; "
             "short = the score changes quickly along that knob)\n",
             h.length_scales[0], h.length_scales[1], h.length_scales[2])
      << printf_string(
             "  signal stddev: %.1f%% of throughput; extra run-to-run noise stddev: "
             "%.1f%% (on top of each trial's measured window noise)\n",
             100 * std::expm1(m.output_scale * std::sqrt(h.signal_variance)),
             100 * std::expm1(m.output_scale * std::sqrt(h.extra_noise_variance)))
      << printf_string("  log marginal likelihood %.3f, log prior %.3f, jitter %.1e\n",
                       m.log_marginal_likelihood, m.log_prior, m.jitter)
      << "  why: " << m.reason << "\n"
      << printf_string(
             "  acquisition: expected improvement over the best observed posterior mean "
             "(%s), max EI %.4f ln units; %d distinct setting(s) observed\n",
             format_rate(std::exp(s.best_observed_prediction.mean)).c_str(), s.expected_improvement,
             s.distinct_settings);
}

Status make_settings_file(const std::vector<TraceScore>& trials, const Suggestion& s, Pick pick,
                          SettingsFile* out) {
  const bool best = pick == Pick::kBest;
  const TuneSettings& chosen = best ? s.recommended : s.next;
  *out = SettingsFile{};
  out->fusion_threshold_bytes = chosen.fusion_threshold_bytes;
  out->cycle_time_ms = chosen.cycle_time_ms;
  out->cache_enabled = chosen.cache_enabled;
  // The cache's capacity is not tuned: keep the largest the trials ran with,
  // so a model with more tensors than the default holds still fits the next run.
  int64_t capacity = 0;
  for (const TraceScore& t : trials) capacity = std::max(capacity, t.cache_capacity);
  if (chosen.cache_enabled && capacity > 0 && capacity != kDefaultCacheCapacity)
    out->cache_capacity = std::min(capacity, kMaxCacheCapacity);
  nlohmann::json provenance = {
      {"tool", "ringscope tune"},
      {"created", utc_timestamp()},
      {"pick", best ? "best predicted" : "next trial (expected improvement)"},
      {"exploratory", !best && s.exploratory},
      {"predicted", prediction_json(best ? s.recommended_prediction : s.next_prediction)},
      {"expected_gain_vs_best_observed", gain_json(best ? s.recommended_vs_best : s.gain_vs_best)},
      {"expected_gain_vs_default", gain_json(best ? s.recommended_vs_default : s.gain_vs_default)},
      {"traces", trials_json(trials)},
      {"suggestion", suggestion_json(s)}};
  out->provenance_json = provenance.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return Status::OK();
}

std::string tune_summary_json(const std::vector<TraceScore>& trials, const Suggestion& s) {
  return nlohmann::json{{"trials", trials_json(trials)}, {"suggestion", suggestion_json(s)}}.dump(
      2, ' ', false, nlohmann::json::error_handler_t::replace);  // a path that is not UTF-8
}

}  // namespace ringscope::autotune
