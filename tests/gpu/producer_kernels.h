// Kernels that stand in for TensorFlow's work on its compute stream in the
// GPU tests: a producer that writes only after a delay (so an op that does
// not wait for its ready event reads the old contents), and a consumer that
// reads a result on that stream. Launched on the given stream; return the
// launch error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace ringscope::test {

// p[i] = value for i < n, after spinning about `delay_cycles` GPU clocks.
cudaError_t launch_delayed_fill(float* p, size_t n, float value, long long delay_cycles,
                                cudaStream_t stream);
// out[i] = in[i] * factor for i < n.
cudaError_t launch_scale(const float* in, float* out, size_t n, float factor, cudaStream_t stream);

}  // namespace ringscope::test
