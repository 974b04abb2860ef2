// ringscope's dtypes and reduce ops as NCCL's. CUDA builds only.
#pragma once

#include <nccl.h>

#include "ringscope/ringscope.h"

namespace ringscope::gpu {

// NCCL has no 16-bit integers: device int16 / uint16 tensors are refused
// at submission (submission_checks.cc), so they never get here.
inline ncclDataType_t nccl_dtype(DataType d) {
  switch (d) {
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kInt16:
    case DataType::kUInt16:
      return ncclFloat16;  // unreachable (see above); two bytes, never reduced
    case DataType::kUInt8:
      return ncclUint8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
  }
  return ncclFloat32;
}

inline ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAverage:
      return ncclAvg;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kProduct:
      return ncclProd;
  }
  return ncclSum;
}

}  // namespace ringscope::gpu
