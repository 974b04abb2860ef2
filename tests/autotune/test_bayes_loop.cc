// The tuner in a closed loop on synthetic objectives (deterministic noise):
// from a poor start it must get within 5% of the grid optimum in <= 8
// evaluations; from the optimum (the defaults) it must not recommend worse.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "ringscope/autotune/bayes_tuner.h"

using namespace ringscope::autotune;

namespace {

// ln(bytes/s): a smooth bowl over log threshold x log cycle time with its
// peak at (u0, v0) in unit-cube coordinates, the cache worth +5%.
struct Bowl {
  double u0 = 0.75, v0 = 0.25;  // ~40 MiB, ~0.56 ms
  double threshold_curvature = 1.5, cycle_curvature = 1.0;
  double cache_bonus = 0.05;  // ln gain of cache on (negative: off is better)
  double peak = std::log(2e9);
  double operator()(const TuneSettings& s) const {
    const Eigen::Vector3d x = encode_settings(s);
    return peak - threshold_curvature * (x[0] - u0) * (x[0] - u0) -
           cycle_curvature * (x[1] - v0) * (x[1] - v0) + (s.cache_enabled ? cache_bonus : 0.0);
  }
};

double grid_optimum(const Bowl& f) {
  double best = -1e300;
  for (const TuneSettings& s : candidate_grid()) best = std::max(best, f(s));
  return best;
}

// Runs the loop; returns the best true objective among the evaluations.
double run_loop(const Bowl& f, const TuneSettings& start, int evaluations, double noise_sigma,
                uint64_t seed, std::vector<TuneSettings>* tried) {
  std::mt19937_64 random(seed);
  std::normal_distribution<double> noise(0.0, noise_sigma);
  std::vector<Observation> observations;
  TuneSettings next = start;
  double best_true = -1e300;
  for (int i = 0; i < evaluations; ++i) {
    tried->push_back(next);
    best_true = std::max(best_true, f(next));
    observations.push_back({next, f(next) + noise(random), noise_sigma * noise_sigma});
    Suggestion s;
    REQUIRE(suggest_next(observations, TunerOptions{}, &s).ok());
    next = s.next;
  }
  return best_true;
}

std::string trajectory(const Bowl& f, const std::vector<TuneSettings>& tried, double optimum) {
  std::string text;
  for (const TuneSettings& s : tried)
    text += s.to_string() + " -> " + std::to_string(std::exp(f(s) - optimum)) + "\n";
  return text;
}

}  // namespace

TEST_CASE("BO loop from a poor start reaches 5% of the grid optimum in 8 evaluations", "[loop]") {
  Bowl f;
  f.u0 = 0.62, f.v0 = 0.15;  // ~10 MiB, ~0.28 ms: away from the defaults
  const double optimum = grid_optimum(f);
  const TuneSettings poor{0, 50.0, true};
  REQUIRE(std::exp(f(poor) - optimum) < 0.5);  // the start really is poor
  std::vector<TuneSettings> tried;
  const double best = run_loop(f, poor, 8, 0.01, 42, &tried);
  INFO(trajectory(f, tried, optimum));
  CHECK(std::exp(best - optimum) >= 0.95);
  CHECK(std::exp(best - f(poor)) >= 1.3);
}

TEST_CASE("BO loop over random bowls: most reach 5% of the optimum in 8 evaluations", "[loop]") {
  // 12 bowls with random optima, curvatures and cache preference; a fixed
  // seed. Measured: 11 of 12 (the miss reaches ~94.5%); at least 10 required.
  std::mt19937_64 random(2024);
  std::uniform_real_distribution<double> unit(0, 1);
  int reached = 0;
  std::string log;
  for (int b = 0; b < 12; ++b) {
    Bowl f;
    f.u0 = 0.3 + 0.65 * unit(random), f.v0 = 0.05 + 0.65 * unit(random);
    f.threshold_curvature = 0.6 + 1.5 * unit(random), f.cycle_curvature = 0.5 + unit(random);
    f.cache_bonus = unit(random) < 0.7 ? 0.05 : -0.05;
    const double optimum = grid_optimum(f);
    std::vector<TuneSettings> tried;
    const double ratio =
        std::exp(run_loop(f, TuneSettings{0, 50.0, true}, 8, 0.02, b, &tried) - optimum);
    reached += ratio >= 0.95;
    log += "bowl " + std::to_string(b) + ": " + std::to_string(ratio) + "\n";
  }
  INFO(log);
  CHECK(reached >= 10);
}

