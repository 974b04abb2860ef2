// suggest_next: GP fit, EI over the candidate grid plus the defaults, and the
// comparisons (vs best observed, vs defaults) the CLI and settings file report.
#include "ringscope/autotune/bayes_tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ringscope/autotune/expected_improvement.h"

namespace ringscope::autotune {
namespace {

Gain difference(const GaussianProcess& gp, const TuneSettings& a, const TuneSettings& b) {
  const Eigen::Vector3d xa = encode_settings(a), xb = encode_settings(b);
  double ma, va, mb, vb;
  gp.predict(xa, &ma, &va);
  gp.predict(xb, &mb, &vb);
  const double var = va + vb - 2 * gp.posterior_covariance(xa, xb);
  return Gain{ma - mb, std::sqrt(std::max(var, 0.0))};
}

Prediction predict(const GaussianProcess& gp, const TuneSettings& s) {
  double mean, variance;
  gp.predict(encode_settings(s), &mean, &variance);
  return Prediction{mean, std::sqrt(variance)};
}

std::string percent_text(double percent) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", percent);
  return text;
}

bool same_point(const TuneSettings& a, const TuneSettings& b) {
  return (encode_settings(a) - encode_settings(b)).norm() < 1e-6;
}

// Of the measured settings the model sees as one point (the encoding clamps:
// cycle 0 and 0.1 ms, or fusion 16 and 64 KiB, are one point), the settings
// whose runs scored best on average: those are the ones to recommend.
TuneSettings best_measured_at(const std::vector<Observation>& observations,
                              const TuneSettings& point) {
  std::vector<TuneSettings> settings;
  std::vector<double> sum;
  std::vector<int> count;
  for (const Observation& o : observations) {
    if (o.predicted || !same_point(o.settings, point)) continue;
    const auto it = std::find(settings.begin(), settings.end(), o.settings);
    const size_t i = static_cast<size_t>(it - settings.begin());
    if (it == settings.end()) settings.push_back(o.settings), sum.push_back(0), count.push_back(0);
    sum[i] += o.log_score, ++count[i];
  }
  size_t best = 0;
  for (size_t i = 1; i < settings.size(); ++i)
    if (sum[i] / count[i] > sum[best] / count[best]) best = i;
  return settings.empty() ? point : settings[best];
}

}  // namespace

double Gain::percent() const { return 100.0 * std::expm1(log_gain); }
double Gain::percent_stddev() const { return 100.0 * std::expm1(stddev); }

