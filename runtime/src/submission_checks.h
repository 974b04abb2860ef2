// What Runtime::submit checks on this rank alone before an op is queued:
// the name, the shape, the buffers each op needs. Errors name the tensor.
#pragma once

#include "ringscope/status.h"
#include "tensor_queue.h"

namespace ringscope {

// OK, or kInvalidArgument / kUnimplemented naming the tensor and the
// problem. `rank` and `size` are this rank's place in the world (a
// reducescatter's output holds this rank's rows only).
Status check_submission(const TensorEntry& entry, int rank, int size);

}  // namespace ringscope