TEST_CASE("from good defaults the recommendation is never predicted worse", "[loop]") {
  Bowl f;
  const Eigen::Vector3d d = encode_settings(default_settings());
  f.u0 = d[0], f.v0 = d[1];  // the defaults are the optimum
  std::vector<Observation> observations;
  std::mt19937_64 random(5);
  std::normal_distribution<double> noise(0.0, 0.02);
  TuneSettings next = default_settings();
  Suggestion s;
  for (int i = 0; i < 6; ++i) {
    observations.push_back({next, f(next) + noise(random), 0.02 * 0.02});
    REQUIRE(suggest_next(observations, TunerOptions{}, &s).ok());
    next = s.next;
  }
  // The best-predicted setting is the defaults or statistically equal to
  // them (recommended_vs_default is >= 0 by construction: not checked).
  CHECK(f(s.recommended) >= f(default_settings()) - 2 * 0.02);
  if (s.gain_vs_default.log_gain < 0) {
    bool warned = false;
    for (const std::string& note : s.notes)
      warned |= note.find("slower than the defaults") != std::string::npos;
    CHECK(warned);
  }
}

TEST_CASE("one trial gives an exploratory suggestion", "[loop]") {
  Suggestion s;
  REQUIRE(
      suggest_next({{TuneSettings{0, 50.0, true}, std::log(5e8), 1e-4}}, TunerOptions{}, &s).ok());
  CHECK(s.exploratory);
  CHECK_FALSE(s.next == (TuneSettings{0, 50.0, true}));
  CHECK(s.next == default_settings());  // untried defaults come first
  CHECK(s.next_prediction.stddev > 0.1);
  CHECK_FALSE(s.notes.empty());
}

TEST_CASE("suggest_next rejects bad input", "[loop]") {
  Suggestion s;
  CHECK(suggest_next({}, TunerOptions{}, &s).code() == ringscope::StatusCode::kInvalidArgument);
  CHECK(suggest_next({{default_settings(), NAN, 0}}, TunerOptions{}, &s).code() ==
        ringscope::StatusCode::kInvalidArgument);
}

TEST_CASE("repeats of one setting do not make the tuner call it converged", "[loop]") {
  // Three baseline runs at the defaults within 1% of each other: that spread
  // is run-to-run noise and says nothing about how much settings matter.
  const TuneSettings d = default_settings();
  std::vector<Observation> observations;
  for (double gain : {1.00, 1.01, 0.99}) observations.push_back({d, std::log(1e9 * gain), 1e-5});
  Suggestion s;
  REQUIRE(suggest_next(observations, TunerOptions{}, &s).ok());
  CHECK_FALSE(s.converged);
  CHECK_FALSE(s.next == d);
  CHECK(s.model.output_scale >= 0.26);  // the prior scale, about ln 1.3
}

TEST_CASE("settings the model sees as one point: the better measured one is recommended",
          "[loop]") {
  // Cycle times 0 and 0.1 ms both encode to the bottom of the range.
  const TuneSettings slow{0, 0.0, true}, fast{0, 0.1, true};
  REQUIRE((encode_settings(slow) - encode_settings(fast)).norm() < 1e-9);
  for (bool fast_first : {false, true}) {
    std::vector<Observation> observations = {{slow, std::log(0.5e9), 1e-4},
                                             {fast, std::log(2e9), 1e-4}};
    if (fast_first) std::swap(observations[0], observations[1]);
    Suggestion s;
    REQUIRE(suggest_next(observations, TunerOptions{}, &s).ok());
    CHECK(s.best_observed == fast);
    CHECK(s.distinct_settings == 1);
  }
}
