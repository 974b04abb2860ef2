// Local checks of a submitted op (see submission_checks.h).
#include "submission_checks.h"

#include <algorithm>
#include <cmath>

#include "ringscope/planning/messages.h"
#include "ringscope/ringscope.h"

namespace ringscope {

Status check_submission(const TensorEntry& entry, int rank, int size) {
  const Request& r = entry.req;
  if (r.name.empty()) return Status(StatusCode::kInvalidArgument, "tensor name is empty", rank);
  int64_t elements = 1, bytes = 0;
  for (int64_t d : r.shape)
    if (d < 0)
      return Status(StatusCode::kInvalidArgument,
                    "tensor '" + r.name + "' has a negative dimension " + shape_string(r.shape),
                    rank);
  const bool empty = std::find(r.shape.begin(), r.shape.end(), 0) != r.shape.end();
  for (int64_t d : r.shape) {
    if (empty) break;  // zero elements, however large the other dimensions
    if (__builtin_mul_overflow(elements, d, &elements))
      return Status(
          StatusCode::kInvalidArgument,
          "tensor '" + r.name + "' has more elements than 64 bits count " + shape_string(r.shape),
          rank);
  }
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(dtype_size(r.dtype)), &bytes))
    return Status(
        StatusCode::kInvalidArgument,
        "tensor '" + r.name + "' has more bytes than 64 bits count " + shape_string(r.shape), rank);
  if (!std::isfinite(r.prescale) || !std::isfinite(r.postscale))
    return Status(StatusCode::kInvalidArgument,
                  "tensor '" + r.name + "': the scale factors must be finite (prescale " +
                      std::to_string(r.prescale) + ", postscale " + std::to_string(r.postscale) +
                      ")",
                  rank);
  const bool has_data = num_elements(r.shape) > 0;
  bool needs_output = has_data && !varies_dim0(r.op);
  if ((r.dtype == DataType::kInt16 || r.dtype == DataType::kUInt16) && r.on_device())
    return Status(StatusCode::kInvalidArgument,
                  std::string(op_type_name(r.op)) + " of '" + r.name + "': " +
                      dtype_name(r.dtype) +
                      " device (GPU) tensors are not supported: NCCL has no 16-bit integer "
                      "type; pass a host copy, or cast to int32",
                  rank);
  if ((r.op == OpType::kReducescatter || r.op == OpType::kAlltoall) && r.on_device())
    return Status(StatusCode::kUnimplemented,
                  std::string(op_type_name(r.op)) + " of '" + r.name +
                      "': device (GPU) tensors are not supported yet; pass a host copy",
                  rank);
  if (r.op == OpType::kReducescatter) {
    // A scalar is refused by the coordinator, on every rank alike.
    // This rank's output holds its rows only, which may be none.
    needs_output = has_data && !r.shape.empty() && reducescatter_rows(r.shape[0], size, rank) > 0;
  }
  if ((has_data && !entry.input) || (needs_output && !entry.output))
    return Status(StatusCode::kInvalidArgument, "tensor '" + r.name + "' has a null buffer", rank);
  if ((r.op == OpType::kAllgather && !entry.allocate) ||
      (r.op == OpType::kAlltoall && !entry.allocate_alltoall))
    return Status(
        StatusCode::kInvalidArgument,
        std::string(op_type_name(r.op)) + " of '" + r.name + "' needs an output allocator", rank);
  return Status::OK();
}

}  // namespace ringscope
