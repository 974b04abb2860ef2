// Gaussian-process regression: Matern 5/2 ARD kernel, Cholesky with jitter,
// hyperparameters by maximising log marginal likelihood + a weak log-normal
// prior over a grid (length scales x signal variance x extra noise).
#include "ringscope/autotune/gaussian_process.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <numbers>

namespace ringscope::autotune {
namespace {

const std::vector<double> kContinuousLengthScales{0.08, 0.15, 0.25, 0.4, 0.7, 1.2};
const std::vector<double> kBinaryLengthScales{1.5, 3.0, 8.0};
const std::vector<double> kSignalVariances{0.5, 1.0, 2.0, 4.0};
const std::vector<double> kExtraNoiseVariances{0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0};
constexpr double kLengthScalePriorCenter = 0.4;

bool is_binary_dim(int dim, int dims) { return dims == 3 && dim == 2; }

// Weak log-normal priors (sigma 1 in log space) keep few-point fits sane.
double log_prior(const GpHyperparameters& h) {
  double lp = 0;
  const int dims = static_cast<int>(h.length_scales.size());
  for (int d = 0; d < dims; ++d) {
    const double center = is_binary_dim(d, dims) ? 3.0 : kLengthScalePriorCenter;
    const double z = std::log(h.length_scales[d] / center);
    lp -= 0.5 * z * z;
  }
  const double z = std::log(h.signal_variance);
  return lp - 0.5 * z * z;
}

}  // namespace

GpHyperparameters default_hyperparameters(int dims) {
  GpHyperparameters h;
  h.length_scales = Eigen::VectorXd::Constant(dims, kLengthScalePriorCenter);
  if (dims == 3) h.length_scales[2] = 3.0;
  return h;
}

double GaussianProcess::kernel(const Eigen::VectorXd& a, const Eigen::VectorXd& b,
                               const GpHyperparameters& hyper) {
  const double r = ((a - b).array() / hyper.length_scales.array()).matrix().norm();
  const double s = std::sqrt(5.0) * r;
  return hyper.signal_variance * (1.0 + s + s * s / 3.0) * std::exp(-s);
}

Status GaussianProcess::factorize(const GpHyperparameters& hyper, double* log_ml) {
  const int n = size();
  Eigen::MatrixXd k(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j)
      k(i, j) = k(j, i) = kernel(x_.row(i).transpose(), x_.row(j).transpose(), hyper);
  for (int i = 0; i < n; ++i) k(i, i) += noise_standard_[i] + hyper.extra_noise_variance;
  double jitter = 0;
  for (;;) {
    Eigen::MatrixXd kj = k;
    kj.diagonal().array() += jitter;
    llt_.compute(kj);
    if (llt_.info() == Eigen::Success) break;
    jitter = jitter == 0 ? 1e-10 : jitter * 10;
    if (jitter > 1e-2)
      return Status(StatusCode::kInternal, "GP covariance is not positive definite");
  }
  report_.jitter = jitter;
  alpha_ = llt_.solve(y_standard_);
  const Eigen::MatrixXd l = llt_.matrixL();
  *log_ml = -0.5 * y_standard_.dot(alpha_) - l.diagonal().array().log().sum() -
            0.5 * n * std::log(2 * std::numbers::pi);
  return Status::OK();
}

Status GaussianProcess::fit_fixed(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                                  const Eigen::VectorXd& noise_variance,
                                  const GpHyperparameters& hyper) {
  if (x.rows() == 0 || x.rows() != y.size() || y.size() != noise_variance.size() ||
      hyper.length_scales.size() != x.cols())
    return Status(StatusCode::kInvalidArgument, "GP fit: inputs, targets and noise disagree");
  x_ = x;
  const int n = static_cast<int>(y.size());
  const double mean = y.mean();
  const double stddev = n > 1 ? std::sqrt((y.array() - mean).square().sum() / (n - 1)) : 0.0;
  report_ = GpFitReport{};
  report_.output_mean = mean;
  // The scores' spread measures how throughput varies over the space only
  // when they come from 3 or more settings: repeats of one or two settings
  // measure run-to-run noise, and would make every untried setting look
  // like no gain at all (the tuner would call it converged without exploring).
  int distinct_inputs = 0;
  for (int i = 0; i < n && distinct_inputs < 3; ++i) {
    bool seen = false;
    for (int j = 0; j < i && !seen; ++j) seen = (x.row(i) - x.row(j)).norm() < 1e-9;
    if (!seen) ++distinct_inputs;
  }
  report_.output_scale =
      distinct_inputs >= 3 && stddev > 1e-9 ? stddev : std::max(stddev, kPriorOutputScale);
  y_standard_ = (y.array() - mean) / report_.output_scale;
  noise_standard_ = noise_variance.array().max(0.0) / (report_.output_scale * report_.output_scale);
  hyper_ = hyper;
  report_.chosen = hyper;
  report_.log_prior = log_prior(hyper);
  return factorize(hyper, &report_.log_marginal_likelihood);
}

Status GaussianProcess::fit(const Eigen::MatrixXd& x, const Eigen::VectorXd& y,
                            const Eigen::VectorXd& noise_variance, bool fit_hyperparameters) {
  const int dims = static_cast<int>(x.cols());
  Status s = fit_fixed(x, y, noise_variance, default_hyperparameters(dims));
  if (!s.ok()) return s;
  if (!fit_hyperparameters || size() < 3) {
    report_.reason = "prior hyperparameters (" + std::to_string(size()) +
                     " observation(s): fewer than 3, too few to fit length scales)";
    return Status::OK();
  }
  // Enumerate the grid: one index per length scale, then signal, then noise.
  std::vector<const std::vector<double>*> axes;
  for (int d = 0; d < dims; ++d)
    axes.push_back(is_binary_dim(d, dims) ? &kBinaryLengthScales : &kContinuousLengthScales);
  axes.push_back(&kSignalVariances);
  axes.push_back(&kExtraNoiseVariances);
  std::vector<size_t> index(axes.size(), 0);
  double best = -std::numeric_limits<double>::infinity();
  GpHyperparameters best_hyper = hyper_;
  int evaluated = 0;
  for (bool done = false; !done;) {
    GpHyperparameters h;
    h.length_scales.resize(dims);
    for (int d = 0; d < dims; ++d) h.length_scales[d] = (*axes[d])[index[d]];
    h.signal_variance = (*axes[dims])[index[dims]];
    h.extra_noise_variance = (*axes[dims + 1])[index[dims + 1]];
    double log_ml = 0;
    if (factorize(h, &log_ml).ok()) {
      ++evaluated;
      const double objective = log_ml + log_prior(h);
      if (objective > best) best = objective, best_hyper = h;
    }
    size_t a = 0;
    while (a < axes.size() && ++index[a] == axes[a]->size()) index[a++] = 0;
    done = a == axes.size();
  }
  if (evaluated == 0) return Status(StatusCode::kInternal, "GP fit: no hyperparameters worked");
  hyper_ = best_hyper;
  report_.chosen = best_hyper;
  report_.log_prior = log_prior(best_hyper);
  report_.grid_points = evaluated;
  report_.fitted = true;
  report_.reason = "maximum of log marginal likelihood + log-normal prior over " +
                   std::to_string(evaluated) + " grid points";
  return factorize(best_hyper, &report_.log_marginal_likelihood);
}

void GaussianProcess::predict(const Eigen::VectorXd& point, double* mean, double* variance) const {
  const int n = size();
  Eigen::VectorXd k_star(n);
  for (int i = 0; i < n; ++i) k_star[i] = kernel(x_.row(i).transpose(), point, hyper_);
  const double scale = report_.output_scale;
  *mean = report_.output_mean + scale * k_star.dot(alpha_);
  const Eigen::VectorXd v = llt_.matrixL().solve(k_star);
  *variance = std::max(0.0, scale * scale * (hyper_.signal_variance - v.squaredNorm()));
}

double GaussianProcess::posterior_covariance(const Eigen::VectorXd& a,
                                             const Eigen::VectorXd& b) const {
  const int n = size();
  Eigen::VectorXd ka(n), kb(n);
  for (int i = 0; i < n; ++i) {
    ka[i] = kernel(x_.row(i).transpose(), a, hyper_);
    kb[i] = kernel(x_.row(i).transpose(), b, hyper_);
  }
  const double scale = report_.output_scale;
  return scale * scale * (kernel(a, b, hyper_) - ka.dot(llt_.solve(kb)));
}

double GaussianProcess::prior_stddev() const {
  return report_.output_scale * std::sqrt(hyper_.signal_variance);
}

}  // namespace ringscope::autotune
