// Closed form of expected improvement under a normal posterior.
#include "ringscope/autotune/expected_improvement.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ringscope::autotune {

double normal_pdf(double z) { return std::exp(-0.5 * z * z) / std::sqrt(2 * std::numbers::pi); }

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::numbers::sqrt2); }

double expected_improvement(double mean, double stddev, double best, double xi) {
  const double gain = mean - best - xi;
  if (stddev <= 1e-12) return std::max(gain, 0.0);
  const double z = gain / stddev;
  return std::max(0.0, gain * normal_cdf(z) + stddev * normal_pdf(z));
}

}  // namespace ringscope::autotune
