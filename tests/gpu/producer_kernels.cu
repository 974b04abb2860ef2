// The GPU tests' stand-ins for TensorFlow's kernels (producer_kernels.h).
#include "producer_kernels.h"

namespace ringscope::test {
namespace {

__global__ void delayed_fill(float* p, size_t n, float value, long long delay_cycles) {
  const long long start = clock64();
  while (clock64() - start < delay_cycles) {
  }
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    p[i] = value;
}

__global__ void scale(const float* in, float* out, size_t n, float factor) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    out[i] = in[i] * factor;
}

unsigned blocks_for(size_t n) {
  const size_t b = (n + 255) / 256;
  return static_cast<unsigned>(b == 0 ? 1 : (b > 1024 ? 1024 : b));
}

}  // namespace

cudaError_t launch_delayed_fill(float* p, size_t n, float value, long long delay_cycles,
                                cudaStream_t stream) {
  delayed_fill<<<blocks_for(n), 256, 0, stream>>>(p, n, value, delay_cycles);
  return cudaGetLastError();
}

cudaError_t launch_scale(const float* in, float* out, size_t n, float factor, cudaStream_t stream) {
  scale<<<blocks_for(n), 256, 0, stream>>>(in, out, n, factor);
  return cudaGetLastError();
}

}  // namespace ringscope::test
