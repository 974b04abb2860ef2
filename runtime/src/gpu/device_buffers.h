// Grow-only buffers of the GPU path: the device fusion buffer (stream-ordered
// allocation, so growing never waits for the GPU) and the pinned host buffer
// of the hierarchical allreduce's cross-node step. Allocated once and grown
// only when a larger group arrives. CUDA builds only.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace ringscope::gpu {

class DeviceBuffer {
 public:
  ~DeviceBuffer() {
    if (data_) cudaFree(data_);
  }
  uint8_t* data() { return static_cast<uint8_t*>(data_); }
  size_t size() const { return size_; }
  // Ensures `bytes` of capacity, ordered on `stream` (the old buffer is freed
  // after work already queued on the stream has used it).
  cudaError_t reserve(size_t bytes, cudaStream_t stream) {
    if (bytes <= size_) return cudaSuccess;
    const size_t rounded = (bytes + (1u << 20) - 1) & ~size_t{(1u << 20) - 1};
    if (data_) {
      cudaError_t e = cudaFreeAsync(data_, stream);
      data_ = nullptr;
      size_ = 0;
      if (e != cudaSuccess) return e;
    }
    cudaError_t e = cudaMallocAsync(&data_, rounded, stream);
    if (e != cudaSuccess) {
      data_ = nullptr;
      return e;
    }
    size_ = rounded;
    return cudaSuccess;
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

class PinnedBuffer {
 public:
  ~PinnedBuffer() {
    if (data_) cudaFreeHost(data_);
  }
  uint8_t* data() { return static_cast<uint8_t*>(data_); }
  size_t size() const { return size_; }
  // Only when nothing queued may still use it (the caller waits for the stream).
  cudaError_t reserve(size_t bytes) {
    if (bytes <= size_) return cudaSuccess;
    if (data_) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
    cudaError_t e = cudaMallocHost(&data_, bytes);
    if (e == cudaSuccess) size_ = bytes;
    return e;
  }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ringscope::gpu
