// Element-wise kernels for every DataType. Eigen provides the float16 and
// bfloat16 types and their conversions; loops are written so the compiler
// vectorises the 32/64-bit cases.
#include "dtype_ops.h"
#include "integer_scale.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ringscope {
namespace {

template <typename T>
inline constexpr bool is_16bit_v =
    std::is_same_v<T, Eigen::half> || std::is_same_v<T, Eigen::bfloat16>;

// Min and max that give the same result whichever operand comes first: the
// two ranks of a recursive-doubling exchange each put their own value first,
// and std::min/std::max return their first operand when either is NaN (so
// the ranks disagreed). A NaN wins, as the quiet NaN (a "found NaN" check
// then sees it on every rank); of +0 and -0, min takes -0 and max +0.
template <typename T>
inline T min_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    if (a == b) return std::signbit(a) ? a : b;
  }
  return b < a ? b : a;
}

template <typename T>
inline T max_of(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    if (a == b) return std::signbit(a) ? b : a;
  }
  return a < b ? b : a;
}

// a + b; integers wrap (added as unsigned: a signed overflow is undefined).
template <typename T>
T add_of(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return static_cast<T>(a + b);
  }
}

// a * b; integers wrap (multiplied as 64-bit unsigned: a signed overflow is
// undefined, and uint8/uint16 would be promoted to int and overflow it).
template <typename T>
T mul_of(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<uint64_t>(static_cast<U>(a)) *
                                         static_cast<uint64_t>(static_cast<U>(b))));
  } else {
    return static_cast<T>(a * b);
  }
}

// x truncated toward zero into integer type T, saturating at T's range (NaN
// gives 0): a scaled value out of range is not undefined behaviour, and
// agrees with the GPU kernels, which saturate.
template <typename T>
T to_integer_saturating(double x) {
  if (std::isnan(x)) return T(0);
  constexpr double kBound = static_cast<double>(uint64_t{1} << std::numeric_limits<T>::digits);
  if (x >= kBound) return std::numeric_limits<T>::max();
  if (x <= static_cast<double>(std::numeric_limits<T>::lowest()))
    return std::numeric_limits<T>::lowest();
  return static_cast<T>(x);
}

template <typename T>
void reduce_typed(ReduceOp op, T* __restrict dst, const T* __restrict src, size_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      for (size_t i = 0; i < n; ++i) dst[i] = add_of(dst[i], src[i]);
      break;
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i) dst[i] = min_of(dst[i], src[i]);
      break;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i) dst[i] = max_of(dst[i], src[i]);
      break;
    case ReduceOp::kProduct:
      for (size_t i = 0; i < n; ++i) dst[i] = mul_of(dst[i], src[i]);
      break;
  }
}

template <typename T>
void combine_typed(ReduceOp op, T* __restrict dst, const T* __restrict a, const T* __restrict b,
                   size_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      for (size_t i = 0; i < n; ++i) dst[i] = add_of(a[i], b[i]);
      break;
    case ReduceOp::kMin:
      for (size_t i = 0; i < n; ++i) dst[i] = min_of(a[i], b[i]);
      break;
    case ReduceOp::kMax:
      for (size_t i = 0; i < n; ++i) dst[i] = max_of(a[i], b[i]);
      break;
    case ReduceOp::kProduct:
      for (size_t i = 0; i < n; ++i) dst[i] = mul_of(a[i], b[i]);
      break;
  }
}

// 16-bit floats: widen to float32, combine, round back.
template <typename H>
void reduce_half(ReduceOp op, H* __restrict dst, const H* __restrict src, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float a = static_cast<float>(dst[i]);
    float b = static_cast<float>(src[i]);
    float r = (op == ReduceOp::kMin)       ? min_of(a, b)
              : (op == ReduceOp::kMax)     ? max_of(a, b)
              : (op == ReduceOp::kProduct) ? a * b
                                           : a + b;
    dst[i] = H(r);
  }
}

// A scaling factor, with what integer scaling needs worked out once per call
// rather than once per element. An Average's factor is 1/n, which double
// cannot hold exactly: an exact multiple of n times it can land a few ulps
// below the quotient (49 * (1.0 / 49) is 0.9999999999999999) and truncate one
// too low. A factor that is the reciprocal of an integer therefore divides
// integers exactly instead (truncating toward zero, as the product would).
struct Scale {
  double factor = 1.0;
  int64_t divisor = 0;  // > 0 when factor is 1/divisor

