// Names and sizes of the value types (types.h).
#include "ringscope/types.h"

#include <cstdio>

namespace ringscope {

size_t dtype_size(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
      return 1;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
    case DataType::kFloat16:
      return 2;
    case DataType::kBFloat16:
      return 2;
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kInt8:
      return 1;
    case DataType::kInt16:
    case DataType::kUInt16:
      return 2;
  }
  return 0;
}

bool is_integer_dtype(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16:
    case DataType::kBFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
      return false;
    default:
      return true;
  }
}

const char* dtype_name(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
      return "uint8";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt8:
      return "int8";
    case DataType::kInt16:
      return "int16";
    case DataType::kUInt16:
      return "uint16";
  }
  return "?";
}

const char* cpu_allreduce_name(CpuAllreduce algorithm) {
  switch (algorithm) {
    case CpuAllreduce::kAuto:
      return "auto";
    case CpuAllreduce::kMpi:
      return "mpi";
    case CpuAllreduce::kRing:
      return "ring";
  }
  return "?";
}

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAverage:
      return "average";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kProduct:
      return "product";
  }
  return "?";
}

int64_t num_elements(const Shape& shape) {
  // A zero dim first: [2^40, 2^40, 0] has no elements, and multiplying the
  // others first would overflow (undefined). Sizes that overflow otherwise
  // are refused at submission (submission_checks.cc).
  for (int64_t d : shape)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string describe_settings(const Settings& s) {
  char fusion[48];
  const double bytes = static_cast<double>(s.fusion_threshold_bytes);
  if (s.fusion_threshold_bytes == 0)
    std::snprintf(fusion, sizeof fusion, "off");
  else if (bytes >= (1 << 20))
    std::snprintf(fusion, sizeof fusion, "%.4g MiB", bytes / (1 << 20));
  else
    std::snprintf(fusion, sizeof fusion, "%.4g KiB", bytes / 1024);
  char text[128];
  std::snprintf(text, sizeof text, "fusion %s, cycle %.3g ms, cache %s", fusion, s.cycle_time_ms,
                s.cache_enabled ? "on" : "off");
  return text;
}

}  // namespace ringscope
