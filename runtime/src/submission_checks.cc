// Local checks of a submitted op (see submission_checks.h).
#include "submission_checks.h"

#include "messages.h"
#include "ringscope/ringscope.h"

namespace ringscope {

Status check_submission(const TensorEntry& entry, int rank, int size) {
  const Request& r = entry.req;
  if (r.name.empty()) return Status(StatusCode::kInvalidArgument, "tensor name is empty", rank);
  for (int64_t d : r.shape)
    if (d < 0)
      return Status(StatusCode::kInvalidArgument,
                    "tensor '" + r.name + "' has a negative dimension " + shape_string(r.shape),
                    rank);
  const bool has_data = num_elements(r.shape) > 0;
  bool needs_output = has_data && r.op != OpType::kAllgather;
  if (r.op == OpType::kReducescatter) {
    // A scalar is refused by the coordinator, on every rank alike.
    if (r.on_device())
      return Status(StatusCode::kUnimplemented,
                    "reducescatter of '" + r.name +
                        "': device (GPU) tensors are not supported yet; reducescatter a host copy",
                    rank);
    // This rank's output holds its rows only, which may be none.
    needs_output = has_data && !r.shape.empty() && reducescatter_rows(r.shape[0], size, rank) > 0;
  }
  if ((has_data && !entry.input) || (needs_output && !entry.output))
    return Status(StatusCode::kInvalidArgument, "tensor '" + r.name + "' has a null buffer", rank);
  if (r.op == OpType::kAllgather && !entry.allocate)
    return Status(StatusCode::kInvalidArgument,
                  "allgather of '" + r.name + "' needs an output allocator", rank);
  return Status::OK();
}

}  // namespace ringscope
