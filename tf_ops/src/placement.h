// Where a kernel's tensors live, as the collective kernels see it: one
// Placement per TensorFlow device type, chosen when the kernel is built. A
// kernel begins one Call per execution, allocates its outputs and enqueues
// its copies, says `ready`, submits to ringscope with `device`, and keeps
// the Call until ringscope's callback has run. The CPU's is in
// ringscope_ops.cc; the GPU's (gpu_placement.cc, builds with CUDA only)
// records TensorFlow's compute stream into a CUDA event that ringscope's
// stream waits for. C++17 (TensorFlow's flags).
#pragma once

#include <cstddef>
#include <memory>

#include "ringscope/ringscope.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace ringscope_tf {

// What one execution keeps until ringscope's callback (a CUDA event).
struct PlacementCall {
  virtual ~PlacementCall() = default;
};

class Placement {
 public:
  using Call = std::shared_ptr<PlacementCall>;  // null where nothing is kept
  virtual ~Placement() = default;

  virtual tensorflow::Status begin(tensorflow::OpKernelContext* ctx, Call* call) const = 0;
  // The inputs, the copies enqueued and the outputs allocated so far may be
  // used from now on. Said again by an output allocator on ringscope's
  // thread (allgather): the runtime waits for it after the allocator.
  virtual tensorflow::Status ready(const Call& call) const = 0;
  virtual ringscope::Device device(const Call& call) const = 0;
  // Copies `bytes` between two buffers on this device, before `ready`.
  virtual tensorflow::Status copy(const Call& call, void* dst, const void* src,
                                  size_t bytes) const = 0;
};

const Placement& cpu_placement();
#if RINGSCOPE_TF_GPU
const Placement& gpu_placement();  // gpu_placement.cc
#endif

}  // namespace ringscope_tf
