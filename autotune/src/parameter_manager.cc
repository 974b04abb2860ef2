// ParameterManager: sampling windows, trials, the GP + EI choice of the next
// trial (ringscope_autotune's suggest_next) and the final decision, plus the
// provenance of the settings file written at shutdown.
#include "ringscope/autotune/parameter_manager.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>

#include "ringscope/autotune/bayes_tuner.h"
#include "ringscope/planning/settings_file.h"

namespace ringscope {
namespace {

// A window also needs this many cycles with work, so a 100 ms cycle time
// still yields a few collectives per sample.
constexpr int kMinWorkCycles = 5;
// MAD of 0 (identical windows) still means some noise for the GP.
constexpr double kMinLogVariance = 1e-6;

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double mad_of(const std::vector<double>& v, double median) {
  std::vector<double> dev;
  for (double x : v) dev.push_back(std::abs(x - median));
  return median_of(dev);
}

std::string format_rate(double bytes_per_second) {
  char text[64];
  std::snprintf(text, sizeof text, "%.4g MB/s", bytes_per_second / 1e6);
  return text;
}

nlohmann::json settings_json(const Settings& s) {
  return {{"fusion_threshold_bytes", s.fusion_threshold_bytes},
          {"cycle_time_ms", s.cycle_time_ms},
          {"cache_enabled", s.cache_enabled}};
}

}  // namespace

autotune::TuneSettings to_tune_settings(const Settings& s) {
  return autotune::TuneSettings{s.fusion_threshold_bytes, s.cycle_time_ms, s.cache_enabled};
}

Settings from_tune_settings(const autotune::TuneSettings& s) {
  Settings out;
  out.fusion_threshold_bytes = s.fusion_threshold_bytes;
  out.cycle_time_ms = s.cycle_time_ms;
  out.cache_enabled = s.cache_enabled;
  return out;
}

OnlineTunerFactory parameter_manager_factory() {
  return [](const AutotuneOptions& options, const Settings& initial, bool cache_available) {
    return std::unique_ptr<OnlineTuner>(
        std::make_unique<ParameterManager>(options, initial, cache_available));
  };
}

ParameterManager::ParameterManager(const AutotuneOptions& options, const Settings& initial,
                                   bool cache_available)
    : options_(options),
      initial_(initial),
      cache_available_(cache_available),
      warmup_left_(options.warmup_windows),
      current_(initial) {
  if (!cache_available_) current_.cache_enabled = false;
  phase_ = warmup_left_ > 0 ? Phase::kWarmup : Phase::kMeasure;
  // Trial 0 runs the settings in force; the runtime defaults are always
  // scored, so they come next when they differ.
  Settings defaults = from_tune_settings(autotune::default_settings());
  if (!cache_available_) defaults.cache_enabled = false;
  if (!(to_tune_settings(defaults) == to_tune_settings(current_))) queued_.push_back(defaults);
}

std::optional<Settings> ParameterManager::on_cycle(int64_t bytes, int64_t now_ns,
                                                   std::vector<AutotuneRecord>* records) {
  std::optional<Settings> propose;
  if (phase_ == Phase::kDone) return propose;
  if (window_start_ns_ < 0) {  // the first window starts at the end of this cycle
    window_start_ns_ = now_ns;
    if (phase_ == Phase::kMeasure) trial_start_ns_ = now_ns;
    return propose;
  }
  window_bytes_ += bytes;
  if (bytes > 0) ++window_work_cycles_;
  const double elapsed_ms = (now_ns - window_start_ns_) / 1e6;
  if (bytes > 0 && elapsed_ms >= options_.window_ms && window_work_cycles_ >= kMinWorkCycles)
    close_window(now_ns, records, &propose);
  return propose;
}

void ParameterManager::close_window(int64_t now_ns, std::vector<AutotuneRecord>* records,
                                    std::optional<Settings>* propose) {
  const double seconds = (now_ns - window_start_ns_) / 1e9;
  const double score = window_bytes_ / seconds;
  switch (phase_) {
    case Phase::kWarmup:
      if (--warmup_left_ <= 0) phase_ = Phase::kMeasure, trial_start_ns_ = now_ns;
      break;
    case Phase::kSettle:  // the window that contains the switch is discarded
      phase_ = Phase::kMeasure;
      trial_start_ns_ = now_ns;
      break;
    case Phase::kMeasure: {
      AutotuneRecord r;
      r.kind = AutotuneRecord::Kind::kWindow;
      r.trial = static_cast<int>(trials_.size());
      r.window = static_cast<int>(current_windows_.size());
      r.start_ns = window_start_ns_;
      r.end_ns = now_ns;
      r.bytes = window_bytes_;
      r.bytes_per_second = score;
      records->push_back(r);
      current_windows_.push_back(score);
      trial_bytes_ += window_bytes_;
      if (static_cast<int>(current_windows_.size()) >= options_.windows_per_trial)
        finish_trial(now_ns, records, propose);
      break;
    }
    case Phase::kDone:
      break;
  }
  window_start_ns_ = now_ns;
  window_bytes_ = 0;
  window_work_cycles_ = 0;
}

void ParameterManager::finish_trial(int64_t now_ns, std::vector<AutotuneRecord>* records,
                                    std::optional<Settings>* propose) {
  if (tuning_start_ns_ < 0) tuning_start_ns_ = trial_start_ns_;
  AutotuneTrial t;
  t.id = static_cast<int>(trials_.size());
  t.settings = current_;
  t.window_scores = current_windows_;
  t.median = median_of(current_windows_);
  t.mad = 1.4826 * mad_of(current_windows_, t.median);
  // Noise of ln(median): (pi/2) sigma^2 / n with sigma from the MAD of the
  // windows' ln scores (as the offline scorer does).
  std::vector<double> logs;
  for (double w : current_windows_) logs.push_back(std::log(std::max(w, 1.0)));
  const double log_sigma = 1.4826 * mad_of(logs, median_of(logs));
  t.log_variance = std::max(kMinLogVariance, (M_PI / 2) * log_sigma * log_sigma / logs.size());
  trials_.push_back(t);

  AutotuneRecord r;
  r.kind = AutotuneRecord::Kind::kTrial;
  r.trial = t.id;
  r.start_ns = trial_start_ns_;
  r.end_ns = now_ns;
  r.bytes = trial_bytes_;
  r.bytes_per_second = t.median;
  r.text = "trial " + std::to_string(t.id) + ": " + describe_settings(t.settings) + "; median " +
           format_rate(t.median) + " +- " + format_rate(t.mad) + " over " +
           std::to_string(current_windows_.size()) + " windows";

  std::string why;
  Settings next = choose_next(&why);
  r.text += "; next: " + why;
  records->push_back(r);
  if (!stop_reason_.empty()) {
    phase_ = Phase::kDone;
    const AutotuneTrial& best = trials_[chosen_trial_];
    AutotuneRecord d;
    d.kind = AutotuneRecord::Kind::kDecision;
    d.trial = best.id;
    d.start_ns = tuning_start_ns_;
    d.end_ns = now_ns;
    d.bytes_per_second = best.median;
    d.text = "chose trial " + std::to_string(best.id) + " (" + describe_settings(best.settings) +
             ", median " + format_rate(best.median) + ") after " + std::to_string(trials_.size()) +
             " trials; " + stop_reason_;
    records->push_back(d);
    *propose = best.settings;
    current_ = best.settings;
    return;
  }
  start_trial(next, propose);
}

Settings ParameterManager::choose_next(std::string* why) {
  // The model sees every trial. Without a cache the knob does nothing: the
  // tuner is told so and models every point with the cache off (feeding each
  // trial twice, as cache on and off, made two trials look like four
  // settings and the model call it converged after them).
  std::vector<autotune::Observation> observations;
  for (const AutotuneTrial& t : trials_)
    observations.push_back(
        {to_tune_settings(t.settings), std::log(std::max(t.median, 1.0)), t.log_variance});
  autotune::TunerOptions tuner;
  tuner.cache_tunable = cache_available_;
  autotune::Suggestion suggestion;
  Status s = autotune::suggest_next(observations, tuner, &suggestion);
  const bool limit = static_cast<int>(trials_.size()) >= options_.max_trials;
  if (!s.ok() || limit || (queued_.empty() && suggestion.converged)) {
    stop_reason_ = !s.ok() ? "the model failed (" + s.message() + "); keeping the best median"
                   : limit ? "trial limit (" + std::to_string(options_.max_trials) + ") reached"
                           : suggestion.why;
    // The recommendation is the best posterior mean (robust to one lucky
    // window); the highest median when the model is unavailable.
    chosen_trial_ = 0;
    for (const AutotuneTrial& t : trials_)
      if (t.median > trials_[chosen_trial_].median) chosen_trial_ = t.id;
    if (s.ok()) {
      int match = -1;
      for (const AutotuneTrial& t : trials_)
        if (to_tune_settings(t.settings) == suggestion.recommended ||
            (!cache_available_ &&
             t.settings.fusion_threshold_bytes == suggestion.recommended.fusion_threshold_bytes &&
             std::abs(t.settings.cycle_time_ms - suggestion.recommended.cycle_time_ms) < 1e-9))
          if (match < 0 || t.median > trials_[match].median) match = t.id;
      if (match >= 0) chosen_trial_ = match;
    }
    *why = "stop (" + stop_reason_ + ")";
    return current_;
  }
  Settings next;
  if (!queued_.empty()) {
    next = queued_.front();
    queued_.erase(queued_.begin());
    *why = describe_settings(next) + " (the runtime defaults are always scored)";
  } else {
    next = from_tune_settings(suggestion.next);
    *why = describe_settings(next) + " (" + suggestion.why + ")";
  }
  if (!cache_available_) next.cache_enabled = false;
  return next;
}

void ParameterManager::start_trial(const Settings& settings, std::optional<Settings>* propose) {
  current_ = settings;
  current_windows_.clear();
  trial_bytes_ = 0;
  phase_ = Phase::kSettle;
  *propose = settings;
}

int ParameterManager::best_trial() const {
  if (phase_ == Phase::kDone) return chosen_trial_;
  int best = -1;
  for (const AutotuneTrial& t : trials_)
    if (best < 0 || t.median > trials_[best].median) best = t.id;
  return best;
}

std::string ParameterManager::provenance_json() const {
  nlohmann::json trials = nlohmann::json::array();
  int default_trial = -1;
  // Without a cache the defaults ran with it off, as every trial did.
  autotune::TuneSettings defaults = autotune::default_settings();
  if (!cache_available_) defaults.cache_enabled = false;
  for (const AutotuneTrial& t : trials_) {
    trials.push_back({{"id", t.id},
                      {"settings", settings_json(t.settings)},
                      {"median_bytes_per_second", t.median},
                      {"mad_bytes_per_second", t.mad},
                      {"window_bytes_per_second", t.window_scores}});
    if (default_trial < 0 && to_tune_settings(t.settings) == defaults) default_trial = t.id;
  }
  nlohmann::json p = {{"tool", "ringscope online autotune"},
                      {"source", "online"},
                      {"created", utc_timestamp()},
                      {"finished", done()},
                      {"stop_reason", done() ? stop_reason_ : "shut down before converging"},
                      {"chosen_trial", best_trial()},
                      {"initial_settings", settings_json(initial_)},
                      {"window_ms", options_.window_ms},
                      {"windows_per_trial", options_.windows_per_trial},
                      {"warmup_windows", options_.warmup_windows},
                      {"max_trials", options_.max_trials},
                      {"trials", trials}};
  const int best = best_trial();
  if (default_trial >= 0 && best >= 0 && trials_[default_trial].median > 0) {
    p["default_trial"] = default_trial;
    p["measured_gain_vs_default_percent"] =
        100.0 * (trials_[best].median / trials_[default_trial].median - 1.0);
  }
  return p.dump();
}

}  // namespace ringscope
