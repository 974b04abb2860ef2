// Expected improvement (for maximisation) of a Gaussian posterior over the
// best value seen so far: the acquisition function the tuner maximises.
#pragma once

namespace ringscope::autotune {

// E[max(f - best - xi, 0)] for f ~ N(mean, stddev^2). xi >= 0 trades
// exploitation for exploration; stddev == 0 gives max(mean - best - xi, 0).
double expected_improvement(double mean, double stddev, double best, double xi = 0.0);

double normal_pdf(double z);
double normal_cdf(double z);

}  // namespace ringscope::autotune
