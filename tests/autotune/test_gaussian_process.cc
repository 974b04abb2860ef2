// GaussianProcess and expected improvement: interpolation of noiseless data,
// uncertainty away from data, recovery of a known noise level, EI's
// preference for high means and for unexplored regions, and the encoding.
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "ringscope/autotune/expected_improvement.h"
#include "ringscope/autotune/gaussian_process.h"
#include "ringscope/autotune/search_space.h"

using namespace ringscope::autotune;

namespace {

double smooth_function(double a, double b) { return std::sin(3 * a) + 0.5 * std::cos(2 * b); }

}  // namespace

TEST_CASE("GP interpolates noiseless data", "[gp]") {
  const int n = 12;
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n), noise = Eigen::VectorXd::Zero(n);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < n; ++i) {
    x(i, 0) = unit(random), x(i, 1) = unit(random);
    y[i] = smooth_function(x(i, 0), x(i, 1));
  }
  GaussianProcess gp;
  REQUIRE(gp.fit(x, y, noise).ok());
  CHECK(gp.report().fitted);
  for (int i = 0; i < n; ++i) {
    double mean, variance;
    gp.predict(x.row(i).transpose(), &mean, &variance);
    CHECK(mean == Approx(y[i]).margin(0.03));
    CHECK(std::sqrt(variance) < 0.1);
  }
}

TEST_CASE("GP uncertainty grows away from the data", "[gp]") {
  Eigen::MatrixXd x(3, 2);
  x << 0.1, 0.1, 0.15, 0.2, 0.2, 0.1;
  Eigen::VectorXd y(3), noise = Eigen::VectorXd::Constant(3, 1e-4);
  y << 1.0, 1.2, 0.9;
  GaussianProcess gp;
  REQUIRE(gp.fit(x, y, noise, false).ok());
  double previous = -1;
  for (double d : {0.15, 0.3, 0.5, 0.8, 1.0}) {
    double mean, variance;
    gp.predict(Eigen::Vector2d(d, d), &mean, &variance);
    CHECK(variance > previous);
    previous = variance;
  }
  double mean, variance;
  gp.predict(Eigen::Vector2d(1.0, 1.0), &mean, &variance);
  CHECK(std::sqrt(variance) == Approx(gp.prior_stddev()).epsilon(0.05));  // back to the prior
}

TEST_CASE("GP fit recovers a known noise level", "[gp]") {
  // 40 noisy samples of a smooth function, no measured noise given: the
  // fitted extra noise must find the true sigma (0.1) within a factor ~2.
  const int n = 40;
  const double sigma = 0.1;
  Eigen::MatrixXd x(n, 2);
  Eigen::VectorXd y(n), measured = Eigen::VectorXd::Zero(n);
  std::mt19937_64 random(11);
  std::uniform_real_distribution<double> unit(0, 1);
  std::normal_distribution<double> normal(0, sigma);
  for (int i = 0; i < n; ++i) {
    x(i, 0) = unit(random), x(i, 1) = unit(random);
    y[i] = smooth_function(x(i, 0), x(i, 1)) + normal(random);
  }
  GaussianProcess gp;
  REQUIRE(gp.fit(x, y, measured).ok());
  const GpFitReport& r = gp.report();
  const double fitted_sigma = r.output_scale * std::sqrt(r.chosen.extra_noise_variance);
  CHECK(fitted_sigma > sigma / 2);
  CHECK(fitted_sigma < sigma * 2);

  // Given the true noise as measured noise, little extra noise is needed.
  GaussianProcess informed;
  REQUIRE(informed.fit(x, y, Eigen::VectorXd::Constant(n, sigma * sigma)).ok());
  const GpFitReport& ri = informed.report();
  CHECK(ri.output_scale * std::sqrt(ri.chosen.extra_noise_variance) < sigma);
}

TEST_CASE("GP Cholesky survives duplicated noiseless points", "[gp]") {
  Eigen::MatrixXd x(4, 2);
  x << 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.2, 0.9;
  Eigen::VectorXd y(4), noise = Eigen::VectorXd::Zero(4);
  y << 1.0, 1.0, 1.0, 0.5;
  GaussianProcess gp;
  REQUIRE(gp.fit_fixed(x, y, noise, default_hyperparameters(2)).ok());
  CHECK(gp.report().jitter > 0);
  double mean, variance;
  gp.predict(Eigen::Vector2d(0.5, 0.5), &mean, &variance);
  CHECK(mean == Approx(1.0).margin(1e-3));
}

TEST_CASE("expected improvement prefers high means and unexplored regions", "[ei]") {
  CHECK(expected_improvement(1.2, 0.1, 1.0) > expected_improvement(1.0, 0.1, 1.0));
  CHECK(expected_improvement(1.0, 0.3, 1.0) > expected_improvement(1.0, 0.05, 1.0));
  CHECK(expected_improvement(0.5, 0.0, 1.0) == 0.0);
  CHECK(expected_improvement(1.5, 0.0, 1.0) == Approx(0.5));
  CHECK(expected_improvement(1.0, 0.2, 1.0) == Approx(0.2 * normal_pdf(0)));

  // Through a GP: a point far from the data beats a point next to an observation
  // with the same posterior mean region.
  Eigen::MatrixXd x(2, 2);
  x << 0.1, 0.1, 0.2, 0.1;
  Eigen::VectorXd y(2), noise = Eigen::VectorXd::Constant(2, 1e-4);
  y << 1.0, 1.0;
  GaussianProcess gp;
  REQUIRE(gp.fit(x, y, noise, false).ok());
  double m_near, v_near, m_far, v_far;
  gp.predict(Eigen::Vector2d(0.15, 0.1), &m_near, &v_near);
  gp.predict(Eigen::Vector2d(0.9, 0.9), &m_far, &v_far);
  CHECK(expected_improvement(m_far, std::sqrt(v_far), 1.0) >
        expected_improvement(m_near, std::sqrt(v_near), 1.0));
}

TEST_CASE("search space encodes log scales and fusion off", "[space]") {
  const Eigen::Vector3d off = encode_settings({0, 1.0, true});
  const Eigen::Vector3d smallest = encode_settings({64 << 10, 0.1, false});
  const Eigen::Vector3d largest = encode_settings({512ll << 20, 100.0, true});
  CHECK(off[0] == 0.0);
  CHECK(smallest[0] > 0.1);
  CHECK(smallest[1] == 0.0);
  CHECK(largest[0] == Approx(1.0));
  CHECK(largest[1] == Approx(1.0));
  CHECK(smallest[2] == 0.0);
  for (const TuneSettings& s : {TuneSettings{0, 50, true}, TuneSettings{128ll << 20, 1, true},
                                TuneSettings{1 << 20, 2.5, false}}) {
    CHECK(decode_settings(encode_settings(s)) == s);
  }
  const std::vector<TuneSettings> grid = candidate_grid();
  CHECK(grid.size() == 6588);
  CHECK(std::count(grid.begin(), grid.end(), default_settings()) == 1);
}