Status suggest_next(const std::vector<Observation>& given, const TunerOptions& options,
                    Suggestion* out) {
  *out = Suggestion{};
  if (given.empty()) return Status(StatusCode::kInvalidArgument, "no trials to learn from");
  auto fixed = [&](TuneSettings s) {
    if (!options.cache_tunable) s.cache_enabled = false;
    return s;
  };
  std::vector<Observation> observations = given;
  for (Observation& o : observations) o.settings = fixed(o.settings);
  const int n = static_cast<int>(observations.size());
  Eigen::MatrixXd x(n, kInputDims);
  Eigen::VectorXd y(n), noise(n);
  // `distinct`: measured settings only; `modelled`: with what-if predictions.
  std::vector<TuneSettings> distinct, modelled;
  int predicted = 0;
  for (int i = 0; i < n; ++i) {
    const Observation& o = observations[i];
    if (!std::isfinite(o.log_score) || !std::isfinite(o.log_score_variance))
      return Status(StatusCode::kInvalidArgument, "a trial's score is not finite");
    x.row(i) = encode_settings(o.settings).transpose();
    y[i] = o.log_score;
    noise[i] = o.log_score_variance;
    auto add = [&](std::vector<TuneSettings>& list) {
      if (std::none_of(list.begin(), list.end(),
                       [&](const TuneSettings& d) { return same_point(d, o.settings); }))
        list.push_back(o.settings);
    };
    add(modelled);
    if (o.predicted)
      ++predicted;
    else
      add(distinct);
  }
  if (distinct.empty())
    return Status(StatusCode::kInvalidArgument,
                  "no measured trial: what-if predictions alone cannot drive the tuner");
  for (TuneSettings& d : distinct) d = best_measured_at(observations, d);
  out->distinct_settings = static_cast<int>(distinct.size());
  GaussianProcess gp;
  Status s = gp.fit(x, y, noise, options.fit_hyperparameters && modelled.size() >= 3);
  if (!s.ok()) return s;
  out->model = gp.report();

  const TuneSettings defaults = fixed(default_settings());
  out->default_observed = std::any_of(distinct.begin(), distinct.end(), [&](const TuneSettings& d) {
    return same_point(d, defaults);
  });
  out->default_prediction = predict(gp, defaults);

  // Best observed by posterior mean (robust to one lucky noisy measurement).
  out->best_observed_prediction.mean = -1e300;
  for (const TuneSettings& d : distinct) {
    const Prediction p = predict(gp, d);
    if (p.mean > out->best_observed_prediction.mean)
      out->best_observed = d, out->best_observed_prediction = p;
  }
  out->recommended = out->best_observed;
  out->recommended_prediction = out->best_observed_prediction;
  if (out->default_prediction.mean > out->recommended_prediction.mean)
    out->recommended = defaults, out->recommended_prediction = out->default_prediction;
  out->recommended_vs_default = difference(gp, out->recommended, defaults);
  out->recommended_vs_best = difference(gp, out->recommended, out->best_observed);

  // EI over the grid; the defaults are always a candidate.
  const double best = out->best_observed_prediction.mean;
  std::vector<TuneSettings> candidates = candidate_grid();
  candidates.push_back(defaults);
  double max_ei = -1, default_ei = 0;
  TuneSettings argmax = defaults;
  for (TuneSettings& c : candidates) c = fixed(c);
  for (const TuneSettings& c : candidates) {
    const Prediction p = predict(gp, c);
    const double ei = expected_improvement(p.mean, p.stddev, best, options.xi);
    if (ei > max_ei) max_ei = ei, argmax = c;
    if (same_point(c, defaults)) default_ei = std::max(default_ei, ei);
  }
  out->expected_improvement = max_ei;
  if (!out->default_observed && default_ei >= options.default_preference * max_ei) {
    out->next = defaults;
    out->expected_improvement = default_ei;
    out->why = "the runtime defaults are untried and their expected improvement is within " +
               std::to_string(static_cast<int>(100 * (1 - options.default_preference))) +
               "% of the best candidate's";
  } else if (max_ei < options.converged_below) {
    out->converged = true;
    out->next = out->recommended;
    out->why = "converged: no candidate is expected to improve on the best by more than " +
               percent_text(options.converged_below * 100) +
               "; the next run should use the recommendation";
  } else {
    out->next = argmax;
    out->why = "maximum expected improvement over " + std::to_string(candidates.size()) +
               " candidates (grid plus the defaults)";
  }
  out->next_prediction = predict(gp, out->next);
  out->gain_vs_best = difference(gp, out->next, out->best_observed);
  out->gain_vs_default = difference(gp, out->next, defaults);

  if (predicted > 0)
    out->notes.push_back(std::to_string(predicted) +
                         " what-if replay prediction(s) informed the model as lower-confidence "
                         "observations");
  out->exploratory = distinct.size() < 3 || (!out->converged && out->gain_vs_best.log_gain <= 0);
  if (distinct.size() < 3)
    out->notes.push_back("exploratory: " + std::to_string(distinct.size()) +
                         " distinct setting(s) observed; the model is mostly prior and the "
                         "suggestion explores rather than predicts");
  else if (out->exploratory)
    out->notes.push_back(
        "exploratory: the suggestion is chosen for its uncertainty; its predicted mean is not "
        "above the best observed");
  if (out->gain_vs_default.log_gain < 0)
    out->notes.push_back("warning: the next trial is predicted " +
                         percent_text(-out->gain_vs_default.percent()) +
                         " slower than the defaults (128 MiB, 1 ms, cache on); use --pick best "
                         "for the best predicted settings");
  for (const TuneSettings& d : distinct)
    if (same_point(d, out->next) && !out->converged)
      out->notes.push_back("the suggestion re-measures an observed setting (noise is high there)");
  return Status::OK();
}

}  // namespace ringscope::autotune