  explicit Scale(double f) : factor(f), divisor(reciprocal_divisor(f)) {}
};

// One element times factor, rounded as every scaling kernel rounds it.
// Floats as Horovod rounds them: a factor 1/n (Average) gives the quotient
// fl(v / n) that TensorFlow's division gives Horovod's Average (float32 as
// the double product, rounded once: v / n is never close enough to a
// float32 rounding boundary for the double's error to matter; double
// divided); any other factor multiplies in the element's type (Horovod's
// ScaleBuffer). Integers in double (snapped to an integer a few ulps away,
// then truncated) or divided exactly (see Scale). 16-bit floats in float32.
// kQuotient is s.divisor > 0, decided once per loop, not per element, so
// the float loops vectorise.
template <bool kQuotient, typename T>
T scale_one(T v, const Scale& s) {
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (kQuotient) return static_cast<float>(static_cast<double>(v) * s.factor);
    return v * static_cast<float>(s.factor);
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (kQuotient) return v / static_cast<T>(s.divisor);
    return v * static_cast<T>(s.factor);
  } else if constexpr (std::is_integral_v<T>) {
    if (s.divisor > 0) return static_cast<T>(static_cast<int64_t>(v) / s.divisor);
    return to_integer_saturating<T>(snap_near_integer(static_cast<double>(v) * s.factor));
  } else {  // Eigen::half / Eigen::bfloat16
    return T(static_cast<float>(v) * static_cast<float>(s.factor));
  }
}

template <typename T>
void scale_typed(T* dst, const T* src, size_t n, double factor) {
  const Scale scale(factor);
  if (scale.divisor > 0)
    for (size_t i = 0; i < n; ++i) dst[i] = scale_one<true>(src[i], scale);
  else
    for (size_t i = 0; i < n; ++i) dst[i] = scale_one<false>(src[i], scale);
}

// One element of op(a, b), times factor when kScale, rounded as combine then
// scale_in_place would round it.
template <ReduceOp kOp, bool kScale, bool kQuotient, typename T>
T combine_scale_one(T a, T b, const Scale& scale) {
  if constexpr (std::is_floating_point_v<T> || std::is_integral_v<T>) {
    const T r = kOp == ReduceOp::kMin       ? min_of(a, b)
                : kOp == ReduceOp::kMax     ? max_of(a, b)
                : kOp == ReduceOp::kProduct ? mul_of(a, b)
                                            : add_of(a, b);
    return kScale ? scale_one<kQuotient>(r, scale) : r;
  } else {  // Eigen::half / Eigen::bfloat16: widen, combine, round, scale, round
    const float x = static_cast<float>(a), y = static_cast<float>(b);
    const T r(kOp == ReduceOp::kMin       ? min_of(x, y)
              : kOp == ReduceOp::kMax     ? max_of(x, y)
              : kOp == ReduceOp::kProduct ? x * y
                                          : x + y);
    return kScale ? scale_one<kQuotient>(r, scale) : r;
  }
}

// a and b may each alias dst or out element for element, so there is no
// __restrict on them; each element is read before it is written and never
// read again, which is what ivdep promises the vectoriser.
template <ReduceOp kOp, bool kScale, bool kQuotient, typename T>
void combine_to_both_run(T* dst, T* out, const T* a, const T* b, size_t n, const Scale& scale) {
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i)
    dst[i] = out[i] = combine_scale_one<kOp, kScale, kQuotient>(a[i], b[i], scale);
}

template <ReduceOp kOp, bool kScale, typename T>
void combine_to_both_loop(T* dst, T* out, const T* a, const T* b, size_t n, double factor) {
  const Scale scale(factor);
  if (kScale && scale.divisor > 0)
    combine_to_both_run<kOp, kScale, true>(dst, out, a, b, n, scale);
  else
    combine_to_both_run<kOp, kScale, false>(dst, out, a, b, n, scale);
}

template <bool kScale, typename T>
void combine_to_both_typed(ReduceOp op, T* dst, T* out, const T* a, const T* b, size_t n,
                           double factor) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      return combine_to_both_loop<ReduceOp::kSum, kScale>(dst, out, a, b, n, factor);
    case ReduceOp::kMin:
      return combine_to_both_loop<ReduceOp::kMin, kScale>(dst, out, a, b, n, factor);
    case ReduceOp::kMax:
      return combine_to_both_loop<ReduceOp::kMax, kScale>(dst, out, a, b, n, factor);
    case ReduceOp::kProduct:
      return combine_to_both_loop<ReduceOp::kProduct, kScale>(dst, out, a, b, n, factor);
  }
}

