// The GPU path's copy kernels: a batched copy into or out of the fusion
// buffer that applies a scale factor on the way (prescale, postscale, 1/n),
// up to kCopiesPerLaunch tensors per launch. 16-bit floats are scaled in
// float32, integers in float64 (as the CPU path does). Plain copies (scale 1)
// move 16-byte words when both pointers allow it. CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <vector>

#include "gpu_plan.h"

namespace ringscope::gpu {

// dst = src * scale for every span (counts in elements of `dtype`), enqueued
// on `stream`. Returns the first launch error.
cudaError_t launch_scaled_copies(const std::vector<CopySpan>& spans, DataType dtype, double scale,
                                 cudaStream_t stream);

}  // namespace ringscope::gpu
