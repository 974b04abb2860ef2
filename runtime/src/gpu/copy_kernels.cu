// Batched, scaled copy kernels of the GPU path (see copy_kernels.h). One
// launch handles up to kCopiesPerLaunch tensors: blockIdx.y picks the tensor,
// a grid-stride loop over blockIdx.x covers its elements.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "copy_kernels.h"
#include "integer_scale.h"

namespace ringscope::gpu {
namespace {

struct CopyBatch {
  const void* src[kCopiesPerLaunch];
  void* dst[kCopiesPerLaunch];
  size_t count[kCopiesPerLaunch];  // elements (bytes for copy_bytes_kernel)
};
static_assert(sizeof(CopyBatch) <= 4000, "kernel arguments are limited to 4 KiB");

// Element conversion to and from the type the scale is applied in.
template <typename T, typename C>
__device__ __forceinline__ C widen(T v) {
  return static_cast<C>(v);
}
template <>
__device__ __forceinline__ float widen<__half, float>(__half v) {
  return __half2float(v);
}
template <>
__device__ __forceinline__ float widen<__nv_bfloat16, float>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
// Integers: snapped as the CPU snaps them (integer_scale.h), then truncated
// (the conversion saturates, as the CPU's does).
template <typename T, typename C>
__device__ __forceinline__ T narrow(C v) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(snap_near_integer(static_cast<double>(v)));
  else
    return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half narrow<__half, float>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 narrow<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

// Scales 16-byte words (16 / sizeof(T) elements each) when both pointers are
// 16-byte aligned, then the remaining elements one by one.
template <typename T, typename C>
__global__ void scaled_copy_kernel(CopyBatch batch, C scale) {
  const unsigned t = blockIdx.y;
  const T* src = static_cast<const T*>(batch.src[t]);  // may equal dst (in place)
  T* dst = static_cast<T*>(batch.dst[t]);
  const size_t n = batch.count[t];
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  constexpr size_t kPerWord = sizeof(uint4) / sizeof(T);
  size_t vectorised = 0;
  if (((reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst)) & 15) == 0) {
    const size_t words = n / kPerWord;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (size_t w = tid; w < words; w += stride) {
      uint4 v = s[w];
      T* e = reinterpret_cast<T*>(&v);
#pragma unroll
      for (size_t k = 0; k < kPerWord; ++k) e[k] = narrow<T, C>(widen<T, C>(e[k]) * scale);
      d[w] = v;
    }
    vectorised = words * kPerWord;
  }
  for (size_t i = vectorised + tid; i < n; i += stride)
    dst[i] = narrow<T, C>(widen<T, C>(src[i]) * scale);
}

// Word-wise copy of `count` bytes: uint4 when both pointers are 16-byte
// aligned, 4-byte words when 4-byte aligned, else bytes.
template <typename W>
__device__ __forceinline__ void copy_words(const char* src, char* dst, size_t n, size_t tid,
                                           size_t stride) {
  const size_t words = n / sizeof(W);
  const W* s = reinterpret_cast<const W*>(src);
  W* d = reinterpret_cast<W*>(dst);
  for (size_t i = tid; i < words; i += stride) d[i] = s[i];
  for (size_t i = words * sizeof(W) + tid; i < n; i += stride) dst[i] = src[i];
}

__global__ void copy_bytes_kernel(CopyBatch batch) {
  const unsigned t = blockIdx.y;
  const char* src = static_cast<const char*>(batch.src[t]);
  char* dst = static_cast<char*>(batch.dst[t]);
  const size_t n = batch.count[t];
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const uintptr_t misalign = (reinterpret_cast<uintptr_t>(src) | reinterpret_cast<uintptr_t>(dst));
  if ((misalign & 15) == 0)
    copy_words<uint4>(src, dst, n, tid, stride);
  else if ((misalign & 3) == 0)
    copy_words<uint32_t>(src, dst, n, tid, stride);
  else
    copy_words<char>(src, dst, n, tid, stride);
}

constexpr unsigned kThreads = 256;
constexpr size_t kMaxBlocksX = 2048;

// Enough blocks along x for the largest span (each thread ~8 items: 16-byte
// words on the vector paths, else elements or bytes).
unsigned blocks_for(size_t largest_items) {
  const size_t per_block = kThreads * 8;
  size_t b = (largest_items + per_block - 1) / per_block;
  return static_cast<unsigned>(std::clamp<size_t>(b, 1, kMaxBlocksX));
}

// One launch's descriptors, and the largest span in it.
CopyBatch make_batch(const std::vector<CopySpan>& launch, size_t* largest) {
  CopyBatch b{};
  *largest = 0;
  for (size_t i = 0; i < launch.size(); ++i) {
    b.src[i] = launch[i].src;
    b.dst[i] = launch[i].dst;
    b.count[i] = launch[i].count;
    *largest = std::max(*largest, launch[i].count);
  }
  return b;
}

template <typename T, typename C>
cudaError_t launch_typed(const std::vector<CopySpan>& spans, double scale, cudaStream_t stream) {
  constexpr size_t kPerWord = sizeof(uint4) / sizeof(T);
  for (const std::vector<CopySpan>& launch : batch_copies(spans)) {
    size_t largest = 0, items = 0;
    CopyBatch b = make_batch(launch, &largest);
    // Items per span as scaled_copy_kernel walks it: 16-byte words when both
    // pointers are 16-byte aligned, else elements.
    for (const CopySpan& c : launch) {
      const bool aligned =
          ((reinterpret_cast<uintptr_t>(c.src) | reinterpret_cast<uintptr_t>(c.dst)) & 15) == 0;
      items = std::max(items, aligned ? (c.count + kPerWord - 1) / kPerWord : c.count);
    }
    dim3 grid(blocks_for(items), static_cast<unsigned>(launch.size()));
    scaled_copy_kernel<T, C><<<grid, kThreads, 0, stream>>>(b, static_cast<C>(scale));
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

cudaError_t launch_bytes(const std::vector<CopySpan>& spans, size_t element_size,
                         cudaStream_t stream) {
  std::vector<CopySpan> in_bytes = spans;
  for (CopySpan& s : in_bytes) s.count *= element_size;
  for (const std::vector<CopySpan>& launch : batch_copies(in_bytes)) {
    size_t largest = 0;
    CopyBatch b = make_batch(launch, &largest);
    // A thread moves 16 bytes per word on the aligned path.
    dim3 grid(blocks_for((largest + 15) / 16), static_cast<unsigned>(launch.size()));
    copy_bytes_kernel<<<grid, kThreads, 0, stream>>>(b);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace

cudaError_t launch_scaled_copies(const std::vector<CopySpan>& spans, DataType dtype, double scale,
                                 cudaStream_t stream) {
  if (scale == 1.0) return launch_bytes(spans, dtype_size(dtype), stream);
  switch (dtype) {
    case DataType::kUInt8:
      return launch_typed<uint8_t, double>(spans, scale, stream);
    case DataType::kInt32:
      return launch_typed<int32_t, double>(spans, scale, stream);
    case DataType::kInt64:
      return launch_typed<int64_t, double>(spans, scale, stream);
    case DataType::kFloat16:
      return launch_typed<__half, float>(spans, scale, stream);
    case DataType::kBFloat16:
      return launch_typed<__nv_bfloat16, float>(spans, scale, stream);
    case DataType::kFloat32:
      // As the CPU (dtype_ops.cc): 1/n in double, rounded once; else in float.
      return reciprocal_divisor(scale) > 0 ? launch_typed<float, double>(spans, scale, stream)
                                           : launch_typed<float, float>(spans, scale, stream);
    case DataType::kFloat64:
      return launch_typed<double, double>(spans, scale, stream);
    case DataType::kInt8:
      return launch_typed<int8_t, double>(spans, scale, stream);
    case DataType::kInt16:
      return launch_typed<int16_t, double>(spans, scale, stream);
    case DataType::kUInt16:
      return launch_typed<uint16_t, double>(spans, scale, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace ringscope::gpu