template <typename Fn>
void dispatch(DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kUInt8:
      return fn(uint8_t{});
    case DataType::kInt32:
      return fn(int32_t{});
    case DataType::kInt64:
      return fn(int64_t{});
    case DataType::kFloat16:
      return fn(Eigen::half{});
    case DataType::kBFloat16:
      return fn(Eigen::bfloat16{});
    case DataType::kFloat32:
      return fn(float{});
    case DataType::kFloat64:
      return fn(double{});
    case DataType::kInt8:
      return fn(int8_t{});
    case DataType::kInt16:
      return fn(int16_t{});
    case DataType::kUInt16:
      return fn(uint16_t{});
  }
}

}  // namespace

void reduce_into(DataType dtype, ReduceOp op, void* dst, const void* src, size_t count) {
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_16bit_v<T>) {
      reduce_half(op, static_cast<T*>(dst), static_cast<const T*>(src), count);
    } else {
      reduce_typed(op, static_cast<T*>(dst), static_cast<const T*>(src), count);
    }
  });
}

void combine(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t count) {
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (is_16bit_v<T>) {
      std::memcpy(dst, a, count * sizeof(T));
      reduce_half(op, static_cast<T*>(dst), static_cast<const T*>(b), count);
    } else {
      combine_typed(op, static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b),
                    count);
    }
  });
}

void combine_scaled_to_both(DataType dtype, ReduceOp op, void* dst, void* out, const void* a,
                            const void* b, size_t count, double factor) {
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto* d = static_cast<T*>(dst);
    auto* o = static_cast<T*>(out);
    const auto* x = static_cast<const T*>(a);
    const auto* y = static_cast<const T*>(b);
    if (factor == 1.0)
      combine_to_both_typed<false>(op, d, o, x, y, count, factor);
    else
      combine_to_both_typed<true>(op, d, o, x, y, count, factor);
  });
}

bool is_16bit_float(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16;
}

void widen_add(DataType dtype, float* acc, const void* src, size_t count, bool first) {
  dispatch(dtype, [&](auto tag) {
    using H = decltype(tag);
    if constexpr (is_16bit_v<H>) {
      const H* x = static_cast<const H*>(src);
      if (first)
        for (size_t i = 0; i < count; ++i) acc[i] = static_cast<float>(x[i]);
      else
        for (size_t i = 0; i < count; ++i) acc[i] += static_cast<float>(x[i]);
    }
  });
}

void narrow_scaled_to_both(DataType dtype, void* dst, void* out, const float* acc, size_t count,
                           double factor) {
  const float f = static_cast<float>(factor);
  dispatch(dtype, [&](auto tag) {
    using H = decltype(tag);
    if constexpr (is_16bit_v<H>) {
      H* d = static_cast<H*>(dst);
      H* o = static_cast<H*>(out);
      for (size_t i = 0; i < count; ++i) d[i] = o[i] = H(acc[i] * f);
    }
  });
}

void scale_in_place(DataType dtype, void* buf, size_t count, double factor) {
  if (factor == 1.0 || count == 0) return;
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    scale_typed(static_cast<T*>(buf), static_cast<const T*>(buf), count, factor);
  });
}

void copy_scaled(DataType dtype, void* dst, const void* src, size_t count, double factor) {
  if (count == 0) return;
  if (factor == 1.0) {
    if (dst != src) std::memcpy(dst, src, count * dtype_size(dtype));
    return;
  }
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    scale_typed(static_cast<T*>(dst), static_cast<const T*>(src), count, factor);
  });
}

void fill_identity(DataType dtype, ReduceOp op, void* buf, size_t count) {
  if (count == 0) return;
  if (op == ReduceOp::kSum || op == ReduceOp::kAverage) {
    std::memset(buf, 0, count * dtype_size(dtype));
    return;
  }
  dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    using L = std::numeric_limits<T>;
    const bool min = op == ReduceOp::kMin;
    T value;
    if (op == ReduceOp::kProduct)
      value = T(1);
    else if constexpr (L::has_infinity)
      value = min ? L::infinity() : T(-L::infinity());
    else
      value = min ? L::max() : L::lowest();
    std::fill_n(static_cast<T*>(buf), count, value);
  });
}

}  // namespace ringscope
