// GaussianProcess: regression over the unit cube with an ARD Matern 5/2
// kernel, per-observation noise (measured) plus a fitted extra noise term,
// hyperparameters chosen by maximising the log marginal likelihood (plus a
// weak log-normal prior) over a small grid, and Cholesky solves with jitter.
#pragma once

#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/Core>

#include "ringscope/status.h"

namespace ringscope::autotune {

// Hyperparameters in the standardised output scale (targets minus their
// mean, divided by their standard deviation).
struct GpHyperparameters {
  Eigen::VectorXd length_scales;      // one per input dimension, in unit-cube units
  double signal_variance = 1.0;       // k(x, x)
  double extra_noise_variance = 0.0;  // added to every observation's measured noise
};

struct GpFitReport {
  GpHyperparameters chosen;
  double log_marginal_likelihood = 0;  // of the chosen hyperparameters
  double log_prior = 0;
  int grid_points = 0;  // hyperparameter combinations evaluated
  bool fitted = false;  // false: too few points, prior values kept
  double jitter = 0;    // diagonal jitter the Cholesky needed (standardised units)
  double output_mean = 0, output_scale = 1;
  std::string reason;  // why these values (for --explain)
};

class GaussianProcess {
 public:
  // x: n x d inputs in [0,1]^d; y: n targets; noise_variance: n measured noise
  // variances of y (0 allowed). With fit_hyperparameters and n >= 3 the grid
  // search runs; otherwise `prior` (or defaults) is used as is.
  Status fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
             const Eigen::VectorXd& noise_variance, bool fit_hyperparameters = true);
  // Fits with fixed hyperparameters (standardised units).
  Status fit_fixed(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                   const Eigen::VectorXd& noise_variance, const GpHyperparameters& hyper);

  // Posterior mean and variance of the latent function at `point` (y units,
  // without observation noise).
  void predict(const Eigen::VectorXd& point, double* mean, double* variance) const;
  // Posterior covariance of the latent function between two points.
  double posterior_covariance(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const;

  const GpFitReport& report() const { return report_; }
  int size() const { return static_cast<int>(x_.rows()); }
  // Standard deviation of the prior at any point, in y units.
  double prior_stddev() const;

  // Matern 5/2 with ARD length scales.
  static double kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                       const GpHyperparameters& hyper);
  // Prior scale of standardised outputs when there are too few points to
  // estimate it (y units): ln(1.3), a 30% throughput spread.
  static constexpr double kPriorOutputScale = 0.26;

 private:
  // Factorises K + noise for `hyper`; returns the log marginal likelihood.
  Status factorize(const GpHyperparameters& hyper, double* log_ml);

  Eigen::MatrixXd x_;
  Eigen::VectorXd y_standard_, noise_standard_;
  GpHyperparameters hyper_;
  Eigen::LLT<Eigen::MatrixXd> llt_;
  Eigen::VectorXd alpha_;  // (K + noise)^-1 y
  GpFitReport report_;
};

// Defaults used with fewer than 3 observations: length scale 0.4 for the
// continuous axes and 2.0 for a binary axis (last dimension when d == 3).
GpHyperparameters default_hyperparameters(int dims);

}  // namespace ringscope::autotune
