// Test data for collectives: deterministic per-rank inputs for every dtype,
// reading and writing elements as double, and a plain reference reduction.
#pragma once

#include <Eigen/Core>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ringscope/ringscope.h"

namespace ringscope::testing {

inline void set_element(DataType t, void* buf, size_t i, double v) {
  switch (t) {
    case DataType::kUInt8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case DataType::kFloat16:
      static_cast<Eigen::half*>(buf)[i] = Eigen::half(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<Eigen::bfloat16*>(buf)[i] = Eigen::bfloat16(static_cast<float>(v));
      break;
    case DataType::kFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    case DataType::kInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case DataType::kInt16:
      static_cast<int16_t*>(buf)[i] = static_cast<int16_t>(v);
      break;
    case DataType::kUInt16:
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(v);
      break;
  }
}

inline double get_element(DataType t, const void* buf, size_t i) {
  switch (t) {
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(buf)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(buf)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case DataType::kFloat16:
      return static_cast<float>(static_cast<const Eigen::half*>(buf)[i]);
    case DataType::kBFloat16:
      return static_cast<float>(static_cast<const Eigen::bfloat16*>(buf)[i]);
    case DataType::kFloat32:
      return static_cast<const float*>(buf)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(buf)[i];
    case DataType::kInt8:
      return static_cast<const int8_t*>(buf)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(buf)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(buf)[i];
  }
  return 0;
}

// Small integers (exact in every dtype, also after summing over 8 ranks);
// non-negative for uint8.
inline double input_value(DataType t, int rank, size_t i, int salt = 0) {
  int64_t v = static_cast<int64_t>((rank * 7 + i * 13 + salt * 5) % 11);
  if (t != DataType::kUInt8 && t != DataType::kUInt16) v -= 5;
  return static_cast<double>(v);
}

inline std::vector<uint8_t> make_input(DataType t, int rank, size_t count, int salt = 0) {
  std::vector<uint8_t> buf(count * dtype_size(t) + 1);
  for (size_t i = 0; i < count; ++i) set_element(t, buf.data(), i, input_value(t, rank, i, salt));
  return buf;
}

// x wrapped into integer dtype t's range, as two's complement arithmetic
// leaves it (x is an exact integer in double).
inline double wrapped(DataType t, double x) {
  const size_t bits = 8 * dtype_size(t);
  if (bits >= 32) return x;  // the tests' values never reach these ranges
  const double m = std::ldexp(1.0, static_cast<int>(bits));
  double r = std::fmod(x, m);
  if (r < 0) r += m;
  const bool is_signed = t == DataType::kInt8 || t == DataType::kInt16;
  return is_signed && r >= m / 2 ? r - m : r;
}

// What allreduce must produce at element i over `n` ranks.
inline double expected_allreduce(DataType t, ReduceOp op, int n, size_t i, double pre, double post,
                                 int salt = 0) {
  double acc = 0;
  for (int r = 0; r < n; ++r) {
    double v = input_value(t, r, i, salt) * pre;
    if (is_integer_dtype(t)) v = std::trunc(v);
    if (r == 0)
      acc = v;
    else if (op == ReduceOp::kMin)
      acc = std::min(acc, v);
    else if (op == ReduceOp::kMax)
      acc = std::max(acc, v);
    else if (op == ReduceOp::kProduct)
      acc = is_integer_dtype(t) ? wrapped(t, acc * v) : acc * v;  // integers wrap
    else
      acc += v;
  }
  // Exact arithmetic (then truncation for integers): the runtime must give
  // 49 for an Average of 49s over 49 ranks, where acc * (1.0 / 49) would not.
  double out = acc * post / (op == ReduceOp::kAverage ? n : 1);
  if (is_integer_dtype(t)) out = std::trunc(out);
  return out;
}

inline double tolerance(DataType t, double expected) {
  switch (t) {
    case DataType::kFloat16:
      return 1e-2 * std::max(1.0, std::abs(expected));
    case DataType::kBFloat16:
      return 2e-2 * std::max(1.0, std::abs(expected));
    case DataType::kFloat32:
      return 1e-5 * std::max(1.0, std::abs(expected));
    case DataType::kFloat64:
      return 1e-12 * std::max(1.0, std::abs(expected));
    default:
      return 0;
  }
}

inline const std::vector<DataType>& all_dtypes() {
  static const std::vector<DataType> v = {
      DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,   DataType::kFloat16,
      DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kInt8,
      DataType::kInt16,   DataType::kUInt16};
  return v;
}

}  // namespace ringscope::testing
