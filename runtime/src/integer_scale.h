// Rounding of an integer scaled in double, and which factors are the
// reciprocal of an integer, shared by the CPU scaling loops (dtype_ops.cc)
// and the GPU copy kernels (gpu/copy_kernels.cu), so both round the same
// products to the same values.
#pragma once

#include <cfloat>
#include <cmath>

#if defined(__CUDACC__)
#define RINGSCOPE_HOST_DEVICE __host__ __device__
#else
#define RINGSCOPE_HOST_DEVICE
#endif

namespace ringscope {

// `p` (an integer times a factor, in double) before it is truncated toward
// zero: a product within its rounding error of an integer is that integer.
// The factor (postscale * (1.0 / n)) rounds twice and the multiply once, so
// p is within 1.5 * DBL_EPSILON * |p| of the true product: 9 * (10 * (1.0 /
// 3)) is 29.999999999999996 and 49 * (1.0 / 49) is 0.9999999999999999, each
// one too low if truncated. The window is that bound (2 * DBL_EPSILON * |r|),
// so a true product further from the integer than its error is truncated as
// it is. Above 2^48 the window reaches 1/8, too wide to tell; p stays as it is.
RINGSCOPE_HOST_DEVICE inline double snap_near_integer(double p) {
  const double r = ::nearbyint(p);
  const double error = ::fabs(p - r);
  return error <= 2 * DBL_EPSILON * ::fabs(r) && ::fabs(r) < 281474976710656.0 /* 2^48 */ ? r : p;
}

// d when `f` is 1/d for an integer d >= 1 (an Average's 1/n, with a
// postscale of 1), else 0. Such a factor divides: integers exactly, and
// floats to the quotient TensorFlow's division gives Horovod's Average.
RINGSCOPE_HOST_DEVICE inline long long reciprocal_divisor(double f) {
  if (!(f > 0 && f <= 1)) return 0;
  const double d = ::nearbyint(1.0 / f);
  return d >= 1 && d < 9.0e18 && ::fabs(1.0 / f - d) <= 1e-12 * d ? static_cast<long long>(d) : 0;
}

}  // namespace ringscope
