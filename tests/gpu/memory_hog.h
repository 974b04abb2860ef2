// Holds nearly all free memory of the calling thread's current GPU, so that
// the GPU tests can make a device allocation of ringscope's fail for real
// (no injection hook in the product). Freed at scope end.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace ringscope::test {

class MemoryHog {
 public:
  // Leaves about `keep` bytes free.
  explicit MemoryHog(size_t keep) {
    size_t free = 0, total = 0;
    cudaMemGetInfo(&free, &total);
    for (size_t chunk = size_t{1} << 30; chunk >= (size_t{1} << 20); chunk /= 2)
      while (free > keep + chunk) {
        void* p = nullptr;
        if (cudaMalloc(&p, chunk) != cudaSuccess) {
          cudaGetLastError();  // not sticky: clear it
          break;
        }
        blocks_.push_back(p);
        cudaMemGetInfo(&free, &total);
      }
  }
  ~MemoryHog() {
    for (void* p : blocks_) cudaFree(p);
  }
  MemoryHog(const MemoryHog&) = delete;
  MemoryHog& operator=(const MemoryHog&) = delete;

 private:
  std::vector<void*> blocks_;
};

}  // namespace ringscope::test
